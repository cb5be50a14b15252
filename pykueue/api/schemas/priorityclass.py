"""WorkloadPriorityClass (cluster-scoped): a named priority for workloads, apart from pod priority."""

from __future__ import annotations

from pykueue.api.dsl import integer, string
from pykueue.api.kindinfo import KindInfo, PrinterColumn

KIND = KindInfo(
    kind="WorkloadPriorityClass",
    plural="workloadpriorityclasses",
    description="WorkloadPriorityClass is the Schema for the workloadPriorityClass API: jobs labelled "
    "kueue.x-k8s.io/priority-class get this priority for queueing and preemption.",
    properties={
        "value": integer(
            "The priority given to workloads of this class; higher is more important. Changing it "
            "updates the priority of existing workloads of the class."
        ),
        "description": string("What the class is for."),
    },
    required=("value",),
    short_names=("wpc",),
    printer_columns=(PrinterColumn("Value", ".value", type="integer", description="Value of workloadPriorityClass's Priority"),),
)
