"""Figures of one baseline run from its per-workload records, and their printed form.

Definitions follow Kueue's checker so the anchor values are comparable:

* **wall** — first create sent to last workload finished (Kueue times the minimalkueue process,
  which its runner stops once every workload finished; start-up is a few seconds of that);
* **time to admission** — create sent to the first watch event showing ``Admitted=True``; also
  from the workload's first watch event, which is Kueue's origin (its recorder never sees the
  create being sent);
* **ClusterQueue utilisation, ours** — cpu-seconds held by admitted workloads ÷ (nominal cpu of
  all ClusterQueues x wall), in percent;
* **ClusterQueue utilisation, Kueue's definition** — ClusterQueue *status* usage integrated over
  the queues' status events ÷ (summed nominal x the class's event window), per ClusterQueue class
  (:mod:`bench.baseline_cq`; the baseline has one class). This is the figure Kueue's 55.9 % is;
* **evictions** — admissions lost (ours) and rises of the ``Evicted`` condition (Kueue's count).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from .baseline_cq import ClusterQueueState, class_summaries, overall_utilisation_pct
from .baseline_driver import WorkloadRecord
from .baseline_shape import Shape
from .baseline_timeline import (
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

# Above this client QPS (the unthrottled variant) a share of the budget means nothing.
BUDGET_SHOWN_UP_TO_QPS = 1000.0


def _crossings(records: Sequence[WorkloadRecord]) -> dict[str, float | None]:
    """Where an eviction and a finish crossed (finished while evicted): the medians of how long
    after the runner sent ``Finished`` the driver saw ``Evicted``, and saw ``Finished`` itself
    (the finish patch's round trip). The first small against the second says the eviction was
    decided or written while the finish was in flight, not after it was visible."""
    to_evicted: list[float] = []
    to_finished: list[float] = []
    to_answered: list[float] = []
    for r in records:
        sent = r.finish_sent_at
        if not r.finished_while_evicted or sent is None or not r.evicted_at:
            continue
        to_evicted.append(r.evicted_at[-1] - sent)
        if r.finished_at is not None:
            to_finished.append(r.finished_at - sent)
        if r.finish_answered_at is not None:
            to_answered.append(r.finish_answered_at - sent)
    return {
        "crossing_finish_sent_to_evicted_seen_p50_s": _round(percentile(to_evicted, 0.5)),
        "crossing_finish_sent_to_finished_seen_p50_s": _round(percentile(to_finished, 0.5)),
        "crossing_finish_sent_to_answered_p50_s": _round(percentile(to_answered, 0.5)),
    }


def finish_round_trips(records: Sequence[WorkloadRecord]) -> dict[str, float | None]:
    """Over every workload whose Finished patch was answered and then watched: how long the patch
    took (sent to answered) and how long after the apiserver had answered the driver's own watch
    showed it (the driver's watch lag: the object was committed by then, so any delay after is in
    the watch path or this process)."""
    answered = [r for r in records if r.finish_sent_at is not None and r.finish_answered_at is not None]
    last_create = max((r.created_at for r in records if r.created_at is not None), default=math.inf)
    while_creating = [r for r in answered if r.finish_sent_at is not None and r.finish_sent_at <= last_create]
    return _trip_figures(answered, "") | _trip_figures(while_creating, "creating_")


def _trip_figures(answered: Sequence[WorkloadRecord], prefix: str) -> dict[str, float | None]:
    """p50/p99 of the request and of the watch over records whose Finished patch was answered."""
    request = [r.finish_answered_at - r.finish_sent_at for r in answered
               if r.finish_answered_at is not None and r.finish_sent_at is not None]
    watch = [max(0.0, r.finished_at - r.finish_answered_at) for r in answered
             if r.finished_at is not None and r.finish_answered_at is not None]
    return {
        f"{prefix}finish_request_p50_s": _round(percentile(request, 0.5)),
        f"{prefix}finish_request_p99_s": _round(percentile(request, 0.99)),
        f"{prefix}finish_answered_to_seen_p50_s": _round(percentile(watch, 0.5)),
        f"{prefix}finish_answered_to_seen_p99_s": _round(percentile(watch, 0.99)),
    }


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (``fraction`` in 0..1); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _round(value: float, digits: int = 2) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def lag_summary(samples: Sequence[float]) -> dict[str, float | None]:
    return {
        "p50_ms": _round(percentile(samples, 0.5) * 1000, 1),
        "p99_ms": _round(percentile(samples, 0.99) * 1000, 1),
        "max_ms": _round(max(samples, default=math.nan) * 1000, 1),
    }


def run_timeline(records: Sequence[WorkloadRecord], start: float) -> dict[str, Any]:
    """Creates, admissions and ``Evicted`` rises per window, in seconds from ``start``, with the
    median hold and turnaround of each window (:func:`loop_delays`)."""
    stamps: list[Stamp] = []
    for r in records:
        if r.created_at is not None:
            stamps.append(Stamp(r.created_at - start, CREATED, r.klass))
        stamps += [Stamp(at - start, ADMITTED, r.klass) for at in r.admitted_at]
        stamps += [Stamp(at - start, EVICTED, r.klass) for at in r.evicted_at]
    return as_json(build(stamps, delays=loop_delays(records, start)))


def loop_delays(records: Sequence[WorkloadRecord], start: float) -> list[Delay]:
    """The two delays of the quota's loop through the apiserver, as the driver's watch saw them.

    * hold: from a workload's last admission to its ``Finished``, less its runtime, dated at the
      finish;
    * turnaround: from a ``Finished`` in a queue to the next admission in that queue of a workload
      of the same class that was already waiting then, dated at the admission: the quota just
      freed fits it by itself, so the wait is the loop's, not a lack of quota. One per finish,
      the first such admission after it.
    """
    delays: list[Delay] = []
    finishes: dict[tuple[str, str], list[float]] = {}
    admissions: dict[tuple[str, str], list[tuple[float, float]]] = {}  # (queue, class) -> (admitted, seen)
    for r in records:
        if r.finished_at is not None and r.admitted_at and r.finished_at >= r.admitted_at[-1]:
            delays.append(Delay(r.finished_at - start, HOLD, r.finished_at - r.admitted_at[-1] - r.runtime_s))
            finishes.setdefault((r.queue, r.klass), []).append(r.finished_at)
        if r.first_seen_at is not None:
            seen = r.first_seen_at
            admissions.setdefault((r.queue, r.klass), []).extend((at, seen) for at in r.admitted_at)
    for queue, finished in finishes.items():
        finished.sort()
        admitted = sorted(admissions.get(queue, []))
        next_admission = 0
        for done in finished:
            while next_admission < len(admitted) and admitted[next_admission][0] < done:
                next_admission += 1
            for at, seen in admitted[next_admission:]:
                if seen < done:
                    delays.append(Delay(at - start, TURNAROUND, at - done))
                    break
    return delays


def summarise(
    records: Sequence[WorkloadRecord],
    shape: Shape,
    cluster_queues: Mapping[str, ClusterQueueState] | None = None,
) -> dict[str, Any]:
    """Wall time, per-class admission figures and both utilisations of one run (Kueue's needs the
    ClusterQueue recorder's states; without them its keys are None)."""
    created = [r.created_at for r in records if r.created_at is not None]
    finished = [r.finished_at for r in records if r.finished_at is not None]
    start = min(created, default=math.nan)
    end = max(finished, default=math.nan)
    wall = end - start if created and finished else math.nan
    classes: dict[str, Any] = {}
    for klass in shape.classes:
        mine = [r for r in records if r.klass == klass.name]
        waits = [
            r.first_admitted_at - r.created_at
            for r in mine
            if r.first_admitted_at is not None and r.created_at is not None
        ]
        waits_from_watch = [
            r.first_admitted_at - r.first_seen_at
            for r in mine
            if r.first_admitted_at is not None and r.first_seen_at is not None
        ]
        runs = [r.finished_at - r.created_at for r in mine if r.finished_at is not None and r.created_at is not None]
        classes[klass.name] = {
            "workloads": len(mine),
            "admitted": len(waits),
            "finished": len(runs),
            "evictions": sum(r.evictions for r in mine),
            "evicted_transitions": sum(r.evicted_transitions for r in mine),
            "finished_while_evicted": sum(r.finished_while_evicted for r in mine),
            **_crossings(mine),
            "mean_time_to_admission_s": _round(statistics.fmean(waits) if waits else math.nan),
            "mean_time_to_admission_from_watch_s": _round(
                statistics.fmean(waits_from_watch) if waits_from_watch else math.nan
            ),
            "p50_time_to_admission_s": _round(percentile(waits, 0.5)),
            "p90_time_to_admission_s": _round(percentile(waits, 0.9)),
            "mean_time_to_finish_s": _round(statistics.fmean(runs) if runs else math.nan),
        }
    cq_classes = class_summaries(cluster_queues) if cluster_queues else {}
    used = sum(r.used_cpu_seconds for r in records)
    capacity = shape.nominal_cpu * shape.cluster_queues * wall
    utilisation = 100.0 * used / capacity if capacity and not math.isnan(capacity) else math.nan
    return {
        "workloads": len(records),
        "finished": len(finished),
        "create_failures": sum(r.create_failed for r in records),
        "completed": bool(records) and len(finished) == len(records),
        "wall_s": _round(wall, 1),
        "cq_utilisation_pct": _round(utilisation, 1),
        "cq_utilisation_kueue_pct": overall_utilisation_pct(cq_classes) if cq_classes else None,
        "cq_classes_kueue": cq_classes,
        "classes": classes,
        "timeline": run_timeline(records, start) if created else None,
        "finish_round_trip": finish_round_trips(records),
    }


def median_of_runs(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the headline figures over repeated runs of one variant (None when missing)."""

    def median(values: list[Any]) -> float | None:
        numbers = [v for v in values if isinstance(v, int | float)]
        return round(statistics.median(numbers), 2) if numbers else None

    class_names = list(runs[0]["classes"]) if runs else []
    return {
        "runs": len(runs),
        "wall_s": median([r["wall_s"] for r in runs]),
        "cq_utilisation_pct": median([r["cq_utilisation_pct"] for r in runs]),
        "cq_utilisation_kueue_pct": median([r.get("cq_utilisation_kueue_pct") for r in runs]),
        "mean_time_to_admission_s": {
            name: median([r["classes"][name]["mean_time_to_admission_s"] for r in runs]) for name in class_names
        },
        "mean_time_to_admission_from_watch_s": {
            name: median([r["classes"][name].get("mean_time_to_admission_from_watch_s") for r in runs])
            for name in class_names
        },
        "evicted_transitions": {
            name: median([r["classes"][name].get("evicted_transitions") for r in runs]) for name in class_names
        },
        "controller_cpu_s": median([(r.get("controller") or {}).get("cpu_s") for r in runs]),
        "controller_peak_rss_mib": median([(r.get("controller") or {}).get("peak_rss_mib") for r in runs]),
        "apiserver_cpu_s": median([((r.get("control_plane") or {}).get("apiserver") or {}).get("cpu_s") for r in runs]),
    }


def _fmt(value: Any, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


UTILISATION_KUEUE = "ClusterQueue utilisation, Kueue's definition"
UTILISATION_OURS = "ClusterQueue utilisation, workload time"


def _recording_note(result: dict[str, Any]) -> str:
    """How much the Kueue-definition figure rests on: the integral is only as fine as the
    controller's ClusterQueue status writes, so their number is printed with it."""
    classes = result.get("cq_classes_kueue") or {}
    events = sum(c.get("status_events", 0) for c in classes.values())
    queues = sum(c.get("cluster_queues", 0) for c in classes.values())
    note = f"; {events} status events of {queues} ClusterQueues" if queues else "; no ClusterQueue events"
    if result.get("cq_recording_complete") is False:
        note += ", recording cut off before every ClusterQueue was idle"
    return note


def format_run(result: dict[str, Any], shape: Shape) -> str:
    """The human-readable block of one run (pykueue's or, for ``kueue@``, Kueue's manager), Kueue's
    published full-scale anchor values beside it."""
    anchor = shape.anchor
    limit = "client rate limit as started" if result["qps"] is None else f"qps {result['qps']:g}, burst {result['burst']}"
    width = 46
    nominal = shape.nominal_cpu * shape.cluster_queues
    lines = [
        f"== baseline {result['variant']} ({limit}), "
        f"{result['workloads']} workloads, {shape.cluster_queues} ClusterQueues, scale {result['scale']}",
        f"{'figure':<{width}}{'this run':>12}{'Kueue (full scale)':>22}",
        f"{'wall time':<{width}}{_fmt(result['wall_s'], ' s'):>12}{_fmt(anchor.wall_s, ' s'):>22}",
        f"{UTILISATION_KUEUE + ' [1]':<{width}}{_fmt(result.get('cq_utilisation_kueue_pct'), ' %'):>12}"
        f"{_fmt(anchor.cq_utilisation_pct, ' %'):>22}",
        f"{UTILISATION_OURS + ' [2]':<{width}}{_fmt(result['cq_utilisation_pct'], ' %'):>12}{'not published':>22}",
    ]
    for name, figures in result["classes"].items():
        kueue = anchor.mean_time_to_admission_s.get(name)
        lines.append(
            f"{'mean time to admission ' + name + ' [3]':<{width}}"
            f"{_fmt(figures.get('mean_time_to_admission_from_watch_s'), ' s', 2):>12}{_fmt(kueue, ' s'):>22}"
        )
        lines.append(
            f"{'  from create sent; p50 / p90':<{width}}{_fmt(figures['mean_time_to_admission_s'], ' s', 2):>12}"
            f"  ({_fmt(figures['p50_time_to_admission_s'], '', 2)} / "
            f"{_fmt(figures['p90_time_to_admission_s'], ' s', 2)})"
        )
        lines.append(
            f"{'  evictions: admissions lost / Evicted=True':<{width}}{figures['evictions']:>12}"
            f"  / {figures.get('evicted_transitions', 'n/a')}"
            f" ({figures.get('finished_while_evicted', 'n/a')} finished while evicted)"
        )
        if figures.get("finished_while_evicted"):
            lines.append(
                f"{'    finish sent -> Evicted / Finished seen, p50':<{width}}"
                f"{_fmt(figures.get('crossing_finish_sent_to_evicted_seen_p50_s'), ' s', 2):>12}"
                f"  / {_fmt(figures.get('crossing_finish_sent_to_finished_seen_p50_s'), ' s', 2)}"
                f"  (answered after {_fmt(figures.get('crossing_finish_sent_to_answered_p50_s'), ' s', 2)})"
            )
    controller = result.get("controller") or {}
    lines += [
        f"{'controller CPU':<{width}}{_fmt(controller.get('cpu_s'), ' s'):>12}"
        f"  ({_fmt(controller.get('cpu_cores'), ' cores', 2)} on average)",
        f"{'controller peak RSS':<{width}}{_fmt(controller.get('peak_rss_mib'), ' MiB'):>12}",
    ]
    for name, figures in (result.get("control_plane") or {}).items():
        lines.append(
            f"{name + ' CPU / peak RSS (since it started)':<{width}}{_fmt(figures.get('cpu_s'), ' s'):>12}"
            f"  ({_fmt(figures.get('cpu_cores'), ' cores', 2)} on average) / {_fmt(figures.get('peak_rss_mib'), ' MiB')}"
        )
    writes = result.get("apiserver_writes")
    if writes:
        total = sum(writes.values())
        per_workload = total / result["workloads"] if result["workloads"] else 0.0
        by_kind = ", ".join(f"{label} {count}" for label, count in writes.items())
        lines.append(
            f"{'controller writes, apiserver-counted [4]':<{width}}{total:>12}  "
            f"({per_workload:.2f} per workload: {by_kind})"
        )
    api = result.get("controller_api")
    if api:
        per_workload = api["total"] / result["workloads"] if result["workloads"] else 0.0
        verbs = ", ".join(f"{verb} {count}" for verb, count in api["requests_by_verb"].items())
        lines.append(
            f"{'controller API requests':<{width}}{api['total']:>12}  ({per_workload:.1f} per workload: {verbs}; "
            f"rate-limiter wait {api['rate_limiter_wait_s']} s summed over threads)"
        )
        latency = api.get("mean_latency_ms_by_verb") or {}
        if latency:
            lines.append(
                f"{'  mean API latency':<{width}}" + ", ".join(f"{verb} {ms} ms" for verb, ms in latency.items())
            )
        events = api.get("events") or {}
        if any(events.values()):
            parts = [
                f"{figure} {sum(values.values())} ({', '.join(f'{k} {v}' for k, v in values.items())})"
                if values
                else f"{figure} n/a"
                for figure, values in events.items()
            ]
            lines.append(f"{'controller Events':<{width}}" + "; ".join(parts))
        queue = api.get("event_queue") or {}
        if queue:
            lines.append(
                f"{'  Event queue wait p50 / p99 / max':<{width}}"
                f"{_fmt(queue.get('wait_p50_s'), '', 2)} / {_fmt(queue.get('wait_p99_s'), '', 2)} / "
                f"{_fmt(queue.get('wait_max_s'), ' s', 2)}  ({queue.get('taken', 0)} taken by a sender; "
                f"waiting at the end {queue.get('waiting_at_end', 'n/a')}, the oldest for "
                f"{_fmt(queue.get('oldest_waiting_at_end_s'), ' s', 2)}; at most {queue.get('waiting_peak', 'n/a')})"
            )
    driver = result.get("driver") or {}
    create_lag, finish_lag = driver.get("create_lag") or {}, driver.get("finish_lag") or {}
    lines.append(
        f"driver: cpu {_fmt(driver.get('cpu_s'), ' s')}, create lag p50/p99/max "
        f"{_fmt(create_lag.get('p50_ms'))}/{_fmt(create_lag.get('p99_ms'))}/{_fmt(create_lag.get('max_ms'))} ms, "
        f"finish lag p50/p99/max {_fmt(finish_lag.get('p50_ms'))}/{_fmt(finish_lag.get('p99_ms'))}/"
        f"{_fmt(finish_lag.get('max_ms'))} ms, errors {driver.get('errors', 0)}"
        + (
            f", evictions completed by the driver {driver['evictions_completed']}"
            f" (releases started by the resync, not by a watch event: {driver.get('evictions_resynced') or 0})"
            if driver.get("evictions_completed") is not None
            else ""
        )
    )
    trips = result.get("finish_round_trip") or {}
    if trips:
        def pair(name: str) -> str:
            return f"{_fmt(trips.get(name + '_p50_s'), '', 2)}/{_fmt(trips.get(name + '_p99_s'), ' s', 2)}"

        lines.append(
            f"driver: Finished patch sent -> answered p50/p99 {pair('finish_request')} "
            f"(while creating {pair('creating_finish_request')}), answered -> seen by its watch "
            f"{pair('finish_answered_to_seen')} (while creating {pair('creating_finish_answered_to_seen')})"
        )
    lines += [
        f"[1] ClusterQueue status usage (flavorsUsage) integrated over its status events / (summed nominal "
        f"x the ClusterQueues' event window), as Kueue's recorder{_recording_note(result)}",
        f"[2] cpu-seconds admitted workloads held / ({nominal} cpu nominal x wall)",
        "[3] from the workload's first watch event to the first with Admitted=True (Kueue's origin)",
    ]
    if writes:
        lines.append(
            "[4] the apiserver's apiserver_request_total over the load, writes to Kueue's kinds and Events, "
            "less the driver's own: the controller's, and the cluster components' few"
        )
    if result.get("timeline"):
        windows, width_s = from_json(result["timeline"])
        qps = result.get("qps")
        lines += [
            "per window (from the first create sent): admissions (re-admissions too), Evicted rises, creates"
            + ("; budget used = admissions / the client's QPS" if qps and qps <= BUDGET_SHOWN_UP_TO_QPS else ""),
            format_table(windows, [k.name for k in shape.classes], window_s=width_s,
                         budget_per_s=qps if qps and qps <= BUDGET_SHOWN_UP_TO_QPS else None),
        ]
    if not result["completed"]:
        lines.append(f"INCOMPLETE: {result['finished']} of {result['workloads']} finished before the timeout")
    return "\n".join(lines)
