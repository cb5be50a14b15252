"""The description of one API kind: its names, scope, columns and top-level schema.

Kept apart from :mod:`pykueue.api.schema` so the per-kind schema modules can build their
:class:`KindInfo` without importing the registry that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykueue.api.constants import GROUP, VERSION
from pykueue.api.dsl import Rule, Schema


@dataclass(frozen=True)
class PrinterColumn:
    """A ``kubectl get`` column (``additionalPrinterColumns``); priority 1 shows only with ``-o wide``."""

    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str = ""
    format: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            out["description"] = self.description
        if self.format:
            out["format"] = self.format
        if self.priority:
            out["priority"] = self.priority
        return out


AGE_COLUMN = PrinterColumn("Age", ".metadata.creationTimestamp", type="date", description="Time since creation")


@dataclass(frozen=True)
class KindInfo:
    """Everything the CRD generator and the registry need to know about one kind.

    ``properties`` are the top-level fields besides apiVersion/kind/metadata (usually ``spec`` and
    ``status``; WorkloadPriorityClass has ``value`` and ``description``).  ``rules`` are CEL rules
    on the whole object (those that compare spec with status).
    """

    kind: str
    plural: str
    description: str
    properties: dict[str, Schema]
    namespaced: bool = False
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    printer_columns: tuple[PrinterColumn, ...] = ()
    required: tuple[str, ...] = ()
    selectable_fields: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    categories: tuple[str, ...] = ()  # Kueue's CRDs declare none
    group: str = GROUP
    version: str = VERSION

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def scope(self) -> str:
        return "Namespaced" if self.namespaced else "Cluster"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"
