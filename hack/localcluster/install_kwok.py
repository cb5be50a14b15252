"""Command line for the in-cluster kwok: ``python -m hack.localcluster.install_kwok STEP``.

The steps `hack/e2e-deploy.sh install-kwok` runs, in this order::

    manifests          print the kwok objects (YAML) for `kubectl apply -f -`
    patch-daemonsets   keep every DaemonSet's pods off simulated nodes (--kubeconfig)
    default-nodes      create the local cluster's default simulated node pools and wait until
                       they are Ready (--kubeconfig)

Errors a person can fix print one line and exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .errors import LocalClusterError
from .external import ExistingCluster
from .incluster_kwok import daemonset_patch, kwok_manifests, render
from .nodes import DEFAULT_NODE_POOLS

STEPS = ("manifests", "patch-daemonsets", "default-nodes")
NODES_READY_TIMEOUT = 120.0


def patch_daemonsets(cluster: ExistingCluster) -> list[str]:
    """Patch each DaemonSet whose pods could land on a simulated node; return `namespace/name`s."""
    listed = json.loads(cluster.kubectl("get", "daemonsets", "--all-namespaces", "-o", "json").stdout)
    patched = []
    for daemonset in listed["items"]:
        patch = daemonset_patch(daemonset)
        if patch is None:
            continue
        meta = daemonset["metadata"]
        cluster.kubectl(
            "-n",
            meta["namespace"],
            "patch",
            "daemonset",
            meta["name"],
            "--type=merge",
            "-p",
            json.dumps(patch),
        )
        patched.append(f"{meta['namespace']}/{meta['name']}")
    return patched


def create_default_nodes(cluster: ExistingCluster) -> list[str]:
    """The node pools every local cluster starts with (two flavours of capacity), Ready."""
    names: list[str] = []
    for prefix, count, labels in DEFAULT_NODE_POOLS:
        names += cluster.create_nodes(prefix, count, labels, wait=False)
    for prefix, count, _ in DEFAULT_NODE_POOLS:
        cluster.wait_nodes_ready(prefix, [f"{prefix}-{i}" for i in range(count)], NODES_READY_TIMEOUT)
    return names


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hack.localcluster.install_kwok", description=__doc__.splitlines()[0]
    )
    parser.add_argument("step", choices=STEPS)
    parser.add_argument("--kubeconfig", help="cluster to act on (patch-daemonsets, default-nodes)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.step == "manifests":
            sys.stdout.write(render(kwok_manifests()))
            return 0
        if not args.kubeconfig:
            print(f"install_kwok: {args.step} needs --kubeconfig", file=sys.stderr)
            return 1
        cluster = ExistingCluster(args.kubeconfig)
        if args.step == "patch-daemonsets":
            patched = patch_daemonsets(cluster)
            print(f"install_kwok: kept off simulated nodes: {', '.join(patched) or 'nothing to patch'}")
        else:
            names = create_default_nodes(cluster)
            print(f"install_kwok: simulated nodes Ready: {', '.join(names)}")
    except LocalClusterError as err:
        print(f"install_kwok: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
