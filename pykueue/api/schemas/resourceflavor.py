"""ResourceFlavor (cluster-scoped): a kind of node, described by labels, taints and tolerations."""

from __future__ import annotations

from pykueue.api.dsl import Rule, map_of, name_ref, obj, string
from pykueue.api.kindinfo import KindInfo
from pykueue.api.schemas.common import taints, tolerations

SPEC = obj(
    "The node labels, taints and tolerations that describe this flavor.",
    {
        "nodeLabels": map_of(
            "Labels of the nodes of this flavor. They are added to the node selector of admitted "
            "pods, and a workload whose pods select other values for these keys cannot use the flavor.",
            string("Label value."),
            max_properties=8,
        )
        | {"x-kubernetes-map-type": "atomic"},
        "nodeTaints": taints(
            "Taints of the nodes of this flavor. A workload must tolerate every NoSchedule and "
            "NoExecute taint (unless the flavor tolerates it itself) to be assigned the flavor.",
        ),
        "tolerations": tolerations(
            "Tolerations added to the pods admitted with this flavor, so they can run on its tainted nodes."
        ),
        "topologyName": name_ref(
            "Name of the Topology for topology-aware scheduling on this flavor. Needs nodeLabels; "
            "immutable once set."
        ),
    },
    rules=[
        Rule(
            cel="!has(self.topologyName) || self.nodeLabels.size() >= 1",
            message="at least one nodeLabel is required when topology is set",
            check=lambda spec: "topologyName" not in spec or bool(spec.get("nodeLabels")),
        ),
        Rule(
            cel="!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels) && "
            "(!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))",
            message="nodeLabels are immutable when topologyName is set",
        ),
        Rule(
            cel="!has(oldSelf.topologyName) || (has(self.tolerations) == has(oldSelf.tolerations) && "
            "(!has(self.tolerations) || self.tolerations == oldSelf.tolerations))",
            message="tolerations are immutable when topologyName is set",
        ),
        Rule(
            cel="!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",
            message="topologyName is immutable when topologyName is set",
        ),
    ],
)

KIND = KindInfo(
    kind="ResourceFlavor",
    plural="resourceflavors",
    description="ResourceFlavor is the Schema for the resourceflavors API: a kind of node that "
    "ClusterQueues give quota for.",
    properties={"spec": SPEC},
    short_names=("flavor", "flavors", "rf"),
)
