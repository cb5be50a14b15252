"""Hot spots from a py-spy profile in collapsed-stack form (``py-spy record --format raw``).

    python -m bench.profile_summary /tmp/prof/controller-kueue-qps-0.txt [--top 25]

Each input line is ``frame;frame;...;frame COUNT`` (outermost first). Printed: the functions
with the most samples *on top of the stack* (self time: where the CPU actually goes) and the
project functions (``controller/``, ``pykueue/``) with the most samples anywhere on the stack
(inclusive time: which of our steps the CPU is spent under). py-spy samples only threads that
are running (not idle), so the shares are of busy time.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROJECT_PATHS = ("controller/", "pykueue/")
_LINE = re.compile(r"^(?P<stack>.*) (?P<count>\d+)$")
# py-spy frame: "function (path/to/file.py:123)"; the line number is dropped so one function
# counts once however many of its lines were sampled.
_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^():]+)(?::\d+)?\)$")


@dataclass(frozen=True)
class Profile:
    total: int
    self_counts: Counter[str]
    inclusive_counts: Counter[str]


def frame_name(frame: str) -> str:
    """``function (file)`` with the file shortened to the part after site-packages or the repo."""
    match = _FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    path = match["file"]
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match['function']} ({path})"


def parse(lines: Iterable[str], thread: str | None = None) -> Profile:
    """Counts from collapsed stacks; with ``thread``, only stacks rooted at a thread whose name
    contains it (profiles recorded with ``py-spy --threads`` start with ``thread (id): name``)."""
    self_counts: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if not match:
            continue
        count = int(match["count"])
        raw_frames = [f for f in match["stack"].split(";") if f]
        if thread is not None and not (raw_frames and raw_frames[0].startswith("thread (") and thread in raw_frames[0]):
            continue
        frames = [frame_name(f) for f in raw_frames if not f.startswith("thread (")]
        if not frames:
            continue
        total += count
        self_counts[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    return Profile(total, self_counts, inclusive)


def is_project(name: str) -> bool:
    return any(f"({path}" in name for path in PROJECT_PATHS)


def report(profile: Profile, top: int) -> str:
    if profile.total == 0:
        return "no samples"
    lines = [f"{profile.total} samples", "", "self time (top of stack):"]
    for name, count in profile.self_counts.most_common(top):
        lines.append(f"  {100 * count / profile.total:5.1f}%  {name}")
    lines += ["", "inclusive time, project functions:"]
    project = [(n, c) for n, c in profile.inclusive_counts.most_common() if is_project(n)]
    for name, count in project[:top]:
        lines.append(f"  {100 * count / profile.total:5.1f}%  {name}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.profile_summary", description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="py-spy raw (collapsed stacks) output")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--thread", help="only threads whose name contains this (wall profiles)")
    args = parser.parse_args(argv)
    try:
        with args.profile.open(encoding="utf-8", errors="replace") as fh:
            profile = parse(fh, args.thread)
    except OSError as err:
        print(f"bench.profile_summary: {args.profile}: {err.strerror}", file=sys.stderr)
        return 2
    print(report(profile, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
