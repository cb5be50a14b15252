"""A/B runs: variants from other source trees, their names, and interleaved run order."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from bench import baseline
from bench.baseline_variants import (
    VARIANTS,
    SourceTree,
    choose_variants,
    controller_configuration,
    describe_tree,
    kueue_variant,
    parse_source_tree,
    path_safe,
    plan_runs,
)
from bench.controller_process import ControllerProcess, check_source_tree, controller_environment
from pykueue.api.config import (
    PREEMPT_LESS_THAN_INITIAL_SHARE,
    PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    Configuration,
    FairSharing,
    parse_config,
)

# A stand-in controller: answers /readyz on --health-addr and writes where its packages came
# from, so the test can tell which tree's code ran.
FAKE_MAIN = textwrap.dedent(
    """
    import argparse, http.server, json, os, sys
    import controller, pykueue

    parser = argparse.ArgumentParser()
    parser.add_argument("--health-addr")
    args, _ = parser.parse_known_args()
    with open(os.environ["FAKE_CONTROLLER_REPORT"], "w") as out:
        json.dump({"controller": controller.__file__, "pykueue": pykueue.__file__, "cwd": os.getcwd(),
                   "argv": sys.argv[1:]}, out)

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_):
            pass

    host, port = args.health_addr.rsplit(":", 1)
    http.server.HTTPServer((host, int(port)), Ready).serve_forever()
    """
)


def fake_tree(root: Path) -> Path:
    (root / "controller").mkdir(parents=True)
    (root / "pykueue").mkdir()
    (root / "controller" / "__init__.py").write_text("")
    (root / "controller" / "main.py").write_text(FAKE_MAIN)
    (root / "pykueue" / "__init__.py").write_text("")
    return root


def test_the_controller_of_another_tree_runs_with_that_trees_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = fake_tree(tmp_path / "old-tree")
    report = tmp_path / "report.json"
    monkeypatch.setenv("FAKE_CONTROLLER_REPORT", str(report))
    process = ControllerProcess(
        "/nonexistent/kubeconfig", qps=50.0, burst=100, workdir=tmp_path, label="kueue-qps@old-0", source_tree=tree
    )
    process.start()
    try:
        assert process.alive()
        seen = json.loads(report.read_text())
    finally:
        process.stop()
    assert seen["controller"] == str(tree / "controller" / "__init__.py")
    assert seen["pykueue"] == str(tree / "pykueue" / "__init__.py"), "the tree shadows this checkout's install"
    assert seen["cwd"] == str(tree)
    assert seen["argv"][seen["argv"].index("--qps") + 1] == "50.0"
    assert not process.alive()


def test_the_environment_puts_the_tree_first_on_pythonpath(tmp_path: Path) -> None:
    assert controller_environment(tmp_path, {"PYTHONPATH": "/elsewhere", "X": "1"}) == {
        "PYTHONPATH": f"{tmp_path}:/elsewhere", "X": "1"
    }
    assert controller_environment(tmp_path, {})["PYTHONPATH"] == str(tmp_path)
    assert controller_environment(None, {"X": "1"}) == {"X": "1"}


def test_a_tree_that_is_not_a_checkout_is_refused_with_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        check_source_tree(tmp_path / "absent")
    (tmp_path / "controller").mkdir()
    with pytest.raises(ValueError, match=r"--controller-src .*controller/main.py is missing"):
        check_source_tree(tmp_path)


def test_labels_come_from_the_spec_else_the_trees_commit_else_its_name(tmp_path: Path) -> None:
    plain = fake_tree(tmp_path / "plain")
    assert parse_source_tree(f"old={plain}") == SourceTree("old", plain.resolve())
    assert parse_source_tree(str(plain)) == SourceTree("plain", plain.resolve())
    repo = fake_tree(tmp_path / "repo")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tree"], check=True)
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True)
    assert parse_source_tree(str(repo)).label == commit.stdout.strip()
    assert describe_tree(repo) == {"tree": str(repo), "commit": commit.stdout.strip(), "dirty": False}
    (repo / "controller" / "main.py").write_text("# changed\n")
    assert describe_tree(repo)["dirty"] is True
    assert describe_tree(plain)["commit"] is None
    with pytest.raises(ValueError, match="label 'a b'"):
        parse_source_tree(f"a b={plain}")


def test_each_rate_limit_is_followed_by_its_other_tree_variants_and_runs_interleave(tmp_path: Path) -> None:
    old, new = SourceTree("old", tmp_path / "o"), SourceTree("wip", tmp_path / "w")
    variants = choose_variants(["kueue-qps", "unthrottled"], [old, new])
    assert [v.name for v in variants] == [
        "kueue-qps", "kueue-qps@old", "kueue-qps@wip", "unthrottled", "unthrottled@old", "unthrottled@wip"
    ]
    assert variants[1].qps == VARIANTS["kueue-qps"].qps and variants[1].source_tree == old.path
    assert variants[0].source_tree is None
    order = plan_runs(choose_variants(["kueue-qps"], [old]), repeat=3)
    assert [(v.name, i) for v, i in order] == [
        ("kueue-qps", 0), ("kueue-qps@old", 0), ("kueue-qps", 1), ("kueue-qps@old", 1),
        ("kueue-qps", 2), ("kueue-qps@old", 2),
    ]


def test_bad_variant_choices_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown \['fast'\]"):
        choose_variants(["fast"], [])
    with pytest.raises(ValueError, match="labels must differ"):
        choose_variants(["kueue-qps"], [SourceTree("x", Path("/a")), SourceTree("x", Path("/b"))])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--controller-src", "/nonexistent/tree"], "--controller-src /nonexistent/tree: not a directory"),
        (["--controller-pid", "1", "--controller-src", "."], "cannot be combined"),
        (["--repeat", "0"], "--repeat: must be at least 1"),
        (["--variants", "nope"], "--variants: unknown ['nope']"),
    ],
)
def test_the_command_line_refuses_bad_options_before_touching_a_cluster(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert baseline.main(argv) == 2
    assert message in capsys.readouterr().err


def test_kueue_at_a_version_is_kueues_manager_at_kueues_qps_and_runs_interleaved() -> None:
    variants = choose_variants(["kueue-qps", "kueue@v0.14.8"], [])
    assert [v.name for v in variants] == ["kueue-qps", "kueue@v0.14.8"]
    kueue = variants[1]
    assert kueue.kueue_version == "v0.14.8" and kueue.source_tree is None
    assert (kueue.qps, kueue.burst) == (VARIANTS["kueue-qps"].qps, VARIANTS["kueue-qps"].burst)
    assert [v.name for v, _ in plan_runs(variants, repeat=2)] == ["kueue-qps", "kueue@v0.14.8"] * 2


def test_kueue_variant_needs_a_full_version() -> None:
    with pytest.raises(ValueError, match=r"kueue@vMAJOR\.MINOR\.PATCH"):
        choose_variants(["kueue@0.14"], [])


def test_kueue_at_a_named_rate_limit_runs_at_exactly_that_pykueue_variants_qps_and_burst() -> None:
    variants = choose_variants(["unthrottled", "kueue@v0.14.8:unthrottled", "kueue@v0.14.8"], [])
    assert [v.name for v in variants] == ["unthrottled", "kueue@v0.14.8:unthrottled", "kueue@v0.14.8"]
    pykueue, kueue, kueue_at_50 = variants
    assert (kueue.qps, kueue.burst) == (pykueue.qps, pykueue.burst) == (100_000.0, 200_000)
    assert kueue.kueue_version == kueue_at_50.kueue_version == "v0.14.8"
    assert (kueue_at_50.qps, kueue_at_50.burst) == (50.0, 100)
    spelled_out = kueue_variant("kueue@v0.14.8:kueue-qps")
    assert spelled_out is not None and (spelled_out.qps, spelled_out.burst) == (50.0, 100)
    assert kueue_variant("unthrottled") is None


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("kueue@v0.14.8:fast", r"--variants kueue@v0\.14\.8:fast: unknown rate limit 'fast' after ':' "
                               r"\(known: kueue-qps, unthrottled\)"),
        ("kueue@v0.14.8:fair-sharing", r"unknown rate limit 'fair-sharing'"),  # not a rate limit alone
        ("kueue@v0.14.8:", r"unknown rate limit ''"),
        ("kueue@v0.14:unthrottled", r"expected kueue@vMAJOR\.MINOR\.PATCH\[:RATE\]"),
    ],
)
def test_a_kueue_rate_limit_that_is_not_one_of_pykueues_is_refused_by_name(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        choose_variants([name], [])


def test_the_kueue_spelling_names_the_flag_it_came_from() -> None:
    with pytest.raises(ValueError, match=r"^--controller kueue@x: expected"):
        kueue_variant("kueue@x", flag="--controller")


def test_variant_names_become_path_safe_labels() -> None:
    assert path_safe("kueue@v0.14.8:unthrottled") == "kueue-v0.14.8-unthrottled"
    assert path_safe("kueue-qps@old,a b") == "kueue-qps-old-a-b"


def test_the_command_line_refuses_an_unknown_kueue_rate_before_touching_a_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert baseline.main(["--variants", "unthrottled,kueue@v0.14.8:turbo"]) == 2
    assert "--variants kueue@v0.14.8:turbo: unknown rate limit 'turbo'" in capsys.readouterr().err


def test_fair_sharing_is_kueues_qps_with_fair_sharing_on_and_runs_interleaved_with_it(tmp_path: Path) -> None:
    variants = choose_variants(["kueue-qps", "fair-sharing"], [SourceTree("old", tmp_path)])
    assert [v.name for v in variants] == ["kueue-qps", "kueue-qps@old", "fair-sharing", "fair-sharing@old"]
    fair, fair_old = variants[2], variants[3]
    assert (fair.qps, fair.burst) == (50.0, 100) == (VARIANTS["kueue-qps"].qps, VARIANTS["kueue-qps"].burst)
    assert fair.fair_sharing and fair_old.fair_sharing and fair_old.source_tree == tmp_path
    assert not variants[0].fair_sharing and fair.kueue_version is None
    order = plan_runs(choose_variants(["kueue-qps", "fair-sharing"], []), repeat=2)
    assert [(v.name, i) for v, i in order] == [
        ("kueue-qps", 0), ("fair-sharing", 0), ("kueue-qps", 1), ("fair-sharing", 1)
    ]


def test_only_the_fair_sharing_variant_gets_a_configuration_and_it_differs_from_the_defaults_there_only() -> None:
    assert controller_configuration(VARIANTS["kueue-qps"]) is None
    assert controller_configuration(VARIANTS["unthrottled"]) is None
    assert controller_configuration(choose_variants(["kueue@v0.14.8"], [])[0]) is None
    document = controller_configuration(VARIANTS["fair-sharing"])
    assert document is not None
    assert document["fairSharing"] == {
        "enable": True,
        "preemptionStrategies": [PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, PREEMPT_LESS_THAN_INITIAL_SHARE],
    }
    loaded = parse_config(yaml.safe_load(yaml.safe_dump(document)))
    assert loaded.fair_sharing == FairSharing(
        enable=True,
        preemption_strategies=(PREEMPT_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, PREEMPT_LESS_THAN_INITIAL_SHARE),
    )
    assert loaded == Configuration(fair_sharing=loaded.fair_sharing), "every other setting keeps its default"


def test_a_controller_with_a_configuration_is_started_with_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = fake_tree(tmp_path / "tree")
    report = tmp_path / "report.json"
    monkeypatch.setenv("FAKE_CONTROLLER_REPORT", str(report))
    document = controller_configuration(VARIANTS["fair-sharing"])
    process = ControllerProcess(
        "/nonexistent/kubeconfig", qps=50.0, burst=100, workdir=tmp_path, label="fair-sharing-0",
        source_tree=tree, config=document,
    )
    process.start()
    try:
        seen = json.loads(report.read_text())
    finally:
        process.stop()
    written = Path(seen["argv"][seen["argv"].index("--config") + 1])
    assert written.parent == tmp_path
    assert yaml.safe_load(written.read_text()) == document
    plain = ControllerProcess(
        "/nonexistent/kubeconfig", qps=50.0, burst=100, workdir=tmp_path, label="kueue-qps-0", source_tree=tree
    )
    plain.start()
    try:
        assert "--config" not in json.loads(report.read_text())["argv"]
    finally:
        plain.stop()
