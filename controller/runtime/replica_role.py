"""Kueue's ``replica_role`` metric label: which role the replica that serves a series plays.

Kueue v0.19 adds ``replica_role`` to every ``kueue_*`` series except ``kueue_build_info``
(``pkg/metrics/metrics.go``, its values from ``pkg/util/roletracker``): ``leader`` while the
replica holds the Lease, ``follower`` while it waits for it, ``standalone`` when leader election
is off.

pykueue adds it when ``/metrics`` is scraped rather than at each call site: :func:`exposition`
copies every ``kueue_*`` family of the registry with ``replica_role`` set to the role at that
moment, so no metric definition or ``labels(...)`` call changes, and a series recorded by a
former leader shows the role the replica has now (Kueue keeps the role it was recorded with until
the series is next written). pykueue's own ``pykueue_*`` series and the runtime's are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from prometheus_client import REGISTRY, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import CollectorRegistry

LABEL = "replica_role"
LEADER = "leader"
FOLLOWER = "follower"
STANDALONE = "standalone"
_PREFIX = "kueue_"
_UNLABELLED = frozenset({"kueue_build_info"})

Role = Callable[[], str]


def role_of(elected: bool, leading: Callable[[], bool]) -> Role:
    """The role function of a replica: standalone without leader election, else leader/follower."""
    if not elected:
        return lambda: STANDALONE
    return lambda: LEADER if leading() else FOLLOWER


def with_role(families: Iterable[Metric], role: str) -> Iterator[Metric]:
    """``families`` with ``replica_role`` added to every sample of the ``kueue_*`` ones."""
    for family in families:
        if not family.name.startswith(_PREFIX) or family.name in _UNLABELLED:
            yield family
            continue
        copy = Metric(family.name, family.documentation, family.type, family.unit)
        copy.samples = [sample._replace(labels={**sample.labels, LABEL: role}) for sample in family.samples]
        yield copy


class _Labelled:
    """A registry view whose ``collect()`` adds the label (what ``generate_latest`` reads)."""

    def __init__(self, registry: CollectorRegistry, role: str) -> None:
        self._registry = registry
        self._role = role

    def collect(self) -> Iterator[Metric]:
        return with_role(self._registry.collect(), self._role)


def exposition(role: Role | None, registry: CollectorRegistry = REGISTRY) -> bytes:
    """The registry in the text format, with ``replica_role`` when ``role`` is given."""
    if role is None:
        return generate_latest(registry)
    return generate_latest(cast(Any, _Labelled(registry, role())))
