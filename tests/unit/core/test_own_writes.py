"""Read-your-own-writes over the cache: our write is used only while the cache still shows the
exact version it replaced; anything else the cache shows wins."""

from __future__ import annotations

from controller.core.own_writes import OwnWrites


def _wl(rv: str, **status: object) -> dict:
    return {"metadata": {"namespace": "ns", "name": "w", "resourceVersion": rv}, "status": dict(status)}


def test_our_write_stands_in_for_the_version_it_replaced() -> None:
    own = OwnWrites()
    before, written = _wl("10"), _wl("11", admission={"clusterQueue": "cq"})
    own.record("ns/w", before, written)
    assert own.current("ns/w", _wl("10")) is written


def test_the_echo_or_anything_newer_wins_and_drops_the_record() -> None:
    own = OwnWrites()
    own.record("ns/w", _wl("10"), _wl("11"))
    newer = _wl("12")
    assert own.current("ns/w", newer) is newer
    assert len(own) == 0
    assert own.current("ns/w", _wl("10"))["metadata"]["resourceVersion"] == "10", "record gone"


def test_the_informer_prunes_records_and_deletion_forgets_them() -> None:
    own = OwnWrites()
    own.record("ns/w", _wl("10"), _wl("11"))
    own.observed("ns/w", _wl("10"))  # the version we replaced, delivered late: keep the record
    assert len(own) == 1
    own.observed("ns/w", _wl("11"))  # our echo
    assert len(own) == 0
    own.record("ns/w", _wl("11"), _wl("12"))
    own.observed("ns/w", None)
    assert len(own) == 0
    assert own.current("ns/w", None) is None


def test_objects_without_a_resource_version_are_not_recorded() -> None:
    own = OwnWrites()
    own.record("ns/w", {"metadata": {}}, _wl("11"))
    assert len(own) == 0
