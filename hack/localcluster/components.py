"""Command lines of the control-plane processes.

Pure functions from (layout, ports, binaries) to ProcessSpec, so the flags can be read and unit
tested in one place. The flags follow what kubeadm configures, reduced to a single loopback
host, plus the inflight limits Kueue uses for its performance runs.
"""

from __future__ import annotations

import os

from .binaries import BinarySet
from .layout import ClusterLayout, Ports
from .pki import APISERVER_ETCD_CLIENT, FRONT_PROXY_CLIENT, SERVICE_CLUSTER_IP_RANGE
from .ports import LOOPBACK
from .processes import ProcessSpec

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Pod IPs handed out by kwok: a /16 so large benchmark runs do not exhaust the pool.
POD_CIDR = "10.244.0.0/16"
# kwok manages only nodes carrying this annotation, so a shared or external cluster's real
# nodes are never touched.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
# Set to 1 to serve the apiserver's /debug/pprof (off otherwise, as a hardened control plane has
# it): the benchmarks' way to see where the apiserver's CPU goes under load.
APISERVER_PROFILING_ENV = "PYKUEUE_APISERVER_PROFILING"


def _spec(name: str, layout: ClusterLayout, argv: list[str]) -> ProcessSpec:
    return ProcessSpec(
        name=name,
        argv=tuple(argv),
        marker=str(layout.root),
        log_path=layout.log_file(name),
        pid_path=layout.pid_file(name),
    )


def etcd(layout: ClusterLayout, ports: Ports, binaries: BinarySet, cluster_name: str) -> ProcessSpec:
    """A single-member etcd serving clients over TLS with client-certificate auth.

    fsync is disabled: the data is throwaway, and on a shared dev disk fsync latency would
    dominate every write the benchmarks make.
    """
    pki = layout.pki
    client_url = f"https://{LOOPBACK}:{ports.etcd_client}"
    peer_url = f"http://{LOOPBACK}:{ports.etcd_peer}"
    return _spec(
        "etcd",
        layout,
        [
            str(binaries["etcd"]),
            f"--name={cluster_name}",
            f"--data-dir={layout.etcd_data}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster={cluster_name}={peer_url}",
            "--initial-cluster-state=new",
            f"--cert-file={pki.etcd_cert}",
            f"--key-file={pki.etcd_key}",
            f"--trusted-ca-file={pki.ca_cert}",
            "--client-cert-auth=true",
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ],
    )


def kube_apiserver(layout: ClusterLayout, ports: Ports, binaries: BinarySet) -> ProcessSpec:
    """The apiserver on loopback only, with RBAC + Node authorisation and a service-account issuer.

    The endpoint reconciler is off because it refuses to publish a loopback address as the
    `kubernetes` Service endpoint; nothing in this cluster reaches the apiserver through that
    Service (there is no pod network).
    """
    pki = layout.pki
    return _spec(
        "kube-apiserver",
        layout,
        [
            str(binaries["kube-apiserver"]),
            f"--etcd-servers=https://{LOOPBACK}:{ports.etcd_client}",
            f"--etcd-cafile={pki.ca_cert}",
            f"--etcd-certfile={pki.client_cert(APISERVER_ETCD_CLIENT)}",
            f"--etcd-keyfile={pki.client_key(APISERVER_ETCD_CLIENT)}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={ports.apiserver}",
            f"--tls-cert-file={pki.apiserver_cert}",
            f"--tls-private-key-file={pki.apiserver_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--authorization-mode=Node,RBAC",
            "--anonymous-auth=false",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--endpoint-reconciler-type=none",
            # The aggregation layer (pykueue's visibility API is an APIService): the front proxy's
            # client certificate, and the headers an aggregated server may trust from it.
            f"--requestheader-client-ca-file={pki.front_proxy_ca_cert}",
            f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki.front_proxy_client_cert}",
            f"--proxy-client-key-file={pki.front_proxy_client_key}",
            "--max-requests-inflight=5000",
            "--max-mutating-requests-inflight=2500",
            "--allow-privileged=true",
            f"--profiling={'true' if os.environ.get(APISERVER_PROFILING_ENV) == '1' else 'false'}",
            "--v=1",
        ],
    )


def kube_controller_manager(layout: ClusterLayout, ports: Ports, binaries: BinarySet) -> ProcessSpec:
    """The controller manager with per-controller service-account credentials (as kubeadm does).

    That needs the service-account signing key and the root CA: the token controller then works,
    namespaces get their `default` ServiceAccount and Jobs create Pods.
    """
    pki = layout.pki
    kubeconfig = layout.component_kubeconfig("kube-controller-manager")
    return _spec(
        "kube-controller-manager",
        layout,
        [
            str(binaries["kube-controller-manager"]),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={ports.controller_manager}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}",
            f"--cluster-signing-key-file={pki.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--controllers=*,-node-ipam-controller,-node-route-controller,-service-lb-controller",
            # Client rate limits well above the defaults (20/30): the benchmarks create thousands of
            # Jobs, and the Job controller must not be the bottleneck being measured.
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            "--profiling=false",
            "--v=1",
        ],
    )


def kube_scheduler(layout: ClusterLayout, ports: Ports, binaries: BinarySet) -> ProcessSpec:
    kubeconfig = layout.component_kubeconfig("kube-scheduler")
    return _spec(
        "kube-scheduler",
        layout,
        [
            str(binaries["kube-scheduler"]),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={ports.scheduler}",
            "--leader-elect=false",
            # Every pod binding is an API call; the default 50 QPS would throttle benchmark runs.
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            "--profiling=false",
            "--v=1",
        ],
    )


def kwok(layout: ClusterLayout, ports: Ports, binaries: BinarySet) -> ProcessSpec:
    """kwok plays the kubelet of every node annotated `kwok.x-k8s.io/node=fake`, and no other."""
    return _spec(
        "kwok",
        layout,
        [
            str(binaries["kwok"]),
            f"--kubeconfig={layout.component_kubeconfig('kwok')}",
            f"--config={layout.kwok_config}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_ANNOTATION_VALUE}",
            # Renew each node's Lease like a kubelet; without it the node-lifecycle controller marks
            # the nodes NotReady (and their pods not Ready) after its 50s grace period.
            "--node-lease-duration-seconds=40",
            f"--cidr={POD_CIDR}",
            "--node-ip=10.240.0.1",
            f"--server-address={LOOPBACK}:{ports.kwok}",
        ],
    )
