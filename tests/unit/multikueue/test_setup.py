"""The MultiKueue wiring: the Configuration's dispatcherName and the round flag reach the loop."""

from __future__ import annotations

from typing import Any

import pytest

from controller.multikueue import setup as mk_setup
from controller.multikueue.dispatchers import DEFAULT_ROUND_SECONDS, Mode
from controller.multikueue.workload import WorkloadDispatcher
from controller.runtime.events import RecordingEvents
from pykueue.api.config import parse_config
from tests.unit.multikueue.fake import FakeInformer


class FakeController:
    def __init__(self, multikueue: dict[str, Any], shared: dict[str, Any] | None = None) -> None:
        self.config = parse_config({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
                                    "multiKueue": multikueue})  # fmt: skip
        self.shared = shared or {}
        self.client = object()
        self.registered: list[Any] = []

    def informer(self, _resource: Any) -> FakeInformer:
        return FakeInformer()

    def event_recorder(self, _component: str) -> RecordingEvents:
        return RecordingEvents()

    def register(self, runnable: Any) -> None:
        self.registered.append(runnable)


def dispatcher_of(ctrl: FakeController) -> WorkloadDispatcher:
    mk_setup.setup(ctrl)  # type: ignore[arg-type]
    return next(r for r in ctrl.registered if isinstance(r, WorkloadDispatcher))


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        (None, Mode.ALL_AT_ONCE),
        ("kueue.x-k8s.io/multikueue-dispatcher-all-at-once", Mode.ALL_AT_ONCE),
        ("kueue.x-k8s.io/multikueue-dispatcher-incremental", Mode.INCREMENTAL),
        ("example.com/my-dispatcher", Mode.EXTERNAL),
    ],
)
def test_the_dispatcher_name_picks_the_mode(name: str | None, mode: Mode) -> None:
    settings = dispatcher_of(FakeController({"dispatcherName": name} if name else {})).settings
    assert settings.dispatcher is mode
    assert settings.incremental_round_seconds == DEFAULT_ROUND_SECONDS == 300


def test_the_round_flag_shortens_the_incremental_rounds() -> None:
    ctrl = FakeController({}, {"multikueue-incremental-round-seconds": 7.0})
    assert dispatcher_of(ctrl).settings.incremental_round_seconds == 7.0


def test_the_v1beta2_step_size_reaches_the_incremental_dispatcher() -> None:
    ctrl = FakeController({})
    ctrl.config = parse_config({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                                "multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                                               "incrementalDispatcherConfig": {"stepSize": 1}}})  # fmt: skip
    assert dispatcher_of(ctrl).settings.incremental_step == 1
    assert dispatcher_of(FakeController({})).settings.incremental_step == 3
