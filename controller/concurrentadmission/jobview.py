"""Which Workload a concurrent-admission parent's Job follows.

The parent never holds quota; the option that does (the *holder*, see :func:`.plan.holder_of`)
carries the admission the Job must run with. The Job integration therefore drives the Job from
the holder — start with its flavors, stop when it is evicted, release its quota once the pods are
gone — and from the parent itself while no option holds quota (the Job then stays suspended).
Migration shows up as a holder whose flavors differ from the ones the running Job was started
with; the Job integration stops the Job and starts it again on the new holder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.concurrentadmission.option_workloads import is_parent
from controller.concurrentadmission.parent_plan import holder_of

__all__ = ["followed_workload", "is_parent"]


def followed_workload(parent: dict[str, Any], options: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The holder option, or ``parent`` when no option holds quota."""
    holder = holder_of(options)
    return dict(holder) if holder is not None else parent
