"""The name of a job's Workload, computed exactly as Kueue computes it.

Kueue names the Workload ``<lowercase kind>-<job name>-<5 hex chars>``, the hash being SHA-1
over the kind, group, job name and job UID separated by newlines. Using the same function means
tooling written for Kueue (``kubectl get workload job-foo-xxxxx``) finds our Workloads, and a Job
deleted and re-created under the same name gets a different Workload (its UID changed), so a
stale Workload can never be mistaken for the new Job's.
"""

from __future__ import annotations

import hashlib

HASH_LENGTH = 5
# 253 is the longest object name; one character goes to "-" and HASH_LENGTH to the hash.
MAX_PREFIX_LENGTH = 252 - HASH_LENGTH


def workload_name(kind: str, group: str, job_name: str, job_uid: str) -> str:
    prefixed = f"{kind.lower()}-{job_name}"[:MAX_PREFIX_LENGTH]
    digest = hashlib.sha1(f"{kind}\n{group}\n{job_name}\n{job_uid}".encode(), usedforsecurity=False)
    return f"{prefixed}-{digest.hexdigest()[:HASH_LENGTH]}"


def job_workload_name(job_name: str, job_uid: str) -> str:
    """The Workload name of a batch/v1 Job."""
    return workload_name("Job", "batch", job_name, job_uid)
