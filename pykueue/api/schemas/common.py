"""Schema pieces shared by several kinds: names, quotas, conditions and embedded core types.

Embedded Kubernetes core types (Condition, LabelSelector, Taint, Toleration) are written out
field by field as upstream publishes them, so the apiserver validates them; the PodTemplateSpec
schema is generated from Kubernetes' OpenAPI (``hack/gen_podtemplate_schema.py``).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from pykueue.api.dsl import (
    DNS1123_LABEL,
    Rule,
    Schema,
    array,
    integer,
    map_of,
    name_ref,
    obj,
    quantity,
    string,
    timestamp,
)

# --- names ---------------------------------------------------------------------------------------


def flavor_ref(description: str) -> Schema:
    return name_ref(description)


def cluster_queue_ref(description: str) -> Schema:
    return name_ref(description)


def cohort_ref(description: str) -> Schema:
    return name_ref(description)


def local_queue_name(description: str) -> Schema:
    return name_ref(description)


def podset_ref(description: str, *, default: str | None = None) -> Schema:
    return name_ref(description, max_length=63, pattern=DNS1123_LABEL, default=default)


def admission_check_ref(description: str) -> Schema:
    return string(description, max_length=316)


def resource_name(description: str) -> Schema:
    return string(description)


# --- quantities ----------------------------------------------------------------------------------


def non_negative_quantity(description: str) -> Schema:
    """A quantity that must not be negative. Kueue's CRDs carry the plain quantity schema (a
    leading ``-`` matches the pattern); its webhook, like pykueue's (``webhook/rules/quota.py``),
    rejects negative amounts, so the CRD accepts exactly what Kueue's CRD accepts."""
    return quantity(description)


def resource_list(description: str) -> Schema:
    return map_of(description, quantity("Amount of the resource named by the key."))


# --- conditions ----------------------------------------------------------------------------------

CONDITION = obj(
    "Condition contains details for one aspect of the current state of this object.",
    {
        "type": string(
            "Type of condition in CamelCase, e.g. Active, QuotaReserved, Admitted.",
            max_length=316,
            pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        ),
        "status": string("Status of the condition.", enum=["True", "False", "Unknown"]),
        "observedGeneration": integer(
            "The .metadata.generation that the condition was set based upon; a condition whose "
            "observedGeneration is older than the object's generation is out of date.",
            minimum=0,
            fmt="int64",
        ),
        "lastTransitionTime": timestamp("Last time the condition transitioned from one status to another."),
        "reason": string(
            "Programmatic identifier of the reason for the condition's last transition, in CamelCase.",
            min_length=1,
            max_length=1024,
            pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        ),
        "message": string("Human readable message with details about the transition.", max_length=32768),
    },
    required=["type", "status", "lastTransitionTime", "reason", "message"],
)


def conditions(description: str) -> Schema:
    return array(description, CONDITION, list_type="map", map_keys=["type"])


# --- selectors, taints and tolerations ------------------------------------------------------------

LABEL_SELECTOR = obj(
    "A label query over a set of resources. An empty selector matches everything; a null one "
    "matches nothing.",
    {
        "matchLabels": map_of(
            "A map of {key,value} pairs; each is equivalent to a matchExpressions element whose "
            "operator is In with a single value.",
            string("Label value to match."),
        ),
        "matchExpressions": array(
            "A list of label selector requirements; they are ANDed.",
            obj(
                "A selector requirement: a key, an operator and values.",
                {
                    "key": string("The label key that the selector applies to."),
                    "operator": string(
                        "Relationship of the key to the values: In, NotIn, Exists or DoesNotExist "
                        "(checked by the webhook, as in Kueue).",
                    ),
                    "values": array(
                        "Values for In and NotIn (non-empty); must be empty for Exists and DoesNotExist.",
                        string("A label value."),
                        list_type="atomic",
                    ),
                },
                required=["key", "operator"],
            ),
            list_type="atomic",
        ),
    },
    map_type="atomic",
)

TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]

TAINT = obj(
    "A node taint the flavor's nodes carry; pods must tolerate it to run there.",
    {
        "key": string("The taint key to be applied to a node."),
        "value": string("The taint value corresponding to the taint key."),
        "effect": string("The effect of the taint on pods that do not tolerate it."),
        "timeAdded": timestamp("The time at which the taint was added (only for NoExecute taints)."),
    },
    required=["key", "effect"],
)


# Kueue's CRDs check taints and tolerations on the list (``self.all(x, ...)``), not per item; the
# same rule texts are used here so the apiserver reports the same messages. Each has a Python twin
# receiving the whole list.


def _all(check: Callable[[dict[str, Any]], bool]) -> Callable[[Any], bool]:
    return lambda items: all(check(item) for item in items if isinstance(item, dict))


TAINT_RULES = [
    Rule(
        "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        check=_all(lambda t: t.get("effect") in TAINT_EFFECTS),
    )
]

TOLERATION_RULES = [
    Rule(
        "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        check=_all(lambda t: "key" in t or t.get("operator") == "Exists"),
    ),
    Rule(
        "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
        "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        check=_all(lambda t: "tolerationSeconds" not in t or t.get("effect") == "NoExecute"),
    ),
    Rule(
        "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
        "supported toleration values: 'Equal'(default), 'Exists'",
        check=_all(lambda t: "operator" not in t or t["operator"] in ("Equal", "Exists")),
    ),
    Rule(
        "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
        "a value must be empty when 'operator' is 'Exists'",
        check=_all(lambda t: t.get("operator") != "Exists" or "value" not in t),
    ),
    Rule(
        "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        check=_all(lambda t: "effect" not in t or t["effect"] in TAINT_EFFECTS),
    ),
]

TOLERATION = obj(
    "A toleration injected into the pods that use this flavor (or admission check update).",
    {
        "key": string("The taint key that the toleration applies to; empty matches all taint keys."),
        "operator": string("Exists or Equal (default); Exists matches any value of the key."),
        "value": string("The taint value the toleration matches (empty with Exists)."),
        "effect": string("The taint effect to match; empty matches all effects."),
        "tolerationSeconds": integer(
            "How long a NoExecute taint is tolerated before eviction; unset means forever.", fmt="int64"
        ),
    },
)


def taints(description: str, max_items: int = 8) -> Schema:
    return array(description, TAINT, max_items=max_items, list_type="atomic", rules=TAINT_RULES)


def tolerations(description: str, max_items: int = 8, list_type: str | None = "atomic") -> Schema:
    return array(description, TOLERATION, max_items=max_items, list_type=list_type, rules=TOLERATION_RULES)


# --- pod templates -------------------------------------------------------------------------------


_POD_TEMPLATE_FILE = Path(__file__).with_name("podtemplate.json")


@functools.cache
def _generated_pod_template() -> Schema:
    document: dict[str, Any] = json.loads(_POD_TEMPLATE_FILE.read_text())
    return cast(Schema, document["schema"])


def pod_template(description: str) -> Schema:
    """A core/v1 PodTemplateSpec as Kueue's Workload CRD carries it: the full structural schema,
    generated from the pinned Kubernetes version's OpenAPI by ``hack/gen_podtemplate_schema.py``
    into ``podtemplate.json`` (docs/design/api.md). A fresh copy each call."""
    schema = copy.deepcopy(_generated_pod_template())
    schema["description"] = description
    return schema


# --- fair sharing -------------------------------------------------------------------------------

FAIR_SHARING = obj(
    "Fair sharing settings; only used when fair sharing is enabled in the configuration.",
    {
        "weight": non_negative_quantity(
            "The share of unused resources this object gets relative to its siblings; 0 means an "
            "infinite share (it is always preempted first). Defaults to 1.",
        )
        | {"default": 1},
    },
)

FAIR_SHARING_STATUS = obj(
    "The fair sharing state of this object.",
    {
        "weightedShare": integer(
            "The maximum of the ratios of usage above nominal quota to the lendable resources in the "
            "cohort, over all resources, divided by the weight; 0 when not borrowing.",
            fmt="int64",
        ),
        "admissionFairSharingStatus": obj(
            "Admission fair sharing usage (v1beta1 shares this type with LocalQueue).",
            {
                "consumedResources": resource_list("Aggregated, decayed resource usage."),
                "lastUpdate": timestamp("When consumedResources was last updated."),
            },
            required=["consumedResources", "lastUpdate"],
        ),
    },
    required=["weightedShare"],
)

STOP_POLICY = string(
    "Whether the queue is held: None (default) admits normally; Hold stops new admissions and lets "
    "admitted workloads finish; HoldAndDrain also evicts admitted workloads.",
    enum=["None", "Hold", "HoldAndDrain"],
    default="None",
)
