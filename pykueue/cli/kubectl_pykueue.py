"""``kubectl pykueue``: a kubectl plugin (the ``kubectl-pykueue`` entry point on PATH makes it one).

``kubectl pykueue pending -n NS [--cluster-queue CQ] [--local-queue LQ] [--limit N]`` lists pending
workloads with their positions, read from the visibility API through the apiserver (so the
caller's own RBAC applies: a batch user sees their namespace's LocalQueues, an admin a whole
ClusterQueue). Without ``--cluster-queue`` every LocalQueue of the namespace is shown.
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
    return parser


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
        return pending(client, args, sys.stdout)
    except ApiError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
