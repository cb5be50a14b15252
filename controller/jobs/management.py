"""Which Jobs pykueue manages, and in which LocalQueue each one queues.

Kueue's rules for batch/v1 Jobs (Kueue's ``pkg/controller/jobframework``: ``reconciler.go`` and
``webhook.go``):

- a Job whose controller owner is itself a managed job kind is left alone — its parent is the
  one that queues, and managing both would count the same pods twice;
- a Job with the ``kueue.x-k8s.io/queue-name`` label is managed, in that queue;
- otherwise, only in namespaces matching ``managedJobsNamespaceSelector``: a LocalQueue named
  ``default`` in the namespace adopts the Job (the webhook normally writes the label; the
  controller accepts a Job the webhook did not default, e.g. created before the queue), else
  ``manageJobsWithoutQueueName`` manages it without a queue (its Workload stays pending);
- anything else is not managed and never touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.engine.parse import parse_label_selector
from pykueue.api.constants import DEFAULT_LOCAL_QUEUE, QUEUE_NAME_LABEL
from pykueue.api.labelselectors import LabelSelector, matches_compiled

from . import job as jobs

# Owner kinds that are themselves queued by pykueue (apiVersion group, kind).
MANAGED_OWNER_KINDS = frozenset({(jobs.JOB_GROUP, jobs.JOB_KIND)})


@dataclass(frozen=True, slots=True)
class ManagementPolicy:
    """The Configuration fields that decide management. ``namespace_selector=None`` matches all."""

    manage_jobs_without_queue_name: bool = False
    namespace_selector: LabelSelector | None = None

    @classmethod
    def from_raw(
        cls, manage_without_queue_name: bool, selector: Mapping[str, Any] | None
    ) -> ManagementPolicy:
        parsed = (
            parse_label_selector(selector, "managedJobsNamespaceSelector") if selector is not None else None
        )
        return cls(bool(manage_without_queue_name), parsed)

    def namespace_matches(self, namespace_labels: Mapping[str, str]) -> bool:
        # No selector configured means no namespace restriction (Kueue always defaults the field,
        # so it never sees a nil one); a selector that is set keeps metav1's meaning.
        if self.namespace_selector is None:
            return True
        return matches_compiled(self.namespace_selector, namespace_labels)


def owner_is_managed_job(job: dict[str, Any]) -> bool:
    owner = jobs.controller_owner(job)
    if owner is None:
        return False
    group = str(owner.get("apiVersion") or "").rpartition("/")[0]
    return (group, owner.get("kind")) in MANAGED_OWNER_KINDS


def queue_name_for(
    job: dict[str, Any],
    policy: ManagementPolicy,
    *,
    namespace_labels: Mapping[str, str],
    default_queue_exists: bool,
) -> str | None:
    """The Job's LocalQueue name; ``""`` when managed without a queue; ``None`` when not managed."""
    if owner_is_managed_job(job):
        return None
    label = jobs.labels(job).get(QUEUE_NAME_LABEL)
    if label:
        return label
    if not policy.namespace_matches(namespace_labels):
        return None
    if default_queue_exists:
        return DEFAULT_LOCAL_QUEUE
    if policy.manage_jobs_without_queue_name:
        return ""
    return None
