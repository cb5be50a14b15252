"""Small mutual-TLS HTTP calls to the apiserver and etcd (readiness probes, compaction).

Going through kubectl or the Kubernetes client for a health probe would cost a process start or
a heavy import per poll; a plain TLS request with the admin client certificate is enough.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def tls_context(ca_cert: Path, client_cert: Path, client_key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_cert))
    context.load_cert_chain(str(client_cert), str(client_key))
    return context


def get_status(url: str, context: ssl.SSLContext, timeout: float = 2.0) -> tuple[int, str]:
    """GET `url`; return (HTTP status, body). Connection failures are status 0."""
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as err:
        return 0, str(err)


def post_json(
    url: str, payload: dict[str, Any], context: ssl.SSLContext, timeout: float = 10.0
) -> dict[str, Any]:
    """POST a JSON body and return the decoded JSON answer (raises on HTTP errors)."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
        return json.loads(response.read() or b"{}")
