"""hack/build-binaries.sh: what it asks Go to build, where it caches it, and when it rebuilds.

The real first build takes about 12 CPU-minutes (docs/development.md), so here `go` and `curl`
are stand-ins that record their calls and write placeholder files; everything else is the real
script, copied with its versions.env into a temporary `hack/` so a pin can be changed. Checked:
Kubernetes is built from `k8s.io/kubernetes` at the pin with every staging module replaced by its
published v0.<minor>.<patch>, with `GOTOOLCHAIN=local`; etcd from `go.etcd.io/etcd/server/v3`;
kwok and helm with `go install`; all into per-pin directories under `$PYKUEUE_CACHE`, outside the
repository; and nothing is rebuilt until a pin changes, and then only what that pin builds.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from hack.localcluster import binaries

ROOT = Path(__file__).resolve().parents[2]
PINS = binaries.read_versions()
K8S = PINS["K8S_VERSION"]
STAGING = ("k8s.io/api", "k8s.io/client-go", "k8s.io/component-base")

# `go` stand-in: records each call with the environment the build cares about, answers
# `go env GOVERSION`, creates go.mod on `mod init`, and writes placeholder binaries (keeping a copy
# of the go.mod each Kubernetes binary was built from, since the script deletes its work dir).
FAKE_GO = r"""#!/bin/bash
echo "go $* | GOTOOLCHAIN=${GOTOOLCHAIN:-} GOFLAGS=${GOFLAGS:-}" >>"$CALLS"
case "$1" in
  env) echo go1.26.1 ;;
  mod) [ "$2" != init ] || printf 'module %s\n\ngo 1.26\n' "$3" >go.mod ;;
  build)
    out= prev=
    for arg in "$@"; do [ "$prev" != -o ] || out=$arg; prev=$arg; done
    mkdir -p "$(dirname "$out")" && echo built >"$out"
    cp go.mod "$GOMODS/$(basename "$out").go.mod" ;;
  install)
    module=${*: -1}; module=${module%@*}
    echo built >"$GOBIN/${module##*/}" ;;
  mod)
    ;;
esac
if [ "$1 $2" = "mod download" ]; then
  dir="$GOPATH/pkg/mod/${*: -1}"
  mkdir -p "$dir/config/components/crd/bases"
  echo "kind: CustomResourceDefinition" >"$dir/config/components/crd/bases/kueue.x-k8s.io_workloads.yaml"
  printf '{\n\t"Path": "sigs.k8s.io/kueue",\n\t"Dir": "%s",\n\t"Sum": "h1:x"\n}\n' "$dir"
fi
"""

# `curl` stand-in: the proxy probe succeeds; the download of k8s.io/kubernetes's go.mod gets one
# with a `replace ... => ./staging/...` line per staging module, as the real one has.
FAKE_CURL = (
    r"""#!/bin/bash
echo "curl $*" >>"$CALLS"
out= prev=
for arg in "$@"; do [ "$prev" != -o ] || out=$arg; prev=$arg; done
[ -n "$out" ] || exit 0
{
  echo 'module k8s.io/kubernetes'
  echo 'replace ('
"""
    + "".join(f"  printf '\\t{m} => ./staging/src/{m}\\n'\n" for m in STAGING)
    + r"""  echo ')'
} >"$out"
"""
)


@dataclass
class Builder:
    tmp: Path
    script: Path
    cache: Path
    calls: Path
    gomods: Path

    def env(self, **extra_env: str) -> dict[str, str]:
        return {
            "PATH": f"{self.tmp / 'fake-bin'}:/usr/bin:/bin",
            "HOME": str(self.tmp),
            "PYKUEUE_CACHE": str(self.cache),
            "GOPROXY": "https://proxy.example",
            "CALLS": str(self.calls),
            "GOMODS": str(self.gomods),
            **extra_env,
        }

    def run(self, *targets: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(self.script), *targets],
            env=self.env(**extra_env),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def start(self, *targets: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", str(self.script), *targets],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def go_calls(self, verb: str) -> list[str]:
        if not self.calls.exists():
            return []
        return [line for line in self.calls.read_text().splitlines() if line.startswith(f"go {verb} ")]

    def set_pin(self, key: str, value: str) -> None:
        versions = self.script.with_name("versions.env")
        lines = [
            f"{key}={value}" if line.startswith(f"{key}=") else line
            for line in versions.read_text().splitlines()
        ]
        versions.write_text("\n".join(lines) + "\n")


@pytest.fixture
def builder(tmp_path: Path) -> Builder:
    hack = tmp_path / "checkout" / "hack"
    hack.mkdir(parents=True)
    shutil.copy(ROOT / "hack" / "build-binaries.sh", hack)
    shutil.copy(ROOT / "hack" / "versions.env", hack)
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    for name, text in (("go", FAKE_GO), ("curl", FAKE_CURL)):
        (fake_bin / name).write_text(text)
        (fake_bin / name).chmod(0o755)
    gomods = tmp_path / "gomods"
    gomods.mkdir()
    return Builder(tmp_path, hack / "build-binaries.sh", tmp_path / "cache", tmp_path / "calls", gomods)


def test_kubernetes_is_built_from_the_pinned_module_with_published_staging_modules(builder: Builder) -> None:
    result = builder.run()
    assert result.returncode == 0, result.stderr
    kube_dir = builder.cache / "bin" / f"kubernetes-{K8S}"
    builds = builder.go_calls("build")
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
        (call,) = [c for c in builds if f"-o {kube_dir / component} " in c]
        assert call.split(" | ")[0].endswith(f"k8s.io/kubernetes/cmd/{component}")
        assert f"-X k8s.io/component-base/version.gitVersion={K8S}" in call
        go_mod = (builder.gomods / f"{component}.go.mod").read_text().splitlines()
        assert f"require k8s.io/kubernetes {K8S}" in go_mod
        staging_version = "v0." + K8S.removeprefix("v1.")
        assert [line for line in go_mod if line.startswith("replace ")] == [
            f"replace {module} => {module} {staging_version}" for module in STAGING
        ]
    assert any(c.startswith(f"go get k8s.io/kubernetes@{K8S} ") for c in builder.go_calls("get"))
    for call in builder.go_calls("build") + builder.go_calls("get") + builder.go_calls("install"):
        assert "GOTOOLCHAIN=local" in call, call


def test_etcd_kwok_and_helm_are_built_from_the_module_proxy_at_their_pins(builder: Builder) -> None:
    assert builder.run().returncode == 0
    assert any(
        c.startswith(f"go get go.etcd.io/etcd/server/v3@{PINS['ETCD_VERSION']} ")
        for c in builder.go_calls("get")
    )
    etcd = builder.cache / "bin" / f"etcd-{PINS['ETCD_VERSION']}" / "etcd"
    assert any(f"-o {etcd} ." in c for c in builder.go_calls("build"))
    installs = [c.split(" | ")[0] for c in builder.go_calls("install")]
    assert installs == [
        f"go install -ldflags -s -w sigs.k8s.io/kwok/cmd/kwok@{PINS['KWOK_VERSION']}",
        f"go install -ldflags -s -w helm.sh/helm/v3/cmd/helm@{PINS['HELM_VERSION']}",
    ]
    assert (builder.cache / "bin" / f"kwok-{PINS['KWOK_VERSION']}" / "kwok").is_file()


def test_binaries_are_cached_per_pin_outside_the_checkout_and_linked_from_current(builder: Builder) -> None:
    result = builder.run()
    assert result.returncode == 0, result.stderr
    current = builder.cache / "bin" / "current"
    assert result.stdout.strip() == str(current)
    for name in (*binaries.CLUSTER_BINARIES, "helm"):
        assert (current / name).resolve().parent.parent == builder.cache / "bin", name
    for stamp in (builder.cache / "bin").glob("*/.stamp"):
        assert stamp.parent.name.endswith("-" + stamp.read_text().strip())
    assert sorted(p.name for p in builder.script.parent.iterdir()) == ["build-binaries.sh", "versions.env"]


def test_nothing_is_rebuilt_until_a_pin_changes_and_then_only_that_pins_build(builder: Builder) -> None:
    assert builder.run().returncode == 0
    builder.calls.unlink()
    again = builder.run()
    assert again.returncode == 0, again.stderr
    assert not builder.calls.exists(), "a warm cache runs neither go nor curl"

    builder.set_pin("K8S_VERSION", "v1.36.99")
    changed = builder.run()
    assert changed.returncode == 0, changed.stderr
    built = [c.split(" -o ")[1].split()[0] for c in builder.go_calls("build")]
    assert sorted(Path(path).name for path in built) == [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
    ]
    assert all(Path(path).parent.name == "kubernetes-v1.36.99" for path in built)
    assert builder.go_calls("install") == [], "kwok and helm kept their pins"
    current = builder.cache / "bin" / "current"
    assert (current / "kube-apiserver").resolve().parent.name == "kubernetes-v1.36.99"
    assert (builder.cache / "bin" / f"kubernetes-{K8S}" / ".stamp").is_file(), "the old pin's build is kept"


def test_a_pin_still_being_built_elsewhere_is_not_linked_into_current(builder: Builder) -> None:
    """Another build has created kwok's directory but not yet its binary or stamp: a relink in
    the meantime (a warm target such as `kueue-crds`) links only finished pins, and a link named
    `*` that an unmatched glob once left is removed."""
    assert builder.run().returncode == 0
    bindir = builder.cache / "bin"
    current = bindir / "current"
    kwok_dir = bindir / f"kwok-{PINS['KWOK_VERSION']}"
    shutil.rmtree(kwok_dir)
    kwok_dir.mkdir()
    (current / "kwok").unlink()
    (current / "*").symlink_to(kwok_dir / "*")

    result = builder.run("kueue-crds")
    assert result.returncode == 0, result.stderr
    finished = {*binaries.CLUSTER_BINARIES, "helm"} - {"kwok"}
    assert {p.name for p in current.iterdir()} == finished
    assert all(p.resolve().is_file() for p in current.iterdir())


def test_kueue_crds_are_copied_from_the_pinned_module_into_the_cache_once(builder: Builder) -> None:
    """The parity test's oracle: Kueue's CRDs, out of sigs.k8s.io/kueue at KUEUE_VERSION."""
    kueue = PINS["KUEUE_VERSION"]
    result = builder.run()
    assert result.returncode == 0, result.stderr
    (call,) = builder.go_calls("mod download")
    assert call.startswith(f"go mod download -json sigs.k8s.io/kueue@{kueue} | GOTOOLCHAIN=local")
    crds = builder.cache / f"kueue-{kueue}" / "crds"
    assert (crds / "kueue.x-k8s.io_workloads.yaml").read_text() == "kind: CustomResourceDefinition\n"
    assert (crds / ".stamp").read_text().strip() == kueue
    builder.calls.unlink()
    assert builder.run().returncode == 0
    assert builder.go_calls("mod") == [], "a fetched pin is not fetched again"


def test_kueues_manager_is_built_at_both_bench_pins_or_at_the_versions_asked(builder: Builder) -> None:
    """`make kueue`: the baseline's kueue@ variant at the release that stores v1beta1 and at a
    current one, each with its module's CRDs; KUEUE_BUILD_VERSIONS (what bench/kueue_process.py
    sets for a version asked that is not built yet) builds that one instead, over the pins."""
    pins = [PINS["KUEUE_BENCH_VERSION"], PINS["KUEUE_BENCH_V1BETA2_VERSION"]]
    result = builder.run("kueue")
    assert result.returncode == 0, result.stderr
    installs = [c.split(" | ")[0] for c in builder.go_calls("install")]
    assert installs == [f"go install -ldflags -s -w sigs.k8s.io/kueue/cmd/kueue@{v}" for v in pins]
    for version in pins:
        assert (builder.cache / "bin" / f"kueue-{version}" / "kueue").is_file()
        assert (builder.cache / f"kueue-{version}" / "crds" / "kueue.x-k8s.io_workloads.yaml").is_file()
    builder.calls.unlink()
    asked = builder.run("kueue", KUEUE_BUILD_VERSIONS="v0.16.0")
    assert asked.returncode == 0, asked.stderr
    assert [c.split(" | ")[0] for c in builder.go_calls("install")] == [
        "go install -ldflags -s -w sigs.k8s.io/kueue/cmd/kueue@v0.16.0"
    ], "the pins are cached; only the version asked is built"
    assert (builder.cache / "kueue-v0.16.0" / "crds" / ".stamp").read_text().strip() == "v0.16.0"


def test_a_finished_target_passes_a_held_lock_and_an_unfinished_one_waits_for_it(builder: Builder) -> None:
    """`.ci/run` builds every pin in the background while lint and the unit tests run; the test
    targets then call the script for what they need. A target already built must not queue behind
    the background build (the unit tests' `kueue-crds` would otherwise wait for all of it), and a
    target still to build must wait for the lock rather than race the build into the same cache."""
    assert builder.run().returncode == 0
    lock_path = builder.cache / "bin" / ".build.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        finished = builder.run("kubernetes", "etcd", "kwok", "helm", "kueue-crds")
        assert finished.returncode == 0, finished.stderr

        builder.calls.unlink()
        builder.set_pin("HELM_VERSION", "v3.99.0")
        waiting = builder.start("kwok", "helm")
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                waiting.wait(timeout=1.5)
            assert builder.go_calls("install") == [], "nothing is built while another build holds the lock"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
        _, stderr = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, stderr
    assert f"build-binaries: waiting for another build in {builder.cache / 'bin'} to finish (then helm)..." in stderr
    assert [c.split(" | ")[0] for c in builder.go_calls("install")] == [
        "go install -ldflags -s -w helm.sh/helm/v3/cmd/helm@v3.99.0"
    ]
