"""Command line: ``python -m hack.localcluster up|down|status [--name N]``.

Failures a person can fix (missing Go, unreachable module proxy, a taken port, a component that
would not start) print one line and exit 1; they never show a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from .cluster import LocalCluster, default_cluster_name
from .errors import LocalClusterError


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m hack.localcluster", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument(
        "--name", default=None, help="cluster name (default: $PYKUEUE_CLUSTER_NAME, else 'pykueue')"
    )
    parser.add_argument(
        "--no-default-nodes", action="store_true", help="up: do not create the default simulated nodes"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="localcluster: %(message)s", stream=sys.stderr)
    try:
        cluster = LocalCluster(args.name or default_cluster_name())
        if args.command == "up":
            cluster.up(default_nodes=not args.no_default_nodes)
            print(f"export KUBECONFIG={cluster.kubeconfig}")
        elif args.command == "down":
            stopped = cluster.down()
            if not stopped:
                print(f"localcluster: no running processes of cluster {cluster.name!r}", file=sys.stderr)
        else:
            status = cluster.status()
            print(json.dumps(status, indent=2))
            return 0 if status["apiserver_ready"] else 3
    except LocalClusterError as err:
        print(f"localcluster: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("localcluster: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
