"""AdmissionReview request bodies for the webhook tests."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from pykueue.api import constants as c

Obj = dict[str, Any]

KIND_GROUPS = {
    "Job": ("batch", "v1", "jobs"),
    "ClusterQueue": (c.GROUP, c.VERSION, "clusterqueues"),
    "Cohort": (c.GROUP, c.VERSION, "cohorts"),
    "ResourceFlavor": (c.GROUP, c.VERSION, "resourceflavors"),
    "Workload": (c.GROUP, c.VERSION, "workloads"),
    "LocalQueue": (c.GROUP, c.VERSION, "localqueues"),
    "AdmissionCheck": (c.GROUP, c.VERSION, "admissionchecks"),
}


def review(
    kind: str,
    obj: Obj | None,
    *,
    old: Obj | None = None,
    operation: str = "CREATE",
    username: str = "alice",
    uid: str | None = None,
    sub_resource: str = "",
    version: str | None = None,
) -> Obj:
    """An AdmissionReview of ``obj``; ``version`` overrides the kind's (``v1beta2`` for a Kueue
    object sent in v1beta2; the object itself must be in that version)."""
    group, kind_version, plural = KIND_GROUPS[kind]
    version = version or kind_version
    metadata = (obj or old or {}).get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    request: Obj = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "operation": operation,
        "name": metadata.get("name", "") if isinstance(metadata.get("name"), str) else "",
        "userInfo": {"username": username, "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    if isinstance(metadata.get("namespace"), str):
        request["namespace"] = metadata["namespace"]
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def decoded_patch(response: Obj) -> list[Obj]:
    assert response["response"]["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["response"]["patch"]))
