"""pykueue-controller command line and Configuration mapping."""

from __future__ import annotations

import pytest

from controller.main import build_parser, election_config, parse_duration, run_setup_modules


def args(*argv: str):
    return build_parser().parse_args(list(argv))


def test_interface_flags_parse() -> None:
    parsed = args(
        "--config", "/c.yaml", "--kubeconfig", "/k", "--namespace", "ns", "--no-leader-elect",
        "--health-addr", "0.0.0.0:1", "--metrics-addr", "0.0.0.0:2", "--log-format", "text",
        "--qps", "5", "--burst", "7", "--identity", "me",
    )
    assert parsed.leader_elect is False and parsed.qps == 5.0 and parsed.burst == 7
    assert parsed.identity == "me" and parsed.namespace == "ns"


def test_election_defaults_are_client_go_timings() -> None:
    config = election_config(None, args("--namespace", "ns"), "me")
    assert config is not None
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)
    assert config.lease_namespace == "ns" and config.identity == "me"


def test_election_reads_the_configuration_section() -> None:
    section = {"leaderElect": True, "leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "1s500ms",
               "resourceName": "my-lease", "resourceNamespace": "elsewhere"}
    config = election_config({"leaderElection": section}, args(), "me")
    assert config is not None
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (30.0, 20.0, 1.5)
    assert (config.lease_name, config.lease_namespace) == ("my-lease", "elsewhere")


def test_flag_overrides_configuration_and_disables_election() -> None:
    assert election_config({"leaderElection": {"leaderElect": True}}, args("--no-leader-elect"), "me") is None
    assert election_config({"leaderElection": {"leaderElect": False}}, args(), "me") is None


def test_bad_durations_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"leaderElection\.leaseDuration: invalid duration"):
        election_config({"leaderElection": {"leaseDuration": "fifteen"}}, args(), "me")
    with pytest.raises(ValueError, match="leaseDuration must be greater"):
        election_config({"leaderElection": {"leaseDuration": "5s"}}, args(), "me")
    with pytest.raises(ValueError, match="must be positive"):
        parse_duration(0, "x")


def test_missing_setup_module_is_skipped_but_broken_one_fails(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    assert run_setup_modules(object(), ("controller.no_such_area.setup",)) == []  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        run_setup_modules(object(), ("controller.runtime.signals",))  # exists, has no setup()
    assert "no setup module; skipping" in caplog.text


def test_election_reads_pykueue_api_configuration_dataclass() -> None:
    from dataclasses import dataclass

    @dataclass
    class LeaderElection:
        leader_elect: bool = True
        resource_name: str = "lease-x"
        resource_namespace: str | None = None
        lease_duration_seconds: float = 40.0
        renew_deadline_seconds: float = 30.0
        retry_period_seconds: float = 5.0

    @dataclass
    class Configuration:
        leader_election: LeaderElection

    config = election_config(Configuration(LeaderElection()), args("--namespace", "ns"), "me")
    assert config is not None
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (40.0, 30.0, 5.0)
    assert (config.lease_name, config.lease_namespace) == ("lease-x", "ns")


def test_real_configuration_defaults_map_to_client_go_timings() -> None:
    from controller.main import load_configuration

    config = election_config(load_configuration(None), args("--namespace", "ns"), "me")
    assert config is not None
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)
