"""The webhook's endpoints: which path serves which kind, and the handler behind each.

The paths are :data:`webhook.registry.HOOKS` (the Helm chart's ``_webhooks.tpl`` and the
local-mode webhook configurations list the same ones): Kueue's, ``v1beta2`` for the Kueue kinds
(``/validate-kueue-x-k8s-io-v1beta2-clusterqueue``), plus the ``v1beta1`` paths of earlier
configurations (:data:`webhook.registry.LEGACY_KUEUE_PATHS`), served by the same handlers.

Every Kueue-kind handler takes the object in the version the request carries
(``request.kind.version``, ``v1beta1`` or ``v1beta2``) and converts nothing:

* validation is the CRD's structural schema *of that version* (``schema_errors(..., version=)``)
  followed by the kind's semantic rules, which read only fields both versions share or, where a
  version has its own (ClusterQueue ``cohort``/``cohortName``, ``concurrentAdmissionPolicy``),
  whichever is present; so a denial names each field as the user's version spells it
  (``spec.priorityClassRef`` in v1beta2, ``spec.priorityClassName`` in v1beta1). A denial lists
  every error as Kueue's webhooks word them (403, ``[spec.x: ..., spec.y: ...]``);
* defaulting is the resource-in-use finalizer, in ``metadata``, the same in both versions: the
  JSON patch is computed against the object as sent and holds that one operation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pykueue.api import constants as c
from pykueue.api.validation import FieldError, aggregate_message
from webhook.admission import AdmissionRequest, Verdict
from webhook.app import Endpoint
from webhook.cluster_state import ClusterState
from webhook.jobs import (
    JobPolicy,
    min_parallelism_errors,
    mutate_job_create,
    never_fits_warnings,
    validate_job_labels,
    validate_job_update,
)
from webhook.patch import PatchBuilder
from webhook.registry import HOOKS, LEGACY_KUEUE_PATHS, kueue_path
from webhook.rules.clusterqueue import validate_cluster_queue
from webhook.rules.cohort_flavor import validate_cohort, validate_resource_flavor
from webhook.rules.common import as_dict, as_list
from webhook.rules.workload import validate_workload


class SchemaCheck(Protocol):
    """``pykueue.api.validation.schema_errors`` with its options bound: errors of ``obj`` against
    the schema of ``kind`` in ``version``."""

    def __call__(self, kind: str, obj: Any, *, version: str | None = None) -> list[FieldError]: ...


Rule = Callable[[dict[str, Any], dict[str, Any] | None], list[FieldError]]

log = logging.getLogger("pykueue.webhook.handlers")

KUEUE_GROUP = c.GROUP


@dataclass(frozen=True)
class WebhookContext:
    """Everything the handlers need besides the request itself."""

    state: ClusterState
    job_policy: JobPolicy
    controller_username: str
    schema_errors: SchemaCheck
    add_finalizers: bool = True


JOB_MUTATE_PATH = "/mutate-batch-v1-job"
JOB_VALIDATE_PATH = "/validate-batch-v1-job"


def deny_field_errors(errors: list[FieldError]) -> Verdict:
    """Deny as Kueue's webhooks do: 403 Forbidden, the field errors as the message.

    Kueue's validators return ``field.ErrorList.ToAggregate()``, which is not an API status, so
    controller-runtime answers ``Denied(err.Error())``: ``allowed: false``, ``status.code`` 403,
    ``status.reason`` Forbidden (``pkg/webhook/admission/validator_custom.go`` and
    ``response.go``). The apiserver prefixes ``admission webhook "<name>" denied the request: ``
    and the client sees a 403. Repeats (a schema rule and its semantic twin) are dropped by
    :func:`aggregate_message`, as ``ToAggregate`` drops them.
    """
    return Verdict.deny(aggregate_message(errors))


def _kueue_validator(ctx: WebhookContext, kind: str, rule: Rule) -> Callable[[AdmissionRequest], Verdict]:
    def handle(review: AdmissionRequest) -> Verdict:
        if review.operation not in ("CREATE", "UPDATE") or review.obj is None:
            return Verdict()
        old = review.old_obj if review.operation == "UPDATE" else None
        # The app admits only the hook's versions at these paths; the object is checked as sent.
        errors = ctx.schema_errors(kind, review.obj, version=review.kind.version) + rule(review.obj, old)
        return deny_field_errors(errors) if errors else Verdict()

    return handle


def _finalizer_defaulter(ctx: WebhookContext) -> Callable[[AdmissionRequest], Verdict]:
    """Kueue's ClusterQueue/ResourceFlavor defaulting: the resource-in-use finalizer on create.

    The finalizer keeps a flavor or queue from vanishing while workloads still hold quota in it; the
    controller removes it once nothing uses the object. ``metadata`` is the same in every version,
    so the patch is the one operation against the object as sent, whichever version it is in.
    """

    def handle(review: AdmissionRequest) -> Verdict:
        if review.operation != "CREATE" or review.obj is None or not ctx.add_finalizers:
            return Verdict()
        finalizers = [f for f in as_list(as_dict(review.obj.get("metadata")).get("finalizers")) if isinstance(f, str)]
        if c.RESOURCE_IN_USE_FINALIZER in finalizers:
            return Verdict()
        builder = PatchBuilder(review.obj)
        builder.set(["metadata", "finalizers"], [*finalizers, c.RESOURCE_IN_USE_FINALIZER])
        return Verdict(patch=builder.operations)

    return handle


def _allow(review: AdmissionRequest) -> Verdict:
    """Workload defaulting: nothing to add beyond the CRD's own defaults (partial admission is on)."""
    return Verdict()


def _with_user(
    validator_factory: Callable[[str], Callable[[AdmissionRequest], Verdict]],
) -> Callable[[AdmissionRequest], Verdict]:
    """Workload rules also depend on who asks (controller-only modes): bind the username per request."""

    def handle(review: AdmissionRequest) -> Verdict:
        return validator_factory(review.user.username)(review)

    return handle


def _local_queue_rule(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        return []
    new_cq = as_dict(obj.get("spec")).get("clusterQueue")
    if new_cq != as_dict(old.get("spec")).get("clusterQueue"):
        return [FieldError.invalid("spec.clusterQueue", new_cq, "field is immutable")]
    return []


def _admission_check_rule(obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is None:
        return []
    new_name = as_dict(obj.get("spec")).get("controllerName")
    if new_name != as_dict(old.get("spec")).get("controllerName"):
        return [FieldError.invalid("spec.controllerName", new_name, "field is immutable")]
    return []


def _job_mutator(ctx: WebhookContext) -> Callable[[AdmissionRequest], Verdict]:
    def handle(review: AdmissionRequest) -> Verdict:
        if review.operation != "CREATE" or review.obj is None:
            return Verdict()
        decision = mutate_job_create(review.obj, review.namespace, ctx.state, ctx.job_policy)
        return Verdict(patch=decision.patch, warnings=decision.warnings)

    return handle


def _job_validator(ctx: WebhookContext) -> Callable[[AdmissionRequest], Verdict]:
    def handle(review: AdmissionRequest) -> Verdict:
        if review.obj is None:
            return Verdict()
        if review.operation == "CREATE":
            errors = validate_job_labels(review.obj) + min_parallelism_errors(review.obj)
            if errors:
                return deny_field_errors(errors)
            try:
                warnings = never_fits_warnings(review.obj, review.namespace, ctx.state)
            except Exception:  # a warning is advice: an unreadable queue must not block the job
                log.warning("could not check whether the job fits its ClusterQueue", exc_info=True,
                            extra={"uid": review.uid})
                warnings = []
            return Verdict(warnings=warnings)
        if review.operation == "UPDATE" and review.old_obj is not None:
            errors = validate_job_update(review.obj, review.old_obj, review.namespace, ctx.state)
            return deny_field_errors(errors) if errors else Verdict()
        return Verdict()

    return handle


def build_endpoints(ctx: WebhookContext) -> list[Endpoint]:
    """Every path of :data:`webhook.registry.HOOKS` with its handler, and the v1beta1 paths of
    earlier configurations (:data:`webhook.registry.LEGACY_KUEUE_PATHS`) with the same handlers."""
    defaulter = _finalizer_defaulter(ctx)
    workload_validator = _with_user(
        lambda username: _kueue_validator(
            ctx, "Workload",
            lambda obj, old: validate_workload(obj, old, username=username, controller_username=ctx.controller_username),
        ),
    )
    handlers: dict[str, Callable[[AdmissionRequest], Verdict]] = {
        JOB_MUTATE_PATH: _job_mutator(ctx),
        JOB_VALIDATE_PATH: _job_validator(ctx),
        kueue_path("mutate", "ClusterQueue"): defaulter,
        kueue_path("mutate", "ResourceFlavor"): defaulter,
        kueue_path("mutate", "Workload"): _allow,
        kueue_path("validate", "Workload"): workload_validator,
        kueue_path("validate", "ClusterQueue"): _kueue_validator(ctx, "ClusterQueue", validate_cluster_queue),
        kueue_path("validate", "Cohort"): _kueue_validator(ctx, "Cohort", validate_cohort),
        kueue_path("validate", "ResourceFlavor"): _kueue_validator(ctx, "ResourceFlavor", validate_resource_flavor),
        kueue_path("validate", "LocalQueue"): _kueue_validator(ctx, "LocalQueue", _local_queue_rule),
        kueue_path("validate", "AdmissionCheck"): _kueue_validator(ctx, "AdmissionCheck", _admission_check_rule),
    }
    served = [(hook.path, hook) for hook in HOOKS] + list(LEGACY_KUEUE_PATHS)
    return [
        Endpoint(path, hook.group, hook.kind, hook.mutating, handlers[hook.path], versions=hook.versions)
        for path, hook in served
    ]
