"""The winner of a parent's race, decided once, in the API.

Options race: each reserves quota and runs its checks, and the first one ``Admitted`` wins
(docs/design/concurrent-admission.md). Two options whose checks turn ``Ready`` together are
admitted by different workers (the workload controller's), or one by the workload controller and
one by the scheduler (an option without checks is admitted with its reservation). Each reads
its sibling from a cache that may not show the other's admission yet, so "the first" needs a
single place where the decision is made: the parent.

Before an option is marked ``Admitted`` its writer **claims** the parent: it sets
:data:`~pykueue.api.constants.OPTION_WINNER_ANNOTATION` to the option's name with a merge patch
guarded by the parent's ``resourceVersion``. The apiserver accepts one write per
resourceVersion, so of two claims made from the same parent the second gets 409, reads the
parent again and finds the first claim. A claim is granted when the annotation is absent, names
this option, or names a sibling that holds no quota any more (read with a GET, not from the
cache: a cached "released" could be older than the claim). Every admission writes the claim,
even one naming itself, so a sibling's claim decided on an older parent always conflicts.

The annotation is never cleared: it names the last option admitted, and a later claim replaces
it once that option gave its quota back (the winner was preempted, a migration released it, the
parent was reactivated).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from controller.concurrentadmission.option_workloads import is_option, parent_name, parent_uid
from controller.workload import view as wv
from pykueue.api import constants as c
from pykueue.api.objects import mapping_or_empty
from pykueue.kube.errors import Conflict, NotFound
from pykueue.kube.resources import WORKLOADS, Resource

log = logging.getLogger(__name__)

# Claims tried against a fresh parent after a conflict (other writers touch the parent too:
# the option controller's status, the Job integration), before the caller retries the key.
CLAIM_ATTEMPTS = 4

Obj = Mapping[str, Any]


class ClaimClient(Protocol):
    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...

    def patch(
        self, res: Resource, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> dict[str, Any]: ...


def claimed_by(parent: Obj) -> str | None:
    """The option named by the parent's winner annotation, if any."""
    annotations = mapping_or_empty(mapping_or_empty(parent.get("metadata")).get("annotations"))
    value = annotations.get(c.OPTION_WINNER_ANNOTATION)
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class ClaimDecision:
    """``patch`` to write when the claim is granted; else ``holder``, the sibling that won."""

    patch: dict[str, Any] | None
    holder: str | None = None


def decide_claim(parent: Obj, option: Obj, holder: Obj | None) -> ClaimDecision:
    """Whether ``option`` may claim ``parent``. ``holder`` is the sibling the annotation names
    (as the API has it now), or None when the annotation is empty, names ``option``, or the
    sibling is gone. Pure."""
    me = wv.name(option)
    named = claimed_by(parent)
    if named is not None and named != me and holder is not None and wv.has_reservation(holder):
        return ClaimDecision(None, named)
    patch = {
        "metadata": {
            "resourceVersion": wv.meta(parent).get("resourceVersion"),
            "annotations": {c.OPTION_WINNER_ANNOTATION: me},
        }
    }
    return ClaimDecision(patch)


class WinnerClaims:
    """Claims a parent for one of its options (see the module docstring). ``cached_parent``
    reads the informer cache; a conflict falls back to GETs."""

    def __init__(self, client: ClaimClient, cached_parent: Callable[[str], Obj | None]) -> None:
        self._client = client
        self._cached = cached_parent

    def claim(self, option: Obj) -> str | None:
        """Claim ``option``'s parent. None when granted (the option may be marked Admitted);
        else why not: the sibling that holds the claim, or that the parent is gone. Raises
        :class:`Conflict` when the parent kept changing (the caller retries later)."""
        if not is_option(option):
            return None
        namespace, name, uid = wv.namespace(option), parent_name(option), parent_uid(option)
        if name is None:
            return "the option has no parent"
        parent: Obj | None = self._cached(f"{namespace}/{name}")
        for _attempt in range(CLAIM_ATTEMPTS):
            if parent is None or (uid and wv.meta(parent).get("uid") != uid):
                parent = self._client.get(WORKLOADS, name, namespace)
                if parent is None or (uid and wv.meta(parent).get("uid") != uid):
                    return f"its parent {name} is gone"
            named = claimed_by(parent)
            holder = None
            if named is not None and named != wv.name(option):
                holder = self._client.get(WORKLOADS, named, namespace)
            decision = decide_claim(parent, option, holder)
            if decision.patch is None:
                log.info(
                    "option not admitted: a sibling won",
                    extra={"option": wv.key(option), "winner": decision.holder},
                )
                return f"option {decision.holder} of the same parent was admitted first"
            try:
                self._client.patch(WORKLOADS, name, decision.patch, namespace)
            except NotFound:
                return f"its parent {name} is gone"
            except Conflict:
                parent = None  # read it again from the API
                continue
            return None
        raise Conflict(409, "Conflict", f"parent {namespace}/{name} kept changing while {wv.name(option)} claimed it")
