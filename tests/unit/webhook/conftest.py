"""Fixtures: the real Flask application over a fake cluster state."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from pykueue.api.validation import schema_errors
from tests.unit.webhook.fakes import FakeClusterState
from webhook.app import create_app
from webhook.handlers import WebhookContext, build_endpoints
from webhook.jobs import JobPolicy

CONTROLLER = "system:serviceaccount:pykueue-system:pykueue-controller"


@pytest.fixture
def state() -> FakeClusterState:
    return FakeClusterState()


@pytest.fixture
def policy() -> JobPolicy:
    return JobPolicy()


@pytest.fixture
def app(state: FakeClusterState, policy: JobPolicy) -> Flask:
    context = WebhookContext(
        state=state,
        job_policy=policy,
        controller_username=CONTROLLER,
        schema_errors=functools.partial(schema_errors, unknown_fields=False),
    )
    return create_app(build_endpoints(context), max_body_bytes=64 * 1024)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def post(client: FlaskClient, path: str, body: Any) -> Any:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()
