"""Which Workload a concurrent-admission parent's Job follows.

The parent never holds quota of its own; the option that won the race (the *winner*, see
:func:`.parent_plan.winner_of`: the first option to become Admitted, while it holds quota)
carries the admission the Job must run with. The Job integration therefore drives the Job from
the winner — start with its flavors, stop when it is evicted, release its quota once the pods are
gone — and from the parent itself while no option is admitted (the Job then stays suspended).
The parent's own ``status.admission`` is only a mirror for users and is never driven from: a
stale mirror must not start the Job. Migration shows up as a winner whose flavors differ from the
ones the running Job was started with; the Job integration stops the Job and starts it again.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from controller.concurrentadmission.option_workloads import is_parent
from controller.concurrentadmission.parent_plan import winner_of
from pykueue.api import constants as c

__all__ = ["followed_workload", "is_parent"]


def followed_workload(parent: dict[str, Any], options: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The winner option, or ``parent`` without its mirrored admission when none is admitted."""
    winner = winner_of(options)
    if winner is not None:
        return dict(winner)
    status = parent.get("status")
    if not isinstance(status, Mapping) or not (
        status.get("admission") is not None
        or any(
            isinstance(cond, Mapping) and cond.get("type") in (c.COND_QUOTA_RESERVED, c.COND_ADMITTED)
            for cond in status.get("conditions") or []
        )
    ):
        return parent
    view = copy.deepcopy(parent)
    view["status"].pop("admission", None)
    view["status"]["conditions"] = [
        cond
        for cond in view["status"].get("conditions") or []
        if not (isinstance(cond, Mapping) and cond.get("type") in (c.COND_QUOTA_RESERVED, c.COND_ADMITTED))
    ]
    return view
