"""The Flask application: one POST route per webhook path, health endpoints and metrics.

``/convert`` is the CRDs' conversion webhook (:mod:`webhook.conversion`). The HTTP layer's only jobs are to turn bytes into an :class:`AdmissionRequest`, pick the endpoint's
handler, and guarantee the two promises every webhook path makes (``docs/design/webhook.md``): malformed input gets a 400 with a one-line
reason, and nothing a handler does can turn into a 500 (an exception inside a rule becomes a
denial that names the failure, logged with the request uid).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from webhook import metrics
from webhook.admission import AdmissionRequest, MalformedReview, Verdict, build_response, parse_review
from webhook.conversion import CONVERSION_PATH, failure_review, review_response

log = logging.getLogger("pykueue.webhook")

# The apiserver caps a request body at 3 MiB and a review carries the object and the old object, so
# anything larger than this was not sent by an apiserver.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

Handler = Callable[[AdmissionRequest], Verdict]


@dataclass(frozen=True)
class Endpoint:
    """One webhook path: which object kind (and versions of it) it accepts and whether it may patch.

    An empty ``versions`` accepts any version (for endpoints built by hand in tests and benches).
    """

    path: str
    group: str
    kind: str
    mutating: bool
    handler: Handler
    versions: tuple[str, ...] = ()


def _malformed(path: str, reason: str, started: float) -> Response:
    metrics.observe(path, "malformed", time.perf_counter() - started)
    response = Response(reason + "\n", status=400, mimetype="text/plain")
    return response


def _read_body(max_body_bytes: int) -> bytes:
    declared = request.content_length
    if declared is not None and declared > max_body_bytes:
        raise MalformedReview(f"body of {declared} bytes is over the {max_body_bytes}-byte limit")
    body = request.stream.read(max_body_bytes + 1)
    if len(body) > max_body_bytes:
        raise MalformedReview(f"body is over the {max_body_bytes}-byte limit")
    return body


def _outcome(verdict: Verdict, *, mutating: bool) -> str:
    if not verdict.allowed:
        return "denied"
    return "patched" if mutating and verdict.patch else "allowed"


def _run_handler(endpoint: Endpoint, review: AdmissionRequest) -> tuple[Verdict, str]:
    try:
        verdict = endpoint.handler(review)
    except Exception as err:
        log.exception(
            "admission rule failed",
            extra={"uid": review.uid, "path": endpoint.path, "kind": review.kind.kind, "object_name": review.name},
        )
        message = f"internal error while validating {review.kind.kind} {review.name!r}: {type(err).__name__}: {err}"
        return Verdict.deny(message[:1024], code=500, reason="InternalError"), "error"
    return verdict, _outcome(verdict, mutating=endpoint.mutating)


def create_app(
    endpoints: Iterable[Endpoint],
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ready: Callable[[], bool] = lambda: True,
) -> Flask:
    """Build the application for ``endpoints``; ``ready`` decides what ``/readyz`` reports."""
    app = Flask("pykueue-webhook")
    by_path = {endpoint.path: endpoint for endpoint in endpoints}

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.get("/readyz")
    def readyz() -> Response:
        if ready():
            return Response("ok\n", mimetype="text/plain")
        return Response("not ready\n", status=503, mimetype="text/plain")

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        payload, content_type = metrics.exposition()
        return Response(payload, content_type=content_type)

    @app.post(CONVERSION_PATH)
    def convert_objects() -> Response:
        started = time.perf_counter()
        try:
            review, outcome = review_response(_read_body(max_body_bytes))
        except MalformedReview as err:
            review, outcome = failure_review("", str(err)), "malformed"
        metrics.observe(CONVERSION_PATH, outcome, time.perf_counter() - started)
        return jsonify(review)

    @app.post("/<path:subpath>")
    def admit(subpath: str) -> Response | tuple[Response, int]:
        started = time.perf_counter()
        path = "/" + subpath
        endpoint = by_path.get(path)
        if endpoint is None:
            return _malformed("unknown", f"no webhook is served at {path[:128]}", started)
        try:
            review = parse_review(_read_body(max_body_bytes))
        except MalformedReview as err:
            return _malformed(path, str(err), started)
        if (review.kind.group, review.kind.kind) != (endpoint.group, endpoint.kind):
            got = f"{review.kind.group}/{review.kind.kind}".lstrip("/")
            want = f"{endpoint.group}/{endpoint.kind}".lstrip("/")
            return _malformed(path, f"request.kind {got[:128]} is not served at {path} (expects {want})", started)
        if endpoint.versions and review.kind.version not in endpoint.versions:
            return _malformed(
                path,
                f"request.kind version {review.kind.version[:32]!r} is not served at {path} "
                f"(expects one of {', '.join(endpoint.versions)})",
                started,
            )
        verdict, outcome = _run_handler(endpoint, review)
        log.debug(
            "admission",
            extra={"uid": review.uid, "path": path, "operation": review.operation, "outcome": outcome},
        )
        metrics.observe(path, outcome, time.perf_counter() - started)
        return jsonify(build_response(review.uid, verdict, mutating=endpoint.mutating))

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Response:
        # 404/405 for GETs on unknown paths and the like: a one-line reason, never an HTML page.
        return Response(f"{err.name}\n", status=err.code or 400, mimetype="text/plain")

    @app.errorhandler(Exception)
    def unexpected(err: Exception) -> Response:
        # Anything that escaped the per-request guard above is a bug in this module, not in a rule;
        # the apiserver still gets a 400 with a reason rather than a 500 that looks like an outage.
        log.exception("unexpected error in the admission HTTP layer")
        return Response(f"request could not be handled: {type(err).__name__}\n", status=400, mimetype="text/plain")

    return app
