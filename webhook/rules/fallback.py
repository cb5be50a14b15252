"""ClusterQueue ``spec.flavorFungibility.fallbackStrategy`` rules.

A rule maps a flavor (or ``*``, every flavor) and a trigger to what ends that flavor's attempt:

* ``TimeoutForPodsReadyExceeded`` needs a positive timeout, given as exactly one of ``timeout`` (a
  duration such as ``"10m"``) or ``timeoutMinutes`` (an integer) — two spellings of one value must
  never disagree;
* ``AdmissionCheckRejected`` fires on a rejection, so a timeout on it would be silently ignored and
  is refused instead.

At most one rule per (flavor, trigger): with two, which timeout applies would depend on list order.

A ClusterQueue may not have both ``spec.concurrentAdmission`` (or Kueue's
``spec.concurrentAdmissionPolicy``, its v1beta2 spelling) and a fallback strategy: concurrent
admission already tries every flavor at once through option workloads and migrates between them,
so "exclude the flavor that failed and try the next" has no single attempt to apply to. Refusing
the combination is the one defined behaviour (docs/design/fallbacks.md).
"""

from __future__ import annotations

from typing import Any

from pykueue.api import constants as c
from pykueue.api.durations import parse_duration
from pykueue.api.validation import FieldError, join_path
from webhook.rules.common import as_dict, enumerate_dicts
from webhook.rules.quota import flavor_names

ANY_FLAVOR = "*"
FAILURE_POLICIES = (c.FALLBACK_DEACTIVATE, c.FALLBACK_RETRY_ALL)
TRIGGERS = (c.TRIGGER_PODS_READY_TIMEOUT, c.TRIGGER_ADMISSION_CHECK_REJECTED)


def fallback_strategy_errors(spec: dict[str, Any]) -> list[FieldError]:
    strategy = as_dict(spec.get("flavorFungibility")).get("fallbackStrategy")
    if strategy is None:
        return []
    path = "spec.flavorFungibility.fallbackStrategy"
    strategy = as_dict(strategy)
    errors: list[FieldError] = []
    for concurrent in ("concurrentAdmission", "concurrentAdmissionPolicy"):  # the latter: Kueue's, v1beta2
        if spec.get(concurrent) is not None:
            errors.append(
                FieldError.forbidden(
                    path,
                    f"may not be set together with spec.{concurrent}: concurrent admission tries "
                    "every flavor at once through options, so there is no single attempt to fall back from",
                )
            )
    policy = strategy.get("failurePolicy")
    if policy is not None and policy not in FAILURE_POLICIES:
        errors.append(FieldError.not_supported(join_path(path, "failurePolicy"), policy, FAILURE_POLICIES))
    allowed_names = [*flavor_names(spec.get("resourceGroups")), ANY_FLAVOR]
    seen: set[tuple[str, str]] = set()
    for index, rule in enumerate_dicts(strategy.get("rules")):
        rule_path = join_path(join_path(path, "rules"), index)
        name, trigger = rule.get("name"), rule.get("trigger")
        if not name:
            errors.append(FieldError.required(join_path(rule_path, "name")))
        elif name not in allowed_names:
            errors.append(FieldError.not_supported(join_path(rule_path, "name"), name, allowed_names))
        if trigger is None:
            errors.append(FieldError.required(join_path(rule_path, "trigger")))
        elif trigger not in TRIGGERS:
            errors.append(FieldError.not_supported(join_path(rule_path, "trigger"), trigger, TRIGGERS))
        if isinstance(name, str) and isinstance(trigger, str):
            if (name, trigger) in seen:
                errors.append(
                    FieldError(rule_path, f'Duplicate value: a rule for name "{name}" and trigger "{trigger}" already exists')
                )
            seen.add((name, trigger))
        errors += _timeout_errors(rule_path, rule, trigger)
    return errors


def _timeout_errors(rule_path: str, rule: dict[str, Any], trigger: Any) -> list[FieldError]:
    timeout, minutes = rule.get("timeout"), rule.get("timeoutMinutes")
    errors: list[FieldError] = []
    if timeout is not None and minutes is not None:
        return [FieldError.forbidden(join_path(rule_path, "timeoutMinutes"), "timeout and timeoutMinutes are mutually exclusive")]
    if trigger == c.TRIGGER_ADMISSION_CHECK_REJECTED:
        for key, value in (("timeout", timeout), ("timeoutMinutes", minutes)):
            if value is not None:
                errors.append(FieldError.forbidden(join_path(rule_path, key), f"a timeout does not apply to trigger {trigger}"))
        return errors
    if trigger == c.TRIGGER_PODS_READY_TIMEOUT and timeout is None and minutes is None:
        return [FieldError.required(join_path(rule_path, "timeout"), f"one of timeout or timeoutMinutes is required for trigger {trigger}")]
    if timeout is not None:
        try:
            seconds = parse_duration(timeout)
        except ValueError:
            return [FieldError.invalid(join_path(rule_path, "timeout"), timeout, 'must be a duration such as "10m" or "1h30m"')]
        if seconds <= 0:
            errors.append(FieldError.invalid(join_path(rule_path, "timeout"), timeout, "must be greater than 0"))
    if minutes is not None and (not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0):
        errors.append(FieldError.invalid(join_path(rule_path, "timeoutMinutes"), minutes, "must be greater than 0"))
    return errors
