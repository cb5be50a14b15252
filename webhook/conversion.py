"""The CRDs' conversion webhook: ``POST /convert`` answers an ``apiextensions.k8s.io/v1`` ConversionReview.

The apiserver calls it whenever an object is read or written in a version other than the one
etcd holds (docs/design/api-versions.md). The conversion itself is :func:`pykueue.api.conversion.convert_shared`;
this module only reads the review and writes the answer. Its promise, like every webhook path's
(docs/design/webhook.md): a malformed review or an object that cannot be converted is answered
with HTTP 200 and ``result.status: Failure`` with a one-line reason (the apiserver shows it to the
user), never with a 500. All objects of a review convert or none does, as the apiserver requires.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pykueue.api import constants as c
from pykueue.api.conversion import ConversionError, convert_shared

log = logging.getLogger("pykueue.webhook.conversion")

CONVERSION_PATH = "/convert"
REVIEW_API_VERSION = "apiextensions.k8s.io/v1"


def failure_review(uid: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": REVIEW_API_VERSION,
        "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": [], "result": {"status": "Failure", "message": message[:1024]}},
    }


def review_response(body: bytes) -> tuple[dict[str, Any], str]:
    """The ConversionReview answering ``body``, and the outcome for metrics (converted/malformed/failed)."""
    try:
        review = json.loads(body)
    except ValueError as err:
        return failure_review("", f"body is not JSON: {err}"), "malformed"
    if not isinstance(review, dict) or review.get("kind") != "ConversionReview":
        return failure_review("", "body is not a ConversionReview"), "malformed"
    if review.get("apiVersion") != REVIEW_API_VERSION:
        return failure_review("", f"ConversionReview apiVersion {review.get('apiVersion')!r} is not {REVIEW_API_VERSION}"), "malformed"
    request = review.get("request")
    if not isinstance(request, dict):
        return failure_review("", "ConversionReview has no request"), "malformed"
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        return failure_review("", "request.uid is missing"), "malformed"
    desired = request.get("desiredAPIVersion")
    objects = request.get("objects")
    if not isinstance(desired, str) or "/" not in desired:
        return failure_review(uid, f"request.desiredAPIVersion {desired!r} is not group/version"), "malformed"
    if not isinstance(objects, list):
        return failure_review(uid, "request.objects is not a list"), "malformed"
    group, _, version = desired.partition("/")
    if group != c.GROUP:
        return failure_review(uid, f"request.desiredAPIVersion {desired!r} is not of the {c.GROUP} group"), "failed"
    converted = []
    for index, obj in enumerate(objects):
        try:
            converted.append(convert_shared(obj, version))  # the review is dropped once answered
        except ConversionError as err:
            name = obj.get("metadata", {}).get("name") if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) else None
            return failure_review(uid, f"request.objects[{index}] ({name or 'unnamed'}): {err}"), "failed"
        except Exception as err:  # a bug in a converter must not become a 500
            log.exception("conversion failed", extra={"uid": uid, "index": index})
            return failure_review(uid, f"request.objects[{index}]: internal error: {type(err).__name__}: {err}"), "failed"
    response = {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}}
    return {"apiVersion": REVIEW_API_VERSION, "kind": "ConversionReview", "response": response}, "converted"
