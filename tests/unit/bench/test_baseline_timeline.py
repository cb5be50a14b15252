"""Per-window counts of a baseline run: what shows where the write budget went."""

from __future__ import annotations

import pytest

from bench.baseline_timeline import (
    ADMITTED,
    CREATED,
    EVICTED,
    HOLD,
    TURNAROUND,
    Delay,
    Stamp,
    as_json,
    build,
    format_table,
    from_json,
)


def test_windows_count_per_kind_and_class_and_keep_idle_windows() -> None:
    stamps = [
        Stamp(0.5, CREATED, "small"),
        Stamp(1.0, ADMITTED, "small"),
        Stamp(9.99, ADMITTED, "large"),
        Stamp(25.0, EVICTED, "medium"),  # the 10-20 s window saw nothing and is still listed
        Stamp(-0.2, CREATED, "large"),  # a stamp a little before the start counts in the first window
    ]
    windows = build(stamps, 10.0)
    assert [w.start_s for w in windows] == [0.0, 10.0, 20.0]
    assert windows[0].counts[CREATED] == {"small": 1, "large": 1}
    assert windows[0].counts[ADMITTED] == {"small": 1, "large": 1}
    assert windows[0].total(ADMITTED) == 2
    assert windows[1].total(ADMITTED) == windows[1].total(EVICTED) == windows[1].total(CREATED) == 0
    assert windows[2].counts[EVICTED] == {"medium": 1}


def test_no_stamps_no_windows_and_bad_input_is_refused() -> None:
    assert build([], 10.0) == []
    with pytest.raises(ValueError, match="window_s must be positive"):
        build([Stamp(1.0, ADMITTED, "small")], 0)
    with pytest.raises(ValueError, match="unknown stamp kind 'finished'"):
        build([Stamp(1.0, "finished", "small")], 10.0)


def test_the_json_form_round_trips_and_prints_the_budget_share() -> None:
    stamps = [Stamp(float(i) / 10, ADMITTED, "small") for i in range(250)]  # 25 s of 10 admissions/s
    stamps.append(Stamp(3.0, EVICTED, "large"))
    data = as_json(build(stamps, 10.0), 10.0)
    assert data["rows"][0] == {"from_s": 0.0, "created": {}, "admitted": {"small": 100}, "evicted": {"large": 1},
                               "hold_s": None, "turnaround_s": None}
    windows, width = from_json(data)
    assert width == 10.0
    assert [w.counts for w in windows] == [w.counts for w in build(stamps, 10.0)]
    table = format_table(windows, ["small", "medium", "large"], window_s=width, budget_per_s=50.0)
    first, _second, third = table.splitlines()[1:]
    assert "10.0" in first and "100/0/0" in first and "0/0/1" in first and first.endswith("20%")
    assert third.split()[1] == "5.0"  # the last window holds the 50 admissions from 20 to 25 s
    assert "budget used" not in format_table(windows, ["small"], window_s=width)
    assert "hold/turnaround" not in table  # no window has a delay (as in the replay's timelines)


def test_delays_are_kept_per_window_and_reported_as_medians() -> None:
    delays = [Delay(1.0, HOLD, 0.5), Delay(2.0, HOLD, 3.5), Delay(3.0, HOLD, 1.0), Delay(15.0, TURNAROUND, 0.25)]
    windows = build([Stamp(1.0, ADMITTED, "large")], 10.0, delays)
    assert len(windows) == 2  # a delay alone opens its window
    assert windows[0].median(HOLD) == 1.0 and windows[0].median(TURNAROUND) is None
    assert windows[1].median(TURNAROUND) == 0.25
    data = as_json(windows, 10.0)
    assert [(row["hold_s"], row["turnaround_s"]) for row in data["rows"]] == [(1.0, None), (None, 0.25)]
    back, _ = from_json(data)
    assert [w.median(HOLD) for w in back] == [1.0, None]
    table = format_table(back, ["large"], window_s=10.0).splitlines()
    assert "hold/turnaround p50" in table[0]
    assert table[1].endswith("1.00 / - s") and table[2].endswith("- / 0.25 s")
    with pytest.raises(ValueError, match="unknown delay kind 'wait'"):
        build([], 10.0, [Delay(1.0, "wait", 1.0)])


def test_a_summary_from_before_delays_were_recorded_reads_back_without_them() -> None:
    windows, _ = from_json({"window_s": 10.0, "rows": [{"from_s": 0.0, "admitted": {"small": 3}}]})
    assert windows[0].total(ADMITTED) == 3 and windows[0].median(HOLD) is None
