"""Generate the Workload pod template schema from Kubernetes' own OpenAPI document.

``python -m hack.gen_podtemplate_schema [--check]`` reads
``io.k8s.api.core.v1.PodTemplateSpec`` from ``api/openapi-spec/v3/api__v1_openapi.json`` of the
``k8s.io/kubernetes`` module at the pinned ``K8S_VERSION`` (hack/versions.env; fetched with
``go mod download``, a few seconds, no build) and writes it, in the structural form
a CRD needs, to ``pykueue/api/schemas/podtemplate.json``, which ``pykueue/api/schemas/workload.py``
embeds as ``spec.podSets[].template``.

The conversion follows what controller-gen does for Kueue's CRDs, so the result matches Kueue's
published Workload CRD (the parity test compares them):

* ``$ref`` and single-``$ref`` ``allOf`` wrappers are inlined;
* a struct that embeds an atomic struct (``+structType=atomic``, e.g. LocalObjectReference in
  ConfigMapEnvSource) is atomic too, as controller-gen flattens the embedded markers; the Go
  source of ``k8s.io/api`` at the matching version tells which (OpenAPI does not);
* ``IntOrString`` becomes ``anyOf: [integer, string]`` with ``x-kubernetes-int-or-string``, and
  ``Quantity`` the same plus the quantity pattern;
* only the ``default`` values a type declares with a literal ``+default`` marker are kept:
  openapi-gen also writes the zero value of required fields, ``{}`` for embedded structs and the
  value of ``+default=ref(...)`` markers, none of which controller-gen writes;
* every embedded ObjectMeta (the template's, a volume claim template's) is the one controller-gen
  writes: labels, annotations, finalizers, name, namespace;
* descriptions, ``oneOf`` and the strategic-merge-patch extensions are dropped (the descriptions
  would more than double the size of every install manifest; ``kubectl explain`` on a Pod has them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
OUTPUT = REPO_ROOT / "pykueue" / "api" / "schemas" / "podtemplate.json"
ROOT_TYPE = "io.k8s.api.core.v1.PodTemplateSpec"
QUANTITY_TYPE = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_TYPE = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META_TYPE = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
KEPT = (
    "type",
    "format",
    "enum",
    "required",
    "maxItems",
    "minItems",
    "maxLength",
    "minLength",
    "minimum",
    "maximum",
    "pattern",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)
EMBEDDED_OBJECT_META: dict[str, Any] = {
    "type": "object",
    "properties": {
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}


def versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (REPO_ROOT / "hack" / "versions.env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def download(module: str, workdir: Path) -> Path:
    """``go mod download`` one module (sources only, no build) into ``workdir``; its directory."""
    env = dict(os.environ, GOPATH=str(workdir), GOTOOLCHAIN="local", GOFLAGS="-modcacherw")
    try:
        out = subprocess.run(
            ["go", "mod", "download", "-json", module], env=env, check=True, capture_output=True, text=True
        )
    except FileNotFoundError:
        sys.exit("gen_podtemplate_schema: Go is not installed; install Go (https://go.dev/dl) and re-run.")
    except subprocess.CalledProcessError as err:
        sys.exit(f"gen_podtemplate_schema: cannot download {module}; check the network or GOPROXY: {err.stderr.strip()}")
    return Path(json.loads(out.stdout)["Dir"])


def required_file(path: Path) -> Path:
    if not path.is_file():
        sys.exit(f"gen_podtemplate_schema: {path} is missing; check K8S_VERSION in hack/versions.env.")
    return path


_STRUCT = re.compile(r"((?:^//[^\n]*\n)*)^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_INLINE = re.compile(r"^\t(\w+) `json:\",inline", re.M)
_REF_DEFAULT = re.compile(r"^\t// \+default=ref\(.*?\n(?:\t//[^\n]*\n)*\t\w+ [^`\n]*`json:\"(\w+)", re.M)


class GoFacts:
    """What only the Go source of core/v1 tells: atomic structs and ``+default=ref(...)`` fields."""

    def __init__(self, types_go: str) -> None:
        structs = {m.group(2): (m.group(1), m.group(3)) for m in _STRUCT.finditer(types_go)}
        atomic = {name for name, (doc, _) in structs.items() if "+structType=atomic" in doc}
        self.atomic = atomic | {
            name for name, (_, body) in structs.items() if any(e in atomic for e in _INLINE.findall(body))
        }
        self.ref_defaults = {
            (name, field) for name, (_, body) in structs.items() for field in _REF_DEFAULT.findall(body)
        }


class Converter:
    """Inlines an OpenAPI v3 component into a structural CRD schema, controller-gen style."""

    def __init__(self, components: dict[str, Any], go: GoFacts) -> None:
        self.components = components
        self.go = go

    def named(self, name: str) -> dict[str, Any]:
        if name == OBJECT_META_TYPE:
            return json.loads(json.dumps(EMBEDDED_OBJECT_META))
        if name == QUANTITY_TYPE:
            return {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN,
                    "x-kubernetes-int-or-string": True}
        if name == INT_OR_STRING_TYPE:
            return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
        out = self.convert(self.components[name], owner=name.rsplit(".", 1)[1])
        if name.rsplit(".", 1)[1] in self.go.atomic and name.startswith("io.k8s.api.core.v1."):
            out["x-kubernetes-map-type"] = "atomic"
        return out

    def convert(self, schema: dict[str, Any], *, keep_default: bool = True, owner: str = "") -> dict[str, Any]:
        ref = schema.get("$ref")
        refs = [s["$ref"] for s in schema.get("allOf", []) if "$ref" in s]
        if ref or refs:
            out = self.named((ref or refs[0]).rsplit("/", 1)[1])
        else:
            out = {key: schema[key] for key in KEPT if key in schema}
            if "properties" in schema:
                required = set(schema.get("required", []))
                out["properties"] = {
                    name: self.convert(
                        sub, keep_default=name not in required and (owner, name) not in self.go.ref_defaults
                    )
                    for name, sub in sorted(schema["properties"].items())
                }
            if isinstance(schema.get("items"), dict):
                out["items"] = self.convert(schema["items"], keep_default=False)
            if isinstance(schema.get("additionalProperties"), dict):
                out["additionalProperties"] = self.convert(schema["additionalProperties"], keep_default=False)
        default = schema.get("default")
        if keep_default and default is not None and default != {}:
            out["default"] = default
        return out

    def pod_template(self) -> dict[str, Any]:
        root = self.components[ROOT_TYPE]
        return {
            "type": "object",
            "properties": {
                "metadata": EMBEDDED_OBJECT_META,
                "spec": self.convert(root["properties"]["spec"], keep_default=False),
            },
        }


def render(template: dict[str, Any], k8s_version: str) -> str:
    document = {
        "generatedBy": "python -m hack.gen_podtemplate_schema; do not edit by hand",
        "source": f"k8s.io/kubernetes@{k8s_version} api/openapi-spec/v3/api__v1_openapi.json {ROOT_TYPE}",
        "schema": template,
    }
    return json.dumps(document, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = parser.parse_args(argv)
    k8s_version = versions()["K8S_VERSION"]
    # The staging module k8s.io/api is published as v0.<minor>.<patch> of Kubernetes v1.<minor>.<patch>.
    api_version = "v0." + k8s_version.split(".", 1)[1]
    with tempfile.TemporaryDirectory() as tmp:
        openapi = required_file(
            download(f"k8s.io/kubernetes@{k8s_version}", Path(tmp)) / "api" / "openapi-spec" / "v3" / "api__v1_openapi.json"
        )
        types_go = required_file(download(f"k8s.io/api@{api_version}", Path(tmp)) / "core" / "v1" / "types.go")
        components = json.loads(openapi.read_text())["components"]["schemas"]
        go = GoFacts(types_go.read_text())
    text = render(Converter(components, go).pod_template(), k8s_version)
    if args.check:
        stale = not OUTPUT.exists() or OUTPUT.read_text() != text
        if stale:
            print(f"stale: {OUTPUT} (run `python -m hack.gen_podtemplate_schema`)", file=sys.stderr)
        return 1 if stale else 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
