"""Concurrent admission end to end (docs/design/concurrent-admission.md): one test per user story.

Real Jobs run on simulated nodes, one node per flavor, so where a Job runs is read from its pods.
The webhook and the controller run as in production. "Quota frees up on a flavor" is modelled by
raising that flavor's nominal quota in the ClusterQueue: for the scheduler it is the same event
as another job finishing (free quota appears and parked workloads are requeued), and it keeps
each story to the one job it is about.

Throughout every test a watcher follows the namespace's Workloads through a watch stream (so it
sees every state the apiserver stored, in order) and records any moment at which two options of
one parent were Admitted, and any sibling that kept a reservation next to an admitted option for
longer than the few seconds the option controller needs to take it back (options reserve quota
and race their checks; the first to be Admitted wins and the others give their quota back); the
test fails if it saw one. After every test the admission invariants
are checked by the shared fixture, and each story checks that the parent's ``status.options``
agrees with the options themselves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException

from tests.builders import (
    AdmissionCheckBuilder,
    JobBuilder,
    LocalQueueBuilder,
    ResourceFlavorBuilder,
    SeedClusterQueueBuilder,
    WorkloadBuilder,
    WorkloadPriorityClassBuilder,
)
from tests.e2e.fixtures.controller import ControllerHandle
from tests.e2e.helpers.check_controller import flavor_check_controller
from tests.e2e.helpers.invariants import check_cluster
from tests.e2e.helpers.kueue import GROUP, VERSION, KueueApi, condition, holds_quota, is_true, unique
from tests.e2e.helpers.wait import wait_for

FLAVOR_LABEL = "pykueue.dev/e2e-flavor"
PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
CONVERGE = 60  # seconds: admission, a stop and a restart of a Job on the simulated nodes


# --- the continuous "one holder per parent" watcher ----------------------------------------------


def _controller_workload_owner(wl: dict[str, Any]) -> str | None:
    for ref in wl["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Workload":
            return str(ref.get("uid"))
    return None


# What bounds a loser's reservation next to the winner: the winner's Admitted write reaches the
# option controller through its watch, and one reconcile of the parent deactivates the loser and,
# in the next write, evicts it and releases its quota (OptionController._give_back: it never
# ran, so nothing waits for pods). Two API writes after one watch event, then the watch event
# that shows this watcher the release. Well under a second on an idle machine; the grace leaves
# room for a loaded one (two cores shared by the apiserver, etcd and both of our processes).
# Longer than this next to an admitted sibling is a violation.
LOSER_RELEASE_GRACE = 5.0


class HolderWatcher(threading.Thread):
    """Follows every Workload of a namespace; records each moment two options of a parent are
    Admitted, and each sibling reservation left next to an admitted option past the grace."""

    def __init__(self, kube: k8s.ApiClient, namespace: str) -> None:
        super().__init__(name=f"holder-watcher-{namespace}", daemon=True)
        self.custom = k8s.CustomObjectsApi(kube)
        self.namespace = namespace
        self.stopping = threading.Event()
        self.objects: dict[str, dict[str, Any]] = {}
        self.violations: list[str] = []
        self.events_seen = 0
        self.max_holders = 0
        self.overlap_since: dict[str, float] = {}  # parent -> when a sibling held quota next to its winner
        self.longest_overlap = 0.0  # seconds, the longest such moment seen
        self.admitted_ever: dict[str, set[str]] = {}  # parent uid -> every option seen Admitted
        self.error: BaseException | None = None

    def _check(self) -> None:
        by_parent: dict[str, list[dict[str, Any]]] = {}
        for wl in self.objects.values():
            parent = _controller_workload_owner(wl)
            if parent and holds_quota(wl) and not is_true(wl, "Finished"):
                by_parent.setdefault(parent, []).append(wl)
        now = time.monotonic()
        for parent in set(self.overlap_since) - set(by_parent):
            del self.overlap_since[parent]
        for parent, holding in by_parent.items():
            names = sorted(wl["metadata"]["name"] for wl in holding)
            admitted = [wl["metadata"]["name"] for wl in holding if is_true(wl, "Admitted")]
            self.admitted_ever.setdefault(parent, set()).update(admitted)
            self.max_holders = max(self.max_holders, len(names))
            if len(admitted) > 1:
                self.violations.append(f"parent {parent}: {sorted(admitted)} admitted at the same time")
            if admitted and len(names) > 1:
                since = self.overlap_since.setdefault(parent, now)
                self.longest_overlap = max(self.longest_overlap, now - since)
                if now - since > LOSER_RELEASE_GRACE:
                    self.violations.append(
                        f"parent {parent}: {names} hold quota next to the admitted {admitted[0]} "
                        f"for more than {LOSER_RELEASE_GRACE}s"
                    )
            else:
                self.overlap_since.pop(parent, None)

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                listing = self.custom.list_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, "workloads"
                )
                self.objects = {wl["metadata"]["name"]: wl for wl in listing["items"]}
                self._check()
                version = listing["metadata"]["resourceVersion"]
                while not self.stopping.is_set():
                    stream = watch.Watch().stream(
                        self.custom.list_namespaced_custom_object,
                        GROUP,
                        VERSION,
                        self.namespace,
                        "workloads",
                        resource_version=version,
                        timeout_seconds=2,
                        allow_watch_bookmarks=True,
                    )
                    try:
                        for event in stream:
                            obj = event["object"]
                            version = obj["metadata"]["resourceVersion"]
                            if event["type"] == "BOOKMARK":
                                continue
                            self.events_seen += 1
                            if event["type"] == "DELETED":
                                self.objects.pop(obj["metadata"]["name"], None)
                            else:
                                self.objects[obj["metadata"]["name"]] = obj
                            self._check()
                            if self.stopping.is_set():
                                break
                    except ApiException as err:
                        if err.status == 410:
                            break  # relist
                        raise
        except BaseException as err:  # reported by the fixture, never silently lost
            if not self.stopping.is_set():
                self.error = err

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)


# --- the stories' world ---------------------------------------------------------------------------


class World:
    """Flavors pinned to their own simulated node, a concurrent-admission ClusterQueue, Jobs."""

    def __init__(self, cluster: Any, kube: k8s.ApiClient, kueue: KueueApi, namespace: str) -> None:
        self.cluster = cluster
        self.kueue = kueue
        self.namespace = namespace
        self.batch = k8s.BatchV1Api(kube)
        self.core = k8s.CoreV1Api(kube)
        self.flavor: dict[str, str] = {}  # story name ("spot") -> ResourceFlavor name
        self.node_prefixes: list[str] = []
        self.queues: dict[str, str] = {}  # LocalQueue -> ClusterQueue
        self.expects_holders = True  # a story where no option ever holds quota says so
        self.watcher: HolderWatcher | None = None  # set by the fixture

    # flavors and queues
    def flavors(self, *names: str, nodes: bool = True) -> None:
        """``nodes=False``: no node yet (an autoscaler provisions them)."""
        for name in names:
            actual = unique(name)
            if nodes:
                prefix = unique(f"n-{name}")[:40]
                self.cluster.create_nodes(prefix, 1, labels={FLAVOR_LABEL: actual})
                self.node_prefixes.append(prefix)
            self.kueue.create(ResourceFlavorBuilder(actual).node_labels(**{FLAVOR_LABEL: actual}).obj())
            self.flavor[name] = actual

    def cluster_queue(
        self,
        policy: str,
        quotas: dict[str, dict[str, str]],
        *,
        target: str | None = None,
        explicit: Sequence[tuple[str, list[str], dict[str, int]]] = (),
        checks: dict[str, str] | None = None,
        local_queue: str = "lq",
        preemption: str | None = None,
    ) -> str:
        """``quotas``: story flavor -> {resource: nominal}; ``explicit``: (name, flavors, delays)."""
        name = unique("cq")
        builder = SeedClusterQueueBuilder(name).concurrent(
            policy, target=self.flavor[target] if target else None
        )
        for flavor, resources in quotas.items():
            builder.flavor(self.flavor[flavor], **resources)
        for option, flavors, delays in explicit:
            builder.option(option, *(self.flavor[f] for f in flavors), **delays)
        if preemption:
            builder.preemption(within_cluster_queue=preemption)
        for check, flavor in (checks or {}).items():
            builder.admission_check_strategy(check, self.flavor[flavor])
        self.kueue.create(builder.obj())
        self.kueue.create(LocalQueueBuilder(local_queue, self.namespace, name).obj())
        self.queues[local_queue] = name
        return name

    def set_quota(self, flavor: str, resource: str, nominal: str, local_queue: str = "lq") -> None:
        name = self.queues[local_queue]
        cq = self.kueue.get("ClusterQueue", name)
        assert cq is not None
        groups = cq["spec"]["resourceGroups"]
        for group in groups:
            for entry in group["flavors"]:
                if entry["name"] == self.flavor[flavor]:
                    for res in entry["resources"]:
                        if res["name"] == resource:
                            res["nominalQuota"] = nominal
        self.kueue.patch("ClusterQueue", name, {"spec": {"resourceGroups": groups}})

    # jobs, parents, options
    def job(self, name: str, local_queue: str = "lq", priority_class: str | None = None) -> None:
        job = JobBuilder(name, self.namespace).queue(local_queue).requests(cpu="1").run_seconds(-1)
        if priority_class:
            job.workload_priority_class(priority_class)
        self.batch.create_namespaced_job(self.namespace, job.obj())

    def run_job(self, name: str, flavor: str, local_queue: str = "lq", priority_class: str | None = None) -> dict[str, Any]:
        """Submit Job ``name``, wait until it runs on ``flavor``; its parent workload."""
        self.job(name, local_queue=local_queue, priority_class=priority_class)
        parent = self.parent_of_job(name)
        self.wait_running_on(name, flavor)
        return parent

    def priority_classes(self, **values: int) -> list[str]:
        """A WorkloadPriorityClass of each value, named uniquely after its keyword; their names."""
        names = []
        for prefix, value in values.items():
            names.append(unique(prefix))
            self.kueue.create(WorkloadPriorityClassBuilder(names[-1], value).obj())
        return names

    def parent_of_job(self, job: str) -> dict[str, Any]:
        uid = self.batch.read_namespaced_job(job, self.namespace).metadata.uid

        def find() -> dict[str, Any] | None:
            for wl in self.kueue.workloads(self.namespace):
                owners = wl["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == uid for r in owners) and wl["metadata"].get("labels", {}).get(
                    PARENT_LABEL
                ):
                    return wl
            return None

        return wait_for(find, timeout=CONVERGE, message=f"the workload of job {job} becomes a Parent")

    def refresh(self, wl: dict[str, Any]) -> dict[str, Any]:
        return self.kueue.workload(self.namespace, wl["metadata"]["name"])

    def options(self, parent: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Existing options of ``parent`` by their suffix (flavor story name or option name)."""
        uid = parent["metadata"]["uid"]
        by_actual = {v: k for k, v in self.flavor.items()}
        result = {}
        for wl in self.kueue.workloads(self.namespace):
            if _controller_workload_owner(wl) == uid and not wl["metadata"].get("deletionTimestamp"):
                suffix = wl["metadata"]["name"].rsplit("-option-", 1)[1]
                result[by_actual.get(suffix, suffix)] = wl
        return result

    def active_options(self, parent: dict[str, Any]) -> set[str]:
        """Suffixes of the options not deactivated (removed options are deactivated, not deleted)."""
        return {k for k, wl in self.options(parent).items() if (wl.get("spec") or {}).get("active", True)}

    def holder(self, parent: dict[str, Any]) -> str | None:
        """The option the Job follows: the Admitted one holding quota (the race's winner)."""
        holding = [name for name, wl in self.options(parent).items() if holds_quota(wl) and is_true(wl, "Admitted")]
        assert len(holding) <= 1, f"two options are admitted: {holding}"
        return holding[0] if holding else None

    def reserving(self, parent: dict[str, Any]) -> set[str]:
        return {name for name, wl in self.options(parent).items() if holds_quota(wl)}

    def running_on(self, job: str) -> str | None:
        """The story flavor all of the Job's live pods run on (None while none runs / mixed)."""
        pods = self.core.list_namespaced_pod(
            self.namespace, label_selector=f"batch.kubernetes.io/job-name={job}"
        ).items
        live = [
            p
            for p in pods
            if p.status.phase not in ("Succeeded", "Failed") and not p.metadata.deletion_timestamp
        ]
        if not live or any(p.status.phase != "Running" for p in live):
            return None
        values = {(p.spec.node_selector or {}).get(FLAVOR_LABEL) for p in live}
        nodes = {p.spec.node_name for p in live}
        if len(values) != 1 or not all(nodes):
            return None
        actual = values.pop()
        return next((k for k, v in self.flavor.items() if v == actual), None)

    def wait_running_on(self, job: str, flavor: str) -> None:
        wait_for(
            lambda: self.running_on(job) == flavor,
            timeout=CONVERGE,
            message=lambda: f"job {job} runs on {flavor} nodes (now {self.running_on(job)})",
        )

    def option_statuses(self, parent: dict[str, Any]) -> dict[str, str]:
        by_actual = {v: k for k, v in self.flavor.items()}
        entries = (self.refresh(parent).get("status") or {}).get("options") or []
        return {
            by_actual.get(s, s): e["status"] for e in entries for s in [e["name"].rsplit("-option-", 1)[1]]
        }

    def wait_option_statuses(self, parent: dict[str, Any], expected: dict[str, str]) -> None:
        wait_for(
            lambda: self.option_statuses(parent) == expected,
            timeout=CONVERGE,
            message=lambda: f"status.options reads {expected} (now {self.option_statuses(parent)})",
        )
        wait_for(
            lambda: self.truthful(parent), timeout=CONVERGE, message="status.options agrees with the options"
        )

    def truthful(self, parent: dict[str, Any]) -> bool:
        """Every option that exists is listed with the state its own conditions show; every listed
        option that does not exist is Removed or not created yet."""
        statuses = self.option_statuses(parent)
        options = self.options(parent)
        for suffix, wl in options.items():
            if not (wl.get("spec") or {}).get("active", True):
                want = "Evicted" if holds_quota(wl) else "Removed"
            elif holds_quota(wl):
                want = "Admitted" if is_true(wl, "Admitted") and not is_true(wl, "Evicted") else None
                want = want or ("Evicted" if is_true(wl, "Evicted") else "QuotaReserved")
            else:
                want = "Evicted" if is_true(wl, "Evicted") else "Pending"
            if statuses.get(suffix) != want:
                return False
        return all(state in ("Removed", "Pending") for s, state in statuses.items() if s not in options)

    def events(self, kind: str, name: str) -> list[str]:
        items = self.core.list_namespaced_event(
            self.namespace, field_selector=f"involvedObject.name={name},involvedObject.kind={kind}"
        ).items
        return [e.reason for e in items]

    def close(self) -> None:
        for prefix in self.node_prefixes:
            self.cluster.delete_nodes(prefix)


def stays(predicate: Callable[[], bool], seconds: float, message: str) -> None:
    """``predicate`` holds at every poll for ``seconds`` (a deadline-bounded negative check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), message
        time.sleep(0.3)


@pytest.fixture
def world(
    cluster: Any, kube: k8s.ApiClient, kueue: KueueApi, namespace: str, webhook: Any
) -> Iterator[World]:
    watcher = HolderWatcher(kube, namespace)
    watcher.start()
    env = World(cluster, kube, kueue, namespace)
    env.watcher = watcher
    try:
        yield env
    finally:
        watcher.stop()
        env.close()
    assert watcher.error is None, f"the holder watcher failed: {watcher.error!r}"
    assert watcher.events_seen > 0, "the holder watcher saw no workload event at all"
    if env.expects_holders:
        assert watcher.max_holders >= 1, "the holder watcher never saw an option holding quota"
    print(f"longest loser reservation next to a winner: {watcher.longest_overlap:.2f}s")
    assert not watcher.violations, "options of one parent broke the race rules:\n" + "\n".join(watcher.violations)


def _cpu(*flavors_and_quota: tuple[str, str]) -> dict[str, dict[str, str]]:
    return {flavor: {"cpu": quota} for flavor, quota in flavors_and_quota}


# --- Story 1: RemoveLower --------------------------------------------------------------------------


def test_story1_remove_lower_migrates_spot_to_on_demand_to_reservation(world: World) -> None:
    world.flavors("reservation", "on-demand", "spot")
    world.cluster_queue("RemoveLower", _cpu(("reservation", "0"), ("on-demand", "0"), ("spot", "4")))
    parent = world.run_job("train", "spot")
    world.wait_option_statuses(parent, {"reservation": "Pending", "on-demand": "Pending", "spot": "Admitted"})
    spot_option = world.options(parent)["spot"]["metadata"]["name"]

    world.set_quota("on-demand", "cpu", "4")
    world.wait_running_on("train", "on-demand")
    world.wait_option_statuses(parent, {"reservation": "Pending", "on-demand": "Admitted", "spot": "Removed"})
    wait_for(lambda: "EvictedDueToFlavorMigration" in world.events("Workload", spot_option),
             message="the Spot option's EvictedDueToFlavorMigration Event")

    world.set_quota("reservation", "cpu", "4")
    world.wait_running_on("train", "reservation")
    world.wait_option_statuses(parent, {"reservation": "Admitted", "on-demand": "Removed", "spot": "Removed"})
    # The parent mirrors its winner: kubectl get workloads shows the job admitted on Reservation.
    winner = world.options(parent)["reservation"]
    wait_for(
        lambda: (world.refresh(parent).get("status") or {}).get("admission") == winner["status"]["admission"]
        and is_true(world.refresh(parent), "Admitted"),
        timeout=CONVERGE,
        message="the parent shows the winner's admission",
    )


# --- Story 2: RemoveBelowTarget ----------------------------------------------------------------------


def test_story2_remove_below_target_migrates_only_to_the_reservation(world: World) -> None:
    world.flavors("reservation", "on-demand", "spot")
    world.cluster_queue(
        "RemoveBelowTarget",
        _cpu(("reservation", "0"), ("on-demand", "0"), ("spot", "4")),
        target="reservation",
    )
    parent = world.run_job("train", "spot")
    # On-Demand is below the target: its option is removed as soon as the job runs on Spot.
    world.wait_option_statuses(parent, {"reservation": "Pending", "on-demand": "Removed", "spot": "Admitted"})

    world.set_quota("on-demand", "cpu", "4")
    stays(
        lambda: world.holder(parent) == "spot" and world.running_on("train") == "spot",
        6,
        "On-Demand freeing up must not move the job",
    )

    world.set_quota("reservation", "cpu", "4")
    world.wait_running_on("train", "reservation")
    world.wait_option_statuses(parent, {"reservation": "Admitted", "on-demand": "Removed", "spot": "Removed"})


# --- Story 3: Reservation + homogeneous 2a/2b/2c -----------------------------------------------------


def test_story3_no_migration_among_homogeneous_flavors_but_to_the_reservation(world: World) -> None:
    world.flavors("reservation", "2a", "2b", "2c")
    world.cluster_queue(
        "RemoveBelowTarget",
        _cpu(("reservation", "0"), ("2a", "0"), ("2b", "4"), ("2c", "0")),
        target="reservation",
    )
    parent = world.run_job("train", "2b")
    world.wait_option_statuses(
        parent, {"reservation": "Pending", "2a": "Removed", "2b": "Admitted", "2c": "Removed"}
    )
    world.set_quota("2a", "cpu", "4")
    stays(
        lambda: world.holder(parent) == "2b" and world.running_on("train") == "2b",
        6,
        "2a freeing up must not move the job off 2b",
    )
    world.set_quota("reservation", "cpu", "4")
    world.wait_running_on("train", "reservation")
    world.wait_option_statuses(
        parent, {"reservation": "Admitted", "2a": "Removed", "2b": "Removed", "2c": "Removed"}
    )


# --- Story 4: RemoveOther ----------------------------------------------------------------------------


def test_story4_remove_other_first_admitted_option_wins_and_the_others_disappear(world: World) -> None:
    world.flavors("1a", "1b", "1c")
    world.cluster_queue("RemoveOther", _cpu(("1a", "0"), ("1b", "4"), ("1c", "4")))
    parent = world.run_job("train", "1b")
    world.wait_option_statuses(parent, {"1a": "Removed", "1b": "Admitted", "1c": "Removed"})
    wait_for(
        lambda: world.active_options(parent) == {"1b"}, timeout=CONVERGE, message="only the winner is left active"
    )
    assert set(world.options(parent)) == {"1a", "1b", "1c"}, "removed options are deactivated, not deleted"
    world.set_quota("1a", "cpu", "4")
    stays(
        lambda: world.active_options(parent) == {"1b"} and world.running_on("train") == "1b",
        5,
        "RemoveOther never re-creates options or migrates while the winner runs",
    )
    wait_for(lambda: "RemovedOption" in world.events("Workload", parent["metadata"]["name"]),
             message="the parent's RemovedOption Event")


# --- Story 5: createDelaySeconds --------------------------------------------------------------------


def test_story5_create_delay_adds_the_on_demand_option_only_after_the_delay(world: World) -> None:
    world.flavors("reservation", "on-demand")
    delay = 8
    world.cluster_queue(
        "RemoveLower",
        _cpu(("reservation", "0"), ("on-demand", "4")),
        explicit=[
            ("reservation", ["reservation"], {}),
            ("on-demand", ["on-demand"], {"create_delay": delay}),
        ],
    )
    world.job("train")
    parent = world.parent_of_job("train")
    wait_for(
        lambda: "reservation" in world.options(parent),
        timeout=CONVERGE,
        message="the reservation option exists",
    )
    assert "on-demand" not in world.options(parent), "the delayed option exists too early"

    def delayed_entry() -> dict[str, Any] | None:
        entries = (world.refresh(parent).get("status") or {}).get("options") or []
        return next((e for e in entries if e["name"].endswith("-option-on-demand")), None)

    entry = wait_for(delayed_entry, timeout=CONVERGE, message="status.options lists the delayed option")
    assert entry["status"] == "Pending" and "createDelaySeconds" in entry["message"]
    assert "on-demand" not in world.options(parent), "the delayed option exists too early"
    assert world.running_on("train") is None

    on_demand = wait_for(
        lambda: world.options(parent).get("on-demand"),
        timeout=CONVERGE,
        message="the on-demand option appears after the delay",
    )
    created = datetime.fromisoformat(on_demand["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    parent_created = datetime.fromisoformat(parent["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    assert (created - parent_created).total_seconds() >= delay - 1  # timestamps have 1 s precision
    world.wait_running_on("train", "on-demand")
    world.wait_option_statuses(parent, {"reservation": "Pending", "on-demand": "Admitted"})


# --- Story 6: deleteDelaySeconds -----------------------------------------------------------------------


def test_story6_migration_happens_inside_the_delete_delay_window_and_not_after(world: World) -> None:
    world.flavors("reservation", "on-demand")
    window = 12
    explicit = [("reservation", ["reservation"], {"delete_delay": window}), ("on-demand", ["on-demand"], {})]
    quotas = _cpu(("reservation", "0"), ("on-demand", "4"))
    world.cluster_queue("RemoveLower", quotas, explicit=explicit, local_queue="inside")
    world.cluster_queue("RemoveLower", quotas, explicit=explicit, local_queue="after")

    # Inside the window: Reservation frees up while its option still exists -> migration.
    early = world.run_job("early", "on-demand", local_queue="inside")
    world.set_quota("reservation", "cpu", "4", local_queue="inside")
    world.wait_running_on("early", "reservation")
    world.wait_option_statuses(early, {"reservation": "Admitted", "on-demand": "Removed"})

    # After the window: the reservation option is gone, so freeing Reservation changes nothing.
    late = world.run_job("late", "on-demand", local_queue="after")
    world.wait_option_statuses(late, {"reservation": "Removed", "on-demand": "Admitted"})
    message = next(e["message"] for e in world.refresh(late)["status"]["options"] if e["status"] == "Removed")
    assert "deleteDelaySeconds" in message
    world.set_quota("reservation", "cpu", "4", local_queue="after")
    stays(
        lambda: world.holder(late) == "on-demand" and world.running_on("late") == "on-demand",
        6,
        "no migration once the window closed",
    )


# --- Story 7: two podSets with explicit options -------------------------------------------------------


def test_story7_two_podsets_gpu_and_cpu_with_explicit_options(
    world: World, kueue: KueueApi, namespace: str
) -> None:
    world.flavors("reservation", "on-demand", "default-cpu")
    gpu = "example.com/gpu"
    world.cluster_queue(
        "RemoveLower",
        {"reservation": {gpu: "0"}, "on-demand": {gpu: "2"}, "default-cpu": {"cpu": "2"}},
        explicit=[("res", ["reservation", "default-cpu"], {}), ("od", ["on-demand", "default-cpu"], {})],
    )
    # The design's story is one workload with two podSets (GPU workers and a CPU driver). A batch
    # Job always has exactly one podSet ("main"), and multi-podSet kinds (JobSet, Kubeflow, ...)
    # are not integrated, so no Job can produce this workload: the test creates it directly.
    # What the story is about is still exercised for real: the option controller makes it a
    # Parent with one option per explicit option, each option's two podSets get their own
    # allowedResourceFlavors, the scheduler admits both podSets onto the option's flavors and
    # migrates between options. What a Job adds on top (stop and restart on the new flavors) is
    # shown by stories 1, 2, 3 and 6; with no Job, the option controller releases an evicted
    # option's quota itself (docs/design/concurrent-admission.md, "The Job").
    wl = (
        WorkloadBuilder("trainer", namespace)
        .queue("lq")
        .podset("gpu", count=1, **{gpu: "1"})
        .podset("cpu", count=1, cpu="2")
        .obj()
    )
    for key in ("uid", "creationTimestamp", "generation"):
        del wl["metadata"][key]
    kueue.create(wl)

    def converted() -> dict[str, Any] | None:
        current = world.refresh(wl)
        return current if current["metadata"].get("labels", {}).get(PARENT_LABEL) else None

    parent = wait_for(converted, timeout=CONVERGE, message="the workload becomes a Parent")

    def assignment(option: str) -> dict[str, dict[str, str]] | None:
        current = world.options(parent).get(option)
        if current is None or not holds_quota(current):
            return None
        return {a["name"]: a["flavors"] for a in current["status"]["admission"]["podSetAssignments"]}

    options = wait_for(
        lambda: (found := world.options(parent)) and set(found) == {"res", "od"} and found,
        timeout=CONVERGE,
        message="one option per explicit option",
    )
    for option, flavors in (("res", ["reservation", "default-cpu"]), ("od", ["on-demand", "default-cpu"])):
        allowed = {ps["name"]: ps.get("allowedResourceFlavors") for ps in options[option]["spec"]["podSets"]}
        assert allowed == {name: [world.flavor[f] for f in flavors] for name in ("gpu", "cpu")}, allowed

    expected_od = {"gpu": {gpu: world.flavor["on-demand"]}, "cpu": {"cpu": world.flavor["default-cpu"]}}
    wait_for(
        lambda: assignment("od") == expected_od,
        timeout=CONVERGE,
        message="od admitted on On-Demand + Default-CPU",
    )
    world.wait_option_statuses(parent, {"res": "Pending", "od": "Admitted"})

    # Default-CPU is full (the od option uses all of it): the migration still fits because the
    # sibling's own usage counts as free.
    world.set_quota("reservation", gpu, "2")
    expected_res = {"gpu": {gpu: world.flavor["reservation"]}, "cpu": {"cpu": world.flavor["default-cpu"]}}
    wait_for(lambda: assignment("res") == expected_res, timeout=CONVERGE, message="migrated to Reservation")
    world.wait_option_statuses(parent, {"res": "Admitted", "od": "Removed"})


# --- Story 8 (goal G2): racing admission checks ------------------------------------------------------


def test_story8_options_reserve_then_race_their_checks_first_ready_wins(
    world: World, kueue: KueueApi, namespace: str
) -> None:
    world.flavors("a", "b")
    checks = {unique("check-a"): "a", unique("check-b"): "b"}
    for check in checks:
        kueue.create(AdmissionCheckBuilder(check).obj())
        kueue.set_active_condition("AdmissionCheck", check, True)
    world.cluster_queue("RemoveOther", _cpu(("a", "4"), ("b", "4")), checks=checks)
    check_of = {flavor: check for check, flavor in checks.items()}
    world.job("train")
    parent = world.parent_of_job("train")

    def racing() -> dict[str, list[str]] | None:
        options = world.options(parent)
        states = {
            k: [s["name"] + "=" + s["state"] for s in (wl.get("status") or {}).get("admissionChecks") or []]
            for k, wl in options.items()
            if holds_quota(wl)
        }
        want = {f: [f"{check_of[f]}=Pending"] for f in ("a", "b")}
        return states if states == want else None

    # Two-phase: both options reserve quota, and each runs the check of its assigned flavor only.
    wait_for(racing, timeout=CONVERGE, message="both options reserve and run their own check")
    world.wait_option_statuses(parent, {"a": "QuotaReserved", "b": "QuotaReserved"})
    stays(
        lambda: world.holder(parent) is None and world.running_on("train") is None,
        3,
        "no option is admitted (and the job does not start) before its check is Ready",
    )

    option_b = world.options(parent)["b"]["metadata"]["name"]
    kueue.set_check_state(namespace, option_b, check_of["b"], "Ready")  # re-reads and retries on 409
    world.wait_running_on("train", "b")
    world.wait_option_statuses(parent, {"a": "Removed", "b": "Admitted"})
    # The loser is deactivated and its quota is back within seconds.
    wait_for(
        lambda: world.active_options(parent) == {"b"} and world.reserving(parent) == {"b"},
        timeout=15,
        message="the losing option is deactivated and gives its quota back",
    )


def test_options_whose_checks_turn_ready_together_admit_exactly_one(
    world: World, kueue: KueueApi, namespace: str
) -> None:
    """The race's one winner is decided on the parent (the winner claim, written with a
    resourceVersion precondition before an option is marked Admitted). Both options of each of
    three Jobs reserve, then both checks are set Ready at the same instant from two threads; the
    watch stream must never show a second option of a parent Admitted, not even for a moment."""
    world.flavors("a", "b")
    checks = {unique("check-a"): "a", unique("check-b"): "b"}
    for check in checks:
        kueue.create(AdmissionCheckBuilder(check).obj())
        kueue.set_active_condition("AdmissionCheck", check, True)
    world.cluster_queue("RemoveOther", _cpu(("a", "4"), ("b", "4")), checks=checks)
    check_of = {flavor: check for check, flavor in checks.items()}
    jobs = ["train-0", "train-1", "train-2"]
    parents = {}
    for job in jobs:
        world.job(job)
        parents[job] = world.parent_of_job(job)
    for job in jobs:
        wait_for(
            lambda job=job: world.reserving(parents[job]) == {"a", "b"},
            timeout=CONVERGE,
            message=f"both options of {job} reserve quota and wait for their checks",
        )
        names = {f: wl["metadata"]["name"] for f, wl in world.options(parents[job]).items()}
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def ready(
            flavor: str,
            names: dict[str, str] = names,
            barrier: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            try:
                barrier.wait(timeout=10)
                kueue.set_check_state(namespace, names[flavor], check_of[flavor], "Ready")
            except BaseException as err:  # reported below
                errors.append(err)

        threads = [threading.Thread(target=ready, args=(f,)) for f in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not errors, errors
    for job in jobs:
        wait_for(
            lambda job=job: world.running_on(job) in ("a", "b"), timeout=CONVERGE, message=f"{job} runs"
        )
        winner = world.holder(parents[job])
        assert winner is not None
        wait_for(
            lambda job=job, winner=winner: world.reserving(parents[job]) == {winner},
            timeout=CONVERGE,
            message=f"the losing option of {job} gives its quota back",
        )
        assert world.running_on(job) == winner
    assert world.watcher is not None
    for job in jobs:
        seen = world.watcher.admitted_ever.get(parents[job]["metadata"]["uid"], set())
        assert len(seen) == 1, f"{job}: options seen Admitted on the watch stream: {sorted(seen)}"
        parent = world.refresh(parents[job])
        claimed = parent["metadata"].get("annotations", {}).get("kueue.x-k8s.io/option-winner")
        assert claimed == next(iter(seen)), "the parent names its winner"


def test_a_migration_whose_target_check_is_rejected_brings_the_job_back_on_the_less_preferred_option(
    world: World, kueue: KueueApi, namespace: str
) -> None:
    """RemoveLower: the job runs on spot; the reservation frees up, so the job migrates (spot is
    evicted, FlavorMigration) and the reservation option reserves and runs its check, which an
    admission check controller rejects (no capacity there). The rejected option stays off, and
    the job comes back on spot, the less preferred option the policy allows."""
    world.flavors("reservation", "spot")
    check = unique("capacity")
    kueue.create(AdmissionCheckBuilder(check).obj())
    kueue.set_active_condition("AdmissionCheck", check, True)
    world.cluster_queue("RemoveLower", _cpu(("reservation", "0"), ("spot", "4")), checks={check: "reservation"})
    with flavor_check_controller(kueue, namespace, check, {world.flavor["reservation"]}) as checker:
        parent = world.run_job("train", "spot")
        world.wait_option_statuses(parent, {"reservation": "Pending", "spot": "Admitted"})
        names = {k: wl["metadata"]["name"] for k, wl in world.options(parent).items()}

        world.set_quota("reservation", "cpu", "4")
        wait_for(
            lambda: (names["reservation"], world.flavor["reservation"], "Rejected") in checker.decisions,
            timeout=CONVERGE,
            message="the reservation option reserves and its check is rejected",
        )
        wait_for(lambda: "EvictedDueToFlavorMigration" in world.events("Workload", names["spot"]),
                 message="the Spot option's EvictedDueToFlavorMigration Event")
        world.wait_running_on("train", "spot")
        wait_for(
            lambda: world.holder(parent) == "spot",
            timeout=CONVERGE,
            message="the spot option is the winner again",
        )
        wait_for(
            lambda: world.option_statuses(parent).get("reservation") == "Removed",
            timeout=CONVERGE,
            message="the rejected option is reported Removed",
        )
        rejected = world.options(parent)["reservation"]
        assert rejected["spec"].get("active") is False, "a rejected option stays off"
        assert "no capacity" in next(
            e["message"] for e in world.refresh(parent)["status"]["options"] if e["name"] == names["reservation"]
        )
        assert world.reserving(parent) == {"spot"}


# --- beyond the stories: queue changes and preemption of the holder ----------------------------------


def test_changing_the_cluster_queues_flavors_reconciles_existing_parents(world: World) -> None:
    world.flavors("x", "y", "z")
    name = world.cluster_queue("RemoveLower", _cpu(("x", "0"), ("y", "0")))
    world.job("train")
    parent = world.parent_of_job("train")
    world.wait_option_statuses(parent, {"x": "Pending", "y": "Pending"})
    # The admin adds flavor z (with free quota) and drops y.
    cq = world.kueue.get("ClusterQueue", name)
    assert cq is not None
    group = cq["spec"]["resourceGroups"][0]
    group["flavors"] = [f for f in group["flavors"] if f["name"] != world.flavor["y"]] + [
        {"name": world.flavor["z"], "resources": [{"name": "cpu", "nominalQuota": "4"}]}
    ]
    world.kueue.patch("ClusterQueue", name, {"spec": {"resourceGroups": cq["spec"]["resourceGroups"]}})
    world.wait_running_on("train", "z")
    world.wait_option_statuses(parent, {"x": "Pending", "z": "Admitted"})
    assert set(world.options(parent)) == {"x", "z"}


def test_a_preempted_holder_stops_its_job_and_re_arms_every_option(world: World, kueue: KueueApi) -> None:
    world.flavors("a", "b")
    low, high = world.priority_classes(low=1, high=100)
    world.cluster_queue("RemoveOther", _cpu(("a", "1"), ("b", "0")), preemption="LowerPriority")
    batch = world.run_job("batch", "a", priority_class=low)
    world.wait_option_statuses(batch, {"a": "Admitted", "b": "Removed"})

    urgent = world.run_job("urgent", "a", priority_class=high)
    world.wait_option_statuses(urgent, {"a": "Admitted", "b": "Removed"})
    # The preempted parent lost its holder: both options are pursued again.
    world.wait_option_statuses(batch, {"a": "Evicted", "b": "Pending"})
    assert world.running_on("batch") is None
    assert world.holder(batch) is None


def test_only_one_option_of_a_parent_preempts(world: World, kueue: KueueApi) -> None:
    """Both options of the urgent parent could make room by preempting (a low-priority Job holds
    each flavor); only the more preferred one may, so exactly one low-priority Job is stopped."""
    world.flavors("a", "b")
    low, high = world.priority_classes(low=1, high=100)
    world.cluster_queue("RemoveOther", _cpu(("a", "1"), ("b", "1")), preemption="LowerPriority")
    first = world.run_job("first", "a", priority_class=low)
    second = world.run_job("second", "b", priority_class=low)
    second_holder = world.options(second)["b"]["metadata"]["name"]

    urgent = world.run_job("urgent", "a", priority_class=high)
    world.wait_option_statuses(urgent, {"a": "Admitted", "b": "Removed"})
    assert world.holder(first) is None and world.running_on("first") is None

    def second_untouched() -> bool:
        option = world.kueue.workload(world.namespace, second_holder)
        return holds_quota(option) and not is_true(option, "Evicted") and world.running_on("second") == "b"

    stays(second_untouched, 5, "the second low-priority Job was preempted too")
    assert "Stopped" not in world.events("Job", "second")
    assert world.holder(second) == "b"


# --- the parent's life: deactivation, priority, its queue going away ----------------------------------


def test_a_deactivated_parent_stops_its_job_and_reactivating_it_brings_every_option_back(world: World) -> None:
    world.flavors("a", "b")
    world.cluster_queue("RemoveOther", _cpu(("a", "1"), ("b", "0")))
    parent = world.run_job("train", "a")
    world.wait_option_statuses(parent, {"a": "Admitted", "b": "Removed"})
    name = parent["metadata"]["name"]
    world.kueue.patch("Workload", name, {"spec": {"active": False}}, world.namespace)
    wait_for(
        lambda: world.batch.read_namespaced_job("train", world.namespace).spec.suspend
        and not world.reserving(parent)
        and not world.active_options(parent),
        timeout=CONVERGE,
        message="the Job stops, every option is deactivated and no quota is held",
    )
    world.kueue.patch("Workload", name, {"spec": {"active": True}}, world.namespace)
    # The former winner comes back with the others (it was deactivated with its parent, not by
    # a check) and wins again.
    world.wait_running_on("train", "a")
    world.wait_option_statuses(parent, {"a": "Admitted", "b": "Removed"})


def test_a_job_priority_raised_while_its_options_race_reaches_every_option(
    world: World, kueue: KueueApi, namespace: str
) -> None:
    world.flavors("a", "b")
    low, high = world.priority_classes(low=1, high=100)
    checks = {unique("check-a"): "a", unique("check-b"): "b"}
    for check in checks:  # no controller answers them: the options race for ever
        kueue.create(AdmissionCheckBuilder(check).obj())
        kueue.set_active_condition("AdmissionCheck", check, True)
    world.cluster_queue("RemoveOther", _cpu(("a", "4"), ("b", "4")), checks=checks)
    world.job("train", priority_class=low)
    parent = world.parent_of_job("train")
    world.wait_option_statuses(parent, {"a": "QuotaReserved", "b": "QuotaReserved"})
    world.batch.patch_namespaced_job(
        "train", namespace, {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": high}}}
    )

    def priorities() -> dict[str, Any]:
        return {k: (wl["spec"].get("priorityClassName"), wl["spec"].get("priority")) for k, wl in world.options(parent).items()}

    wait_for(
        lambda: priorities() == {"a": (high, 100), "b": (high, 100)},
        timeout=CONVERGE,
        message=lambda: f"every option follows the Job's new priority (now {priorities()})",
    )


def test_a_deleted_cluster_queue_returns_the_parent_to_an_ordinary_pending_workload(
    world: World, kube: k8s.ApiClient
) -> None:
    world.flavors("a", "b")
    world.expects_holders = False
    name = world.cluster_queue("RemoveOther", _cpu(("a", "0"), ("b", "0")))
    world.job("train")
    parent = world.parent_of_job("train")
    world.wait_option_statuses(parent, {"a": "Pending", "b": "Pending"})
    k8s.CustomObjectsApi(kube).delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", name)

    def ordinary() -> dict[str, Any] | None:
        current = world.refresh(parent)
        if (current["spec"].get("workloadMode") or {}).get("type") == "Parent" or world.options(parent):
            return None
        message = str((condition(current, "QuotaReserved") or {}).get("message") or "")
        return current if f"ClusterQueue {name} doesn't exist" in message else None

    wait_for(ordinary, timeout=CONVERGE, message="the parent is an ordinary workload, pending on the missing queue")
    assert world.batch.read_namespaced_job("train", world.namespace).spec.suspend


def test_controller_killed_mid_migration_holds_no_quota_twice_and_runs_the_job_once(
    world: World, kube: k8s.ApiClient, controller: ControllerHandle
) -> None:
    """SIGKILL right after the migration's eviction of the old winner is stored (the new
    option's reservation and the Job's restart may or may not have happened): after the restart
    the Job runs once, on the preferred flavor, and no quota is ever held twice."""
    world.flavors("reservation", "spot")
    world.cluster_queue("RemoveLower", _cpu(("reservation", "0"), ("spot", "4")))
    parent = world.run_job("train", "spot")
    spot = world.options(parent)["spot"]["metadata"]["name"]
    world.set_quota("reservation", "cpu", "4")
    wait_for(
        lambda: (condition(world.kueue.workload(world.namespace, spot), "Evicted") or {}).get("reason")
        == "FlavorMigration",
        timeout=CONVERGE,
        interval=0.05,
        message="the migration evicts the spot option",
    )
    controller.kill()
    violations = check_cluster(kube)
    controller.start()
    live_pods_seen: list[int] = []

    def settled() -> bool:
        violations.extend(check_cluster(kube))
        pods = world.core.list_namespaced_pod(world.namespace, label_selector="batch.kubernetes.io/job-name=train").items
        live_pods_seen.append(sum(1 for p in pods if p.status.phase in ("Pending", "Running") and not p.metadata.deletion_timestamp))
        return world.running_on("train") == "reservation" and world.holder(parent) == "reservation"

    wait_for(settled, timeout=CONVERGE, interval=0.3, message="the Job runs on reservation after the restart")
    world.wait_option_statuses(parent, {"reservation": "Admitted", "spot": "Removed"})
    assert not violations, violations[:5]
    assert max(live_pods_seen) <= 1, "the Job ran twice at once"
    assert world.reserving(parent) == {"reservation"}


def test_a_migration_preempts_a_lower_priority_workload_to_reach_the_reservation(
    world: World, kueue: KueueApi, namespace: str
) -> None:
    """Both Jobs start at the same priority: "other" holds the reservation, "train" runs on spot.
    Raising train's priority lets its reservation option preempt "other" (a migration may
    preempt, holding its parent's preemption gate); once other's pods are gone, train's spot
    option is evicted (FlavorMigration) and train moves to the reservation."""
    world.flavors("reservation", "spot")
    mid, high = world.priority_classes(mid=10, high=100)
    world.cluster_queue("RemoveLower", _cpu(("reservation", "1"), ("spot", "1")), preemption="LowerPriority")
    other = world.run_job("other", "reservation", priority_class=mid)
    train = world.run_job("train", "spot", priority_class=mid)
    world.wait_option_statuses(train, {"reservation": "Pending", "spot": "Admitted"})
    other_reservation = world.options(other)["reservation"]["metadata"]["name"]
    train_spot = world.options(train)["spot"]["metadata"]["name"]

    world.batch.patch_namespaced_job("train", namespace, {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": high}}})
    world.wait_running_on("train", "reservation")
    world.wait_option_statuses(train, {"reservation": "Admitted", "spot": "Removed"})
    wait_for(lambda: "Preempted" in world.events("Workload", other_reservation), message="the Preempted Event")
    wait_for(lambda: "EvictedDueToFlavorMigration" in world.events("Workload", train_spot),
             message="the Spot option's EvictedDueToFlavorMigration Event")
    # The preempted Job comes back on the flavor the migration freed.
    world.wait_running_on("other", "spot")

