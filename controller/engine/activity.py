"""Whether a ClusterQueue can admit: Kueue's ``Active`` condition rule, in one place.

The engine uses it to stop scheduling into an inactive queue, and the queue-status controller
(``controller.core.queue_status``) writes it as the ClusterQueue's ``Active`` condition. Both call
:func:`cluster_queue_problems`, so the condition can never say ``Ready`` while the engine refuses
to admit (a MultiKueue misconfiguration, an invalid spec), nor the other way round (a terminating
queue).

Reasons come in Kueue's order; the first one is the condition's reason and the message lists all.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from pykueue.api import constants as c

from .records import ClusterQueueSpec

REASON_UNKNOWN = "Unknown"
MESSAGE_READY = "Can admit new workloads"

Problem = tuple[str, str]  # (reason, what is wrong, e.g. "is stopped")


def cluster_queue_problems(
    spec: ClusterQueueSpec,
    *,
    terminating: bool,
    flavors: Container[str],
    checks_active: Mapping[str, bool],
    check_controllers: Mapping[str, str],
    in_cohort_cycle: bool = False,
) -> list[Problem]:
    """Everything that keeps ``spec`` from admitting; empty when it is active.

    ``flavors``: the ResourceFlavors that exist. ``checks_active``: every existing AdmissionCheck
    and whether its ``Active`` condition is True (a check absent from it does not exist).
    ``check_controllers``: each AdmissionCheck's ``spec.controllerName``.
    """
    problems: list[Problem] = []
    if terminating:
        problems.append((c.REASON_TERMINATING, "is terminating"))
    if spec.stop_policy != c.STOP_POLICY_NONE:
        problems.append((c.REASON_CQ_STOPPED, "is stopped"))
    missing_flavors = [f for f in spec.flavor_names if f not in flavors]
    if missing_flavors:
        problems.append((c.REASON_FLAVOR_NOT_FOUND, f"references missing ResourceFlavor(s): {_names(missing_flavors)}"))
    check_names = list(dict.fromkeys(rule.name for rule in spec.checks))
    missing_checks = [n for n in check_names if n not in checks_active]
    if missing_checks:
        problems.append(
            (c.REASON_ADMISSION_CHECK_NOT_FOUND, f"references missing AdmissionCheck(s): {_names(missing_checks)}")
        )
    inactive_checks = [n for n in check_names if n in checks_active and not checks_active[n]]
    if inactive_checks:
        problems.append(
            (c.REASON_ADMISSION_CHECK_INACTIVE, f"references inactive AdmissionCheck(s): {_names(inactive_checks)}")
        )
    problems += _multikueue_problems(spec, check_controllers)
    if in_cohort_cycle:
        problems.append((REASON_UNKNOWN, "its cohort tree has a cycle"))
    if spec.errors:
        problems.append((REASON_UNKNOWN, "invalid spec: " + "; ".join(spec.errors)))
    return problems


def inactive_reason(problems: list[Problem]) -> tuple[str, str] | None:
    """``(reason, message)`` of ``Active=False``, or None when there is no problem."""
    if not problems:
        return None
    return problems[0][0], "Can't admit new workloads: " + "; ".join(text for _, text in problems) + "."


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _multikueue_problems(spec: ClusterQueueSpec, check_controllers: Mapping[str, str]) -> list[Problem]:
    """Kueue's MultiKueue restrictions on a ClusterQueue's admission checks."""
    multikueue = [r for r in spec.checks if check_controllers.get(r.name) == c.MULTIKUEUE_CONTROLLER]
    if not multikueue:
        return []
    problems = []
    if len({r.name for r in multikueue}) > 1:
        problems.append(
            (c.REASON_MULTIPLE_MULTIKUEUE_CHECKS, "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue")
        )
    # Kueue compares the check's flavors with the queue's for equality (``updateWithAdmissionChecks``
    # in ``pkg/cache/scheduler/clusterqueue.go``): an onFlavors list that also names a flavor the
    # queue does not have is per-flavor too, even though that flavor never applies.
    flavors = set(spec.flavor_names)
    per_flavor = [r.name for r in multikueue if r.on_flavors and r.on_flavors != flavors]
    if per_flavor:
        problems.append(
            (
                c.REASON_MULTIKUEUE_CHECK_PER_FLAVOR,
                f"Cannot specify MultiKueue AdmissionCheck per flavor, used by: {_names(per_flavor)}",
            )
        )
    if any(check_controllers.get(r.name) == c.PROVISIONING_REQUEST_CONTROLLER for r in spec.checks):
        problems.append(
            (
                c.REASON_MULTIKUEUE_WITH_PROVISIONING,
                "Cannot use a MultiKueue AdmissionCheck together with a ProvisioningRequest AdmissionCheck",
            )
        )
    return problems
