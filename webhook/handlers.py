"""The webhook's endpoints: which path serves which kind, and the handler behind each.

This is the single registry of paths (the Helm chart's ``_webhooks.tpl`` and the local-mode webhook
configurations list the same ones). Kueue's paths are kept with the version pykueue serves
(``/validate-kueue-x-k8s-io-v1beta1-clusterqueue``), so the layout is familiar to Kueue users.

Validation of a pykueue kind is the CRD's structural schema (``schema_errors``) followed by the
kind's semantic rules; a denial lists every error in the apiserver's own format
(``ClusterQueue.kueue.x-k8s.io "cq" is invalid: [spec.x: ..., spec.y: ...]``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
from webhook.registry import HOOKS
from webhook.rules.clusterqueue import validate_cluster_queue
from webhook.rules.cohort_flavor import validate_cohort, validate_resource_flavor
from webhook.rules.common import as_dict, as_list
from webhook.rules.workload import validate_workload

SchemaCheck = Callable[[str, dict[str, Any]], list[FieldError]]
Rule = Callable[[dict[str, Any], dict[str, Any] | None], list[FieldError]]

log = logging.getLogger("pykueue.webhook.handlers")

KUEUE_GROUP = c.GROUP
KUEUE_PATH_GROUP = KUEUE_GROUP.replace(".", "-")


@dataclass(frozen=True)
class WebhookContext:
    """Everything the handlers need besides the request itself."""

    state: ClusterState
    job_policy: JobPolicy
    controller_username: str
    schema_errors: SchemaCheck
    add_finalizers: bool = True


def kueue_path(verb: str, kind: str) -> str:
    return f"/{verb}-{KUEUE_PATH_GROUP}-{c.VERSION}-{kind.lower()}"


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
        errors = ctx.schema_errors(kind, review.obj) + rule(review.obj, old)
        return deny_field_errors(errors) if errors else Verdict()

    return handle


def _finalizer_defaulter(ctx: WebhookContext) -> Callable[[AdmissionRequest], Verdict]:
    """Kueue's ClusterQueue/ResourceFlavor defaulting: the resource-in-use finalizer on create.

    The finalizer keeps a flavor or queue from vanishing while workloads still hold quota in it; the
    controller removes it once nothing uses the object.
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
    """Every path of :data:`webhook.registry.HOOKS`, with its handler."""
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
    return [Endpoint(hook.path, hook.group, hook.kind, hook.mutating, handlers[hook.path]) for hook in HOOKS]
