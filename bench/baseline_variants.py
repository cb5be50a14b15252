"""Which controllers a baseline run compares, and in which order the runs go.

A *variant* is a client rate limit (``kueue-qps``: QPS 50 / burst 100 as Kueue's run;
``unthrottled``), a controller Configuration and a source tree. ``fair-sharing`` is ``kueue-qps``
with ``fairSharing: {enable: true}`` and Kueue's default preemption strategies in the
Configuration the controller is started with (:func:`controller_configuration`), so the
baseline's shape can be measured with fair sharing on beside the classical order. ``floor`` is
no controller at all but :mod:`bench.floor_admitter`, which admits every workload as soon as it
is watched, unthrottled: the wall the cluster itself allows for the same requests. By default the controller is this checkout's. For A/B
comparisons ``--controller-src [LABEL=]DIR`` adds, for every chosen rate limit, a variant whose
controller comes from another checkout (typically ``git worktree add --detach DIR <commit>``);
it is named ``<rate limit>@<LABEL>`` (LABEL defaults to the tree's short commit, else the
directory name), so the printed blocks and the JSON summary tell the two apart.

``kueue@<version>`` (e.g. ``kueue@v0.14.8``) is Kueue's own manager at that release, run out of
cluster at Kueue's QPS with Kueue's CRDs in place for its runs (:mod:`bench.kueue_process`).
``kueue@<version>:<rate limit>`` runs it at the client rate of one of pykueue's rate-limit
variants instead (``kueue@v0.14.8:unthrottled``: QPS 100,000 / burst 200,000, the very limit
pykueue's ``unthrottled`` runs with, so the pair differs in the controller alone); the rate is
spelled by name rather than in figures so that the two sides cannot drift apart.

The machine is shared and noisy, so runs of different variants must not be grouped in time: a
drift (another job starting, the apiserver's etcd compacting) would then hit one variant only.
:func:`plan_runs` interleaves them — A, B, A, B, ... — round by round.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pykueue.api.config import DEFAULT_PREEMPTION_STRATEGIES
from pykueue.api.constants import CONFIG_API_VERSION

from .controller_process import check_source_tree

UNTHROTTLED_QPS = 100_000.0


@dataclass(frozen=True)
class Variant:
    """One controller configuration; ``source_tree`` None means this checkout."""

    name: str
    qps: float
    burst: int
    source_tree: Path | None = None
    kueue_version: str | None = None  # Kueue's manager at this release instead of pykueue's
    fair_sharing: bool = False  # pykueue's controller runs with fairSharing.enable
    floor: bool = False  # no controller: bench.floor_admitter admits everything at once


VARIANTS = {
    "kueue-qps": Variant("kueue-qps", 50.0, 100),
    "unthrottled": Variant("unthrottled", UNTHROTTLED_QPS, 200_000),
    "fair-sharing": Variant("fair-sharing", 50.0, 100, fair_sharing=True),
    "floor": Variant("floor", UNTHROTTLED_QPS, 200_000, floor=True),
}


def controller_configuration(variant: Variant) -> dict[str, Any] | None:
    """The Configuration document pykueue's controller is started with for ``variant`` (None:
    no ``--config``, Kueue's defaults). Only ``fairSharing`` is set: the client rate limit goes
    on the command line for every variant, and everything else keeps its default, so a
    fair-sharing run differs from a ``kueue-qps`` one in that section alone. The strategies are
    written out (Kueue's v1beta1 default, S2-a then S2-b) so the run's record names them."""
    if not variant.fair_sharing:
        return None
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "fairSharing": {"enable": True, "preemptionStrategies": list(DEFAULT_PREEMPTION_STRATEGIES)},
    }
KUEUE_PREFIX = "kueue@"
_KUEUE_VERSION = re.compile(r"^v\d+\.\d+\.\d+$")
# pykueue's variants that are a client rate limit and nothing else: the rates Kueue can run at.
KUEUE_RATE_LIMITS = ("kueue-qps", "unthrottled")


def kueue_variant(name: str, *, flag: str = "--variants") -> Variant | None:
    """``kueue@vX.Y.Z`` as a variant at Kueue's QPS, ``kueue@vX.Y.Z:<rate limit>`` at the QPS and
    burst of that pykueue variant (None for names that are not ``kueue@``); ValueError naming
    ``flag`` for a malformed version or an unknown rate limit."""
    if not name.startswith(KUEUE_PREFIX):
        return None
    version, sep, rate = name[len(KUEUE_PREFIX):].partition(":")
    if not _KUEUE_VERSION.match(version):
        raise ValueError(
            f"{flag} {name}: expected kueue@vMAJOR.MINOR.PATCH[:RATE], e.g. kueue@v0.14.8 or kueue@v0.14.8:unthrottled"
        )
    if sep and rate not in KUEUE_RATE_LIMITS:
        raise ValueError(
            f"{flag} {name}: unknown rate limit {rate!r} after ':' (known: {', '.join(KUEUE_RATE_LIMITS)})"
        )
    limit = VARIANTS[rate or "kueue-qps"]
    return Variant(name, limit.qps, limit.burst, kueue_version=version)


def path_safe(name: str) -> str:
    """``name`` with every character but letters, digits, '.' and '-' replaced by '-': variant
    names carry '@' and ':', and a Kueue run's work directory ends up in an overlay mount's
    options, where ':' and ',' separate layers."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", name)


# A controller this program did not start: its rate limit is whatever it was started with.
EXTERNAL = Variant("external-controller", 0.0, 0)


@dataclass(frozen=True)
class SourceTree:
    label: str
    path: Path


def _git(path: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe_tree(path: Path) -> dict[str, Any]:
    """Where a controller's code came from: the tree, its commit and whether it has local
    changes (None when it is not a git checkout), recorded with every run."""
    commit = _git(path, "rev-parse", "--short", "HEAD")
    dirty = None
    if commit is not None:
        status = _git(path, "status", "--porcelain", "--untracked-files=no", "--", "controller", "pykueue")
        dirty = bool(status) if status is not None else None
    return {"tree": str(path), "commit": commit, "dirty": dirty}


def parse_source_tree(spec: str) -> SourceTree:
    """``DIR`` or ``LABEL=DIR``; the label defaults to the tree's short commit, else its name.
    Raises ValueError naming the flag for a missing tree or an unusable label."""
    label, sep, directory = spec.partition("=")
    if not sep or "/" in label:
        label, directory = "", spec
    path = check_source_tree(Path(directory))
    if not label:
        label = _git(path, "rev-parse", "--short", "HEAD") or path.name
    if not label or any(ch in label for ch in " ,@"):
        raise ValueError(f"--controller-src {spec}: label {label!r} must be non-empty without spaces, ',' or '@'")
    return SourceTree(label, path)


def choose_variants(names: Sequence[str], trees: Sequence[SourceTree]) -> list[Variant]:
    """Every chosen rate limit with this checkout's controller, each followed by the same rate
    limit with every other source tree's. Raises ValueError for unknown names or repeated labels."""
    unknown = [name for name in names if name not in VARIANTS and not name.startswith(KUEUE_PREFIX)]
    if unknown or not names:
        raise ValueError(
            f"--variants: unknown {unknown} (known: {', '.join(VARIANTS)}, kueue@<version>[:<rate limit>])"
        )
    labels = [tree.label for tree in trees]
    if len(set(labels)) != len(labels):
        raise ValueError(f"--controller-src: labels must differ, got {labels}")
    chosen = []
    for name in dict.fromkeys(names):
        kueue = kueue_variant(name)
        if kueue is not None:
            chosen.append(kueue)  # another tree's controller does not apply to Kueue's
            continue
        base = VARIANTS[name]
        chosen.append(base)
        if base.floor:
            continue  # no controller's code runs in it
        chosen += [replace(base, name=f"{base.name}@{tree.label}", source_tree=tree.path) for tree in trees]
    return chosen


def plan_runs(variants: Sequence[Variant], repeat: int) -> list[tuple[Variant, int]]:
    """``repeat`` rounds, each running every variant once, in order: A, B, A, B, ...
    (the int is the run's index within its variant)."""
    return [(variant, index) for index in range(repeat) for variant in variants]
