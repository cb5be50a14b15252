"""Kueue kinds on the wire in the storage version, in the programs in :data:`VERSION`.

The controller, the webhook's rules, the informers and the engine read v1beta1 field names
(``pykueue.api.constants.VERSION``). The apiserver stores Kueue kinds in
``pykueue.api.constants.STORAGE_VERSION``. When the two differ, :class:`KubeClient` sends and
reads Kueue kinds in the storage version and converts in-process with
:mod:`pykueue.api.conversion`, here: objects read (get, list, watch, every write's answer) are
converted to the program's version before anybody sees them, and bodies written (create,
replace, merge and apply patches) are converted to the storage version before they are sent. So
the programs never cost the apiserver a conversion webhook call and keep working while the
conversion webhook is down (docs/design/api-versions.md).

JSON patches (RFC 6902) name paths, which a rename would have to rewrite. Paths that mean the same
in both versions (object metadata, ``status.conditions``: the benchmark driver appends a condition
this way, race-free) pass as they are; any other JSON patch of a converted kind is refused rather
than sent unconverted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pykueue.api import conversion
from pykueue.api.constants import GROUP, STORAGE_VERSION, VERSION
from pykueue.kube.resources import Resource


class KueueWire:
    """The version Kueue kinds travel in, and the conversions to and from it."""

    def __init__(self, version: str = STORAGE_VERSION) -> None:
        if version not in conversion.VERSIONS:
            raise ValueError(f"Kueue wire version must be one of {conversion.VERSIONS}, not {version!r}")
        self.version = version

    def converts(self, res: Resource) -> bool:
        """Whether ``res`` is a Kueue kind of the program's version that travels in another one
        (a resource naming another version explicitly is sent as it is)."""
        return res.group == GROUP and res.version == VERSION != self.version

    def on_wire(self, res: Resource) -> Resource:
        """``res`` as addressed on the wire (its REST path names the wire version)."""
        return dataclasses.replace(res, version=self.version) if self.converts(res) else res

    def read(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """An object the apiserver sent, in the program's version. List items may lack
        ``apiVersion``/``kind``; they are the list's. Anything that is not a Kueue object of the
        wire version (a Status, a bookmark of another kind) is returned as it is."""
        if not self.converts(res) or not isinstance(obj, dict):
            return obj
        api_version = obj.get("apiVersion", f"{GROUP}/{self.version}")
        if api_version != f"{GROUP}/{self.version}" or obj.get("kind", res.kind) != res.kind:
            return obj
        return conversion.convert_shared({**obj, "apiVersion": api_version, "kind": res.kind}, res.version)

    def read_list(self, res: Resource, page: dict[str, Any]) -> dict[str, Any]:
        """A list page with each item in the program's version."""
        if not self.converts(res) or not isinstance(page.get("items"), list):
            return page
        return {**page, "items": [self.read(res, item) for item in page["items"]]}

    def read_event(self, res: Resource, event: dict[str, Any]) -> dict[str, Any]:
        """A watch event with its object in the program's version (bookmarks carry only
        metadata and convert as they are; ERROR events carry a Status and are left alone)."""
        obj = event.get("object")
        if not self.converts(res) or event.get("type") == "ERROR" or not isinstance(obj, dict):
            return event
        return {**event, "object": self.read(res, obj)}

    def write(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """A whole object (create, replace) in the wire version."""
        if not self.converts(res):
            return obj
        return conversion.convert_shared({"apiVersion": f"{GROUP}/{res.version}", "kind": res.kind, **obj}, self.version)

    def patch(self, res: Resource, patch: Any, patch_type: str) -> Any:
        """A patch body in the wire version (merge and server-side apply bodies are partial objects)."""
        if not self.converts(res):
            return patch
        if patch_type == "json":
            if _version_invariant(patch):
                return patch
            raise ValueError(
                f"JSON patches of {res.kind} are converted to {GROUP}/{self.version} only on metadata and "
                "status.conditions; send a merge patch"
            )
        return conversion.convert_patch(res.kind, patch, res.version, self.version)


# JSON-patch paths that name the same field in every served version of every Kueue kind.
_INVARIANT_PREFIXES = ("/metadata/", "/status/conditions/")
_INVARIANT_PATHS = ("/metadata", "/status/conditions")


def _version_invariant(patch: Any) -> bool:
    """Whether every operation of a JSON patch touches only version-invariant paths."""
    if not isinstance(patch, list) or not patch:
        return False
    for op in patch:
        if not isinstance(op, dict):
            return False
        for key in ("path", "from"):
            path = op.get(key)
            if key == "from" and path is None:
                continue
            if not isinstance(path, str) or not (path in _INVARIANT_PATHS or path.startswith(_INVARIANT_PREFIXES)):
                return False
    return True


__all__ = ["KueueWire"]
