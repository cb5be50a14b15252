"""The only package that talks to the Kubernetes API (``docs/design/README.md``).

Import :class:`KubeClient` from :mod:`pykueue.kube.client`, resource descriptors from
:mod:`pykueue.kube.resources` and typed errors from :mod:`pykueue.kube.errors`.
"""

from pykueue.kube.client import KubeClient, WatchStream, retry_on_conflict
from pykueue.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unauthorized,
)
from pykueue.kube.resources import Resource

__all__ = [
    "AlreadyExists",
    "ApiError",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "NotFound",
    "Resource",
    "Unauthorized",
    "WatchStream",
    "retry_on_conflict",
]
