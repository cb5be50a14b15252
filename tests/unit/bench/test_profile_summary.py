"""Hot spots from collapsed stacks (py-spy's raw format)."""

from __future__ import annotations

from pathlib import Path

from bench.profile_summary import frame_name, main, parse, report

STACKS = [
    "run (threading.py:1010);step (/work/main/controller/core/scheduler.py:160);schedule (/work/main/controller/engine/engine.py:300) 6\n",
    "run (threading.py:1010);step (/work/main/controller/core/scheduler.py:161);loads (/usr/lib/python3.11/json/__init__.py:346) 3\n",
    "run (threading.py:1010);wait (threading.py:320) 1\n",
    "not a stack line\n",
]


def test_frame_names_drop_line_numbers_and_shorten_paths() -> None:
    assert frame_name("step (/work/main/controller/core/scheduler.py:160)") == "step (controller/core/scheduler.py)"
    assert frame_name("get (/x/.venv/lib/python3.11/site-packages/urllib3/pool.py:7)") == "get (urllib3/pool.py)"
    assert frame_name("<module>") == "<module>"


def test_self_and_inclusive_counts() -> None:
    profile = parse(STACKS)
    assert profile.total == 10
    assert profile.self_counts["schedule (controller/engine/engine.py)"] == 6
    # two lines of the same function count once per stack, and inclusively over both stacks
    assert profile.inclusive_counts["step (controller/core/scheduler.py)"] == 9
    text = report(profile, top=5)
    assert "60.0%  schedule (controller/engine/engine.py)" in text
    assert "90.0%  step (controller/core/scheduler.py)" in text
    assert "threading.py" not in text.split("inclusive time")[1], "only project functions are listed inclusively"


def test_command_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "profile.txt"
    path.write_text("".join(STACKS))
    assert main([str(path), "--top", "3"]) == 0
    assert "10 samples" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.txt")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_wall_profiles_can_be_narrowed_to_one_thread() -> None:
    stacks = [
        "thread (11): scheduler;run (threading.py:1);_apply (/work/main/controller/core/scheduler.py:9);wait (threading.py:3) 8\n",
        "thread (12): admission-write_0;run (threading.py:1);emit (/work/main/controller/core/events.py:4) 5\n",
        "thread (13): admission-write_1;run (threading.py:1);patch (/work/main/pykueue/kube/client.py:4) 3\n",
    ]
    scheduler = parse(stacks, thread="): scheduler")
    assert scheduler.total == 8
    assert scheduler.inclusive_counts["_apply (controller/core/scheduler.py)"] == 8
    writers = parse(stacks, thread="admission-write")
    assert writers.total == 8
    assert writers.inclusive_counts["emit (controller/core/events.py)"] == 5
    assert not any(name.startswith("thread (") for name in writers.inclusive_counts)
