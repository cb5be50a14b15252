"""pykueue-controller command line and Configuration mapping: flags win, else the Configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import controller.main as main_module
from controller.main import (
    EXIT_BAD_CONFIGURATION,
    build_parser,
    client_limits,
    election_config,
    listeners,
    load_configuration,
    run_setup_modules,
    tuning_overrides,
)
from pykueue.api.config import ConfigError, Configuration, parse_config
from pykueue.kube.client import KubeClient

HEADER = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"}


def args(*argv: str):
    return build_parser().parse_args(list(argv))


def config(**fields: Any) -> Configuration:
    return parse_config({**HEADER, **fields})


def test_interface_flags_parse() -> None:
    parsed = args(
        "--config", "/c.yaml", "--kubeconfig", "/k", "--namespace", "ns", "--no-leader-elect",
        "--health-addr", "0.0.0.0:1", "--metrics-addr", "0.0.0.0:2", "--log-format", "text",
        "--qps", "5", "--burst", "7", "--identity", "me",
    )
    assert parsed.leader_elect is False and parsed.qps == 5.0 and parsed.burst == 7
    assert parsed.identity == "me" and parsed.namespace == "ns"


def test_preemption_grace_flag_takes_non_negative_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    assert args().preemption_grace_seconds is None  # the controller's default applies
    assert args("--preemption-grace-seconds", "0").preemption_grace_seconds == 0.0
    assert args("--preemption-grace-seconds", "2.5").preemption_grace_seconds == 2.5
    for bad, why in (("-1", "must not be negative, got '-1'"), ("soon", "not a number of seconds: 'soon'"),
                     ("nan", "must not be negative, got 'nan'")):
        with pytest.raises(SystemExit):
            args("--preemption-grace-seconds", bad)
        assert f"argument --preemption-grace-seconds: {why}" in capsys.readouterr().err


def test_tuning_flags_reach_the_setup_modules_only_when_given() -> None:
    assert tuning_overrides(args()) == {}
    assert tuning_overrides(args("--preemption-grace-seconds", "0", "--multikueue-incremental-round-seconds", "7")) == {
        "preemption-grace-seconds": 0.0,
        "multikueue-incremental-round-seconds": 7.0,
    }


def test_election_defaults_are_client_go_timings() -> None:
    election = election_config(Configuration(), args("--namespace", "ns"), "me")
    assert election is not None
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)
    assert election.lease_namespace == "ns" and election.identity == "me"
    assert election.lease_name == "pykueue-controller-leader"


def test_election_reads_the_configuration_section() -> None:
    section = {"leaderElect": True, "leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "1s500ms",
               "resourceName": "my-lease", "resourceNamespace": "elsewhere"}
    election = election_config(config(leaderElection=section), args(), "me")
    assert election is not None
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (30.0, 20.0, 1.5)
    assert (election.lease_name, election.lease_namespace) == ("my-lease", "elsewhere")


def test_flag_overrides_configuration_and_disables_election() -> None:
    assert election_config(config(leaderElection={"leaderElect": True}), args("--no-leader-elect"), "me") is None
    assert election_config(config(leaderElection={"leaderElect": False}), args(), "me") is None
    assert election_config(config(leaderElection={"leaderElect": False}), args("--leader-elect"), "me") is not None


def test_bad_durations_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({**HEADER, "leaderElection": {"leaseDuration": "fifteen"}}))
    with pytest.raises(ConfigError, match=r"leaderElection\.leaseDuration"):
        load_configuration(str(path))
    path.write_text(json.dumps({**HEADER, "leaderElection": {"leaseDuration": "5s"}}))
    with pytest.raises(ConfigError, match=r"leaderElection\.renewDeadline.*less than leaseDuration"):
        load_configuration(str(path))


def test_client_limits_flag_wins_else_client_connection_else_kueue_default() -> None:
    assert client_limits(Configuration(), args()) == main_module.ClientLimits(20.0, 30)
    configured = config(clientConnection={"qps": 7, "burst": 9})
    assert client_limits(configured, args()) == main_module.ClientLimits(7.0, 9)
    assert client_limits(configured, args("--qps", "50")) == main_module.ClientLimits(50.0, 9)
    assert client_limits(configured, args("--qps", "50", "--burst", "100")) == main_module.ClientLimits(50.0, 100)


def test_listeners_flag_wins_else_configuration_else_kueue_default() -> None:
    assert listeners(Configuration(), args()) == main_module.Listeners(health=":8081", metrics=":8080")
    configured = config(metrics={"bindAddress": "127.0.0.1:9090"}, health={"healthProbeBindAddress": ":9091"})
    assert listeners(configured, args()) == main_module.Listeners(health=":9091", metrics="127.0.0.1:9090")
    assert listeners(configured, args("--metrics-addr", "0")) == main_module.Listeners(health=":9091", metrics="0")
    assert listeners(configured, args("--health-addr", ":1")).health == ":1"


def test_a_bad_bind_address_names_where_it_came_from() -> None:
    with pytest.raises(ValueError, match=r"^metrics\.bindAddress: address 'nowhere:x'"):
        listeners(config(metrics={"bindAddress": "nowhere:x"}), args())
    with pytest.raises(ValueError, match=r"^health\.healthProbeBindAddress: .*between 0 and 65535"):
        listeners(config(health={"healthProbeBindAddress": ":70000"}), args())
    with pytest.raises(ValueError, match=r"^--metrics-addr: "):
        listeners(Configuration(), args("--metrics-addr", "x:y"))


class _Started(Exception):
    """Raised by the fake Controller: main() got as far as wiring the process."""


def _start(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> dict[str, Any]:
    """Run main() until it builds the Controller; returns what the client and listeners got."""
    seen: dict[str, Any] = {}

    def from_config(kubeconfig: str | None = None, *, qps: float, burst: int, user_agent: str) -> KubeClient:
        return KubeClient(object(), qps=qps, burst=burst)  # type: ignore[arg-type]

    def fake_controller(client: KubeClient, **kwargs: Any) -> None:
        seen.update(kwargs, client=client)
        raise _Started

    monkeypatch.setattr(main_module.KubeClient, "from_config", staticmethod(from_config))
    monkeypatch.setattr(main_module, "Controller", fake_controller)
    with pytest.raises(_Started):
        main_module.main(argv)
    return seen


def test_configuration_reaches_the_token_bucket_and_the_listeners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({
        **HEADER,
        "clientConnection": {"qps": 7, "burst": 9},
        "metrics": {"bindAddress": "127.0.0.1:0"},
        "health": {"healthProbeBindAddress": ":0"},
    }))
    seen = _start(monkeypatch, ["--config", str(path), "--no-leader-elect"])
    bucket = seen["client"]._bucket
    assert (bucket.qps, bucket.burst) == (7.0, 9)
    assert (seen["health_addr"], seen["metrics_addr"]) == (":0", "127.0.0.1:0")
    assert seen["config"].client_connection.qps == 7.0

    seen = _start(monkeypatch, ["--config", str(path), "--no-leader-elect", "--qps", "3", "--burst", "4",
                                "--metrics-addr", "0"])
    bucket = seen["client"]._bucket
    assert (bucket.qps, bucket.burst) == (3.0, 4)
    assert (seen["health_addr"], seen["metrics_addr"]) == (":0", "0")


def test_every_multikueue_dispatcher_starts_the_controller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.yaml"
    for dispatcher in ("kueue.x-k8s.io/multikueue-dispatcher-incremental", "example.com/my-dispatcher"):
        path.write_text(json.dumps({**HEADER, "multiKueue": {"dispatcherName": dispatcher}}))
        seen = _start(monkeypatch, ["--config", str(path), "--no-leader-elect",
                                    "--multikueue-incremental-round-seconds", "7"])  # fmt: skip
        assert seen["config"].multi_kueue.dispatcher_name == dispatcher


def test_an_invalid_configuration_stops_the_start_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def must_not_connect(*_: Any, **__: Any) -> None:
        raise AssertionError("the client must not be built for an invalid Configuration")

    monkeypatch.setattr(main_module.KubeClient, "from_config", staticmethod(must_not_connect))
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({**HEADER, "multiKueue": {"dispatcherName": "incremental"}}))
    caplog.set_level("ERROR")
    assert main_module.main(["--config", str(path), "--log-format", "text"]) == EXIT_BAD_CONFIGURATION != 0
    error = caplog.records[-1].error  # type: ignore[attr-defined]
    assert error.startswith("multiKueue.dispatcherName: ") and "domain-prefixed path" in error
    assert "\n" not in error


def test_missing_setup_module_is_skipped_but_broken_one_fails(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    assert run_setup_modules(object(), ("controller.no_such_area.setup",)) == []  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        run_setup_modules(object(), ("controller.runtime.signals",))  # exists, has no setup()
    assert "no setup module; skipping" in caplog.text


def test_real_configuration_defaults_map_to_client_go_timings() -> None:
    election = election_config(load_configuration(None), args("--namespace", "ns"), "me")
    assert election is not None
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)


def test_events_spend_the_spare_part_of_the_one_client_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _start(monkeypatch, ["--no-leader-elect", "--qps", "5", "--burst", "6"])
    bucket = seen["client"]._bucket
    event_client = seen["event_broadcaster"].correlator._client
    assert event_client._bucket is bucket, "clientConnection.qps bounds Events too, as Kueue's one rate limiter"
    assert event_client._acquire == bucket.acquire_spare, "Events take only what admissions leave over"
    assert seen["client"]._acquire == bucket.acquire
