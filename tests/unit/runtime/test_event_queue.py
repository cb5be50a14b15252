"""The Event queue's entries: what one costs in memory, the object reference rebuilt from it, and
the emit times it carries (the Event's timestamps and its wait)."""

from __future__ import annotations

from bench.event_queue_memory import bytes_per_entry
from controller.runtime.event_queue import ENTRY_BYTES, PendingEvents, _similar_key
from controller.runtime.events import MAX_QUEUED, reference
from tests.builders import WorkloadBuilder


class WallClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_waiting_event_costs_at_most_entry_bytes_its_strings_included() -> None:
    measured = bytes_per_entry(5_000)
    assert 0 < measured <= ENTRY_BYTES, f"{measured:.0f} B per entry: MAX_QUEUED is sized from ENTRY_BYTES"
    assert MAX_QUEUED * ENTRY_BYTES <= 92 * 1024 * 1024, "the waiting room stays under the 92 MiB it is sized for"


def test_an_entry_rebuilds_its_objects_reference_from_its_strings() -> None:
    pending = PendingEvents(4)
    wl = WorkloadBuilder("wl", "ns").obj()
    wl["metadata"].update(uid="u-1", resourceVersion="42")
    pending.put(reference(wl), "Normal", "QuotaReserved", "m", "pykueue-controller")
    entry = pending.get()
    assert entry is not None
    assert entry.involved == {
        "apiVersion": wl["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "uid": "u-1", "resourceVersion": "42"},
    }
    assert (entry.component, entry.type, entry.reason, entry.message) == (
        "pykueue-controller",
        "Normal",
        "QuotaReserved",
        "m",
    )
    assert not hasattr(entry, "__dict__"), "entries have slots: no per-entry dictionary"


def test_a_folded_repeat_keeps_the_first_emit_time_and_moves_the_latest() -> None:
    clock = WallClock()
    pending = PendingEvents(4, clock=clock)
    wl = reference(WorkloadBuilder("wl", "ns").obj())
    first = clock.now
    pending.put(wl, "Warning", "Pending", "no quota", "c")
    clock.now += 30
    outcome = pending.put(wl, "Warning", "Pending", "no quota", "c")
    assert outcome.merged and outcome.added == 0
    entry = pending.get()
    assert entry is not None
    assert (entry.first_emitted, entry.last_emitted, entry.repeats) == (first, first + 30, 2)


def test_outcome_added_counts_only_a_new_entry_that_shed_nothing() -> None:
    pending = PendingEvents(1)
    a = reference(WorkloadBuilder("a", "ns").obj())
    b = reference(WorkloadBuilder("b", "ns").obj())
    assert pending.put(a, "Normal", "R", "m", "c").added == 1
    assert pending.put(a, "Normal", "R", "m", "c").added == 0, "merged"
    shed = pending.put(b, "Normal", "R", "m", "c")
    assert shed.shed_reason is not None and shed.added == 0, "one in, one out"
    assert len(pending) == 1


def test_a_message_holding_the_key_separator_keeps_every_field_in_place() -> None:
    pending = PendingEvents(4)
    wl = reference(WorkloadBuilder("wl", "ns").obj())
    pending.put(wl, "Warning", "Pending", "before\x00after", "c")
    entry = pending.get()
    assert entry is not None
    assert (entry.component, entry.type, entry.reason) == ("c", "Warning", "Pending")
    assert entry.message == "before\ufffdafter", "the NUL is replaced, the rest of the message kept"
    assert entry.involved["metadata"]["name"] == "wl"


def test_an_index_entry_of_another_object_is_never_superseded() -> None:
    pending = PendingEvents(1)
    a = reference(WorkloadBuilder("a", "ns").obj())
    b = reference(WorkloadBuilder("b", "ns").obj())
    pending.put(a, "Normal", "QuotaReserved", "first", "c")
    # Point b's slot of the similar index at a's entry, as a hash collision would.
    (a_key,) = pending._similar.values()
    pending._similar = {hash(_similar_key(b, "c", "Normal", "QuotaReserved")): a_key}
    outcome = pending.put(b, "Normal", "QuotaReserved", "second", "c")
    assert outcome.shed_reason == "queue_full_normal", "a's Event shed as the oldest, not as superseded by b's"
