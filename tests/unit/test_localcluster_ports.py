"""Loopback port picking and the port-in-use check."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from hack.localcluster.errors import PrerequisiteError
from hack.localcluster.ports import parse_port, pick_free_ports, port_in_use, require_free


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_picked_ports_are_distinct_and_bindable() -> None:
    ports = pick_free_ports(6)
    assert len(set(ports)) == 6
    for port in ports:
        assert not port_in_use(port)


def test_a_listening_port_is_in_use(listening_port: int) -> None:
    assert port_in_use(listening_port)


def test_require_free_names_the_taken_port_and_where_it_was_pinned(listening_port: int) -> None:
    with pytest.raises(PrerequisiteError) as err:
        require_free([("$PYKUEUE_APISERVER_PORT", listening_port)])
    message = str(err.value)
    assert f"port {listening_port}" in message
    assert "$PYKUEUE_APISERVER_PORT" in message
    assert "\n" not in message


def test_require_free_accepts_free_ports() -> None:
    require_free([("test", port) for port in pick_free_ports(2)])


@pytest.mark.parametrize("value", ["abc", "0", "70000", ""])
def test_parse_port_rejects_non_ports(value: str) -> None:
    with pytest.raises(PrerequisiteError, match="PYKUEUE_APISERVER_PORT"):
        parse_port(value, "PYKUEUE_APISERVER_PORT")


def test_parse_port_accepts_a_port() -> None:
    assert parse_port("6443", "X") == 6443
