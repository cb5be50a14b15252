"""``kubectl pykueue``: a kubectl plugin (the ``kubectl-pykueue`` entry point on PATH makes it one).

``kubectl pykueue pending -n NS [--cluster-queue CQ] [--local-queue LQ] [--limit N]`` lists pending
workloads with their positions, read from the visibility API through the apiserver (so the
caller's own RBAC applies: a batch user sees their namespace's LocalQueues, an admin a whole
ClusterQueue). Without ``--cluster-queue`` every LocalQueue of the namespace is shown.

``kubectl pykueue explain -n NS job/NAME|workload/NAME`` says why the workload waits and what would
admit it (the ``workloads/explain`` subresource: a dry run of the scheduler's own code).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from pykueue.kube import resources as r
from pykueue.kube.client import KubeClient
from pykueue.kube.errors import ApiError

COLUMNS = ("NAMESPACE", "NAME", "LOCALQUEUE", "PRIORITY", "POSITION IN CQ", "POSITION IN LQ")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl pykueue", description="pykueue's kubectl plugin")
    parser.add_argument("--kubeconfig", default=None)
    commands = parser.add_subparsers(dest="command", required=True)
    pending = commands.add_parser("pending", help="pending workloads with their positions in the queue")
    pending.add_argument("-n", "--namespace", default="default")
    pending.add_argument("--cluster-queue", default=None, help="the whole ClusterQueue's view (needs the admin role)")
    pending.add_argument("--local-queue", default=None, help="one LocalQueue of the namespace")
    pending.add_argument("--limit", type=int, default=1000)
    pending.add_argument("--offset", type=int, default=0)
    why = commands.add_parser("explain", help="why a workload is pending and what would admit it")
    why.add_argument("-n", "--namespace", default="default")
    why.add_argument("target", help="job/NAME (a batch Job's Workload) or workload/NAME")
    return parser


def workload_name(client: Any, namespace: str, target: str) -> str:
    """The Workload a ``job/NAME`` or ``workload/NAME`` argument names."""
    kind, _, name = target.partition("/")
    if not name:
        raise SystemExit(f"error: {target!r}: expected job/NAME or workload/NAME")
    if kind.lower() in ("workload", "workloads", "wl"):
        return name
    if kind.lower() not in ("job", "jobs"):
        raise SystemExit(f"error: {kind!r}: only job/NAME and workload/NAME are supported")
    listed = client.list(r.WORKLOADS, namespace=namespace)
    for wl in listed.get("items") or []:
        for owner in wl["metadata"].get("ownerReferences") or []:
            if owner.get("kind") == "Job" and owner.get("name") == name:
                return str(wl["metadata"]["name"])
    raise SystemExit(f"error: no Workload of Job {namespace}/{name} (is it queued with kueue.x-k8s.io/queue-name?)")


def render_explanation(body: dict[str, Any], out: TextIO) -> None:
    meta = body.get("metadata") or {}
    out.write(f"Workload:      {meta.get('namespace')}/{meta.get('name')}\n")
    out.write(f"State:         {body.get('state')}\n")
    out.write(f"ClusterQueue:  {body.get('clusterQueue')}  (LocalQueue {body.get('localQueue')})\n")
    if not body.get("clusterQueueActive", True):
        inactive = body.get("clusterQueueInactive") or {}
        out.write(f"  inactive:    {inactive.get('reason')}: {inactive.get('message')}\n")
    if "positionInClusterQueue" in body:
        ahead = body.get("ahead") or {}
        first = ", ".join(f"{a['namespace']}/{a['name']}" for a in ahead.get("first") or [])
        out.write(f"Position:      {body['positionInClusterQueue']} ({ahead.get('count', 0)} ahead"
                  f"{': ' + first if first else ''})\n")
    dry = body.get("dryRun")
    if dry:
        out.write(f"Dry run:       {dry.get('outcome')}"
                  f"{' (' + dry['reason'] + ': ' + dry.get('message', '') + ')' if dry.get('reason') else ''}\n")
    resources = body.get("resources") or []
    if resources:
        out.write("Per flavor:\n")
        for res in resources:
            out.write(f"  {res['flavor']}/{res['resource']}: needs {res['requested']}, free {res['free']}, "
                      f"nominal {res['nominalQuota']}, cohort can lend {res['cohortCanLend']}, "
                      f"missing {res['missing']}\n")
    for victim in body.get("preemptionVictims") or []:
        out.write(f"Would preempt: {victim['namespace']}/{victim['name']} in {victim['clusterQueue']} "
                  f"({victim['reason']})\n")
    if body.get("admissionChecks"):
        out.write(f"Admission checks: {', '.join(body['admissionChecks'])}\n")
    for check in body.get("admissionCheckStates") or []:
        out.write(f"  {check.get('name')}: {check.get('state')}"
                  f"{' (' + check['message'] + ')' if check.get('message') else ''}\n")
    for option in body.get("options") or []:
        where = f", position {option['positionInClusterQueue']}" if "positionInClusterQueue" in option else ""
        out.write(f"Option:        {option.get('name')} ({', '.join(option.get('resourceFlavors') or [])}): "
                  f"{option.get('status')}{where}{' - ' + option['message'] if option.get('message') else ''}\n")
    if body.get("admissionBlockedBy"):
        waits = ", ".join(f"{w.get('namespace')}/{w.get('name')}" for w in body["admissionBlockedBy"])
        out.write(f"Admission waits for the pods of: {waits} (blockAdmission)\n")
    if body.get("excludedFlavors"):
        out.write(f"Excluded flavors (fallbacks): {', '.join(body['excludedFlavors'])}\n")
    render_multikueue(body.get("multiKueue"), out)
    out.write(f"To admit it:   {body.get('suggestion')}\n")


def render_multikueue(section: Any, out: TextIO) -> None:
    """The workers a MultiKueue manager dispatched the workload to, or nominated it for."""
    if not isinstance(section, dict):
        return
    winner = section.get("clusterName")
    out.write(f"MultiKueue:    check {section.get('admissionCheck')}, {section.get('dispatcher')}"
              f"{', dispatched to ' + winner if winner else ', not dispatched yet'}\n")
    for worker in section.get("workers") or []:
        facts = ["active" if worker.get("active") else "inactive"]
        facts += ["nominated"] if worker.get("nominated") else []
        facts += {True: ["copy created"], False: ["no copy"]}.get(worker.get("copy"), [])
        facts += ["quota reserved"] if worker.get("quotaReserved") else []
        facts += ["admitted"] if worker.get("admitted") else []
        facts += {True: ["Job created"], False: ["no Job"]}.get(worker.get("job"), [])
        out.write(f"  {worker.get('name')}: {', '.join(facts)}\n")


def explain(client: Any, args: argparse.Namespace, out: TextIO) -> int:
    name = workload_name(client, args.namespace, args.target)
    body = client.get_subresource(r.VISIBILITY_WORKLOADS, name, "explain", args.namespace)
    render_explanation(body, out)
    return 0


def rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            item["metadata"].get("namespace", ""),
            item["metadata"].get("name", ""),
            item.get("localQueueName", ""),
            str(item.get("priority", 0)),
            str(item.get("positionInClusterQueue", "")),
            str(item.get("positionInLocalQueue", "")),
        )
        for item in summary.get("items") or []
    ]


def print_table(table: Sequence[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(cell) for cell in column) for column in zip(COLUMNS, *table, strict=False)]
    for line in (COLUMNS, *table):
        out.write("   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() + "\n")


def pending(client: Any, args: argparse.Namespace, out: TextIO) -> int:
    query = [("limit", str(args.limit)), ("offset", str(args.offset))]
    if args.cluster_queue:
        summaries = [client.get_subresource(r.VISIBILITY_CLUSTER_QUEUES, args.cluster_queue, "pendingworkloads",
                                            query=query)]
    else:
        if args.local_queue:
            names = [args.local_queue]
        else:
            listed = client.list(r.LOCAL_QUEUES, namespace=args.namespace)
            names = sorted(lq["metadata"]["name"] for lq in listed.get("items") or [])
        summaries = [
            client.get_subresource(r.VISIBILITY_LOCAL_QUEUES, name, "pendingworkloads", args.namespace, query=query)
            for name in names
        ]
    table = [row for summary in summaries for row in rows(summary)]
    if not table:
        out.write("No pending workloads.\n")
        return 0
    print_table(table, out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    client = KubeClient.from_config(args.kubeconfig, user_agent="kubectl-pykueue")
    try:
        command = explain if args.command == "explain" else pending
        return command(client, args, sys.stdout)
    except ApiError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
