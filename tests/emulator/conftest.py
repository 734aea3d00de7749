"""Helpers for the emulator's tests: plain ``requests`` over loopback against the plugin's emulator."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from analytics_provider.api.operations import PENDING_JOB_STATUSES
from analytics_provider.testing.emulator.app import AnalyticsEmulator


class Api:
    """A tiny client: ``api.get("/users/me")``; the admin's key unless ``key=`` says otherwise."""

    def __init__(self, emulator: AnalyticsEmulator) -> None:
        self.emulator = emulator
        self.session = requests.Session()

    def call(self, method: str, path: str, *, key: str | None = "admin", **kwargs: Any) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}))
        if key is not None:
            headers[self.emulator.header_name] = self.emulator.api_key if key == "admin" else key
        kwargs.setdefault("allow_redirects", False)
        return self.session.request(method, self.emulator.base_url + path, headers=headers, timeout=10, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("DELETE", path, **kwargs)

    def wait_job(self, job_id: int, timeout: float = 5.0, **kwargs: Any) -> dict[str, Any]:
        """Poll the job until it is final (bounded by ``timeout``); returns the Job."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.get(f"/jobs/{job_id}", **kwargs).json()["job"]
            if job["status"] not in PENDING_JOB_STATUSES:
                return job
            assert time.monotonic() < deadline, f"job {job_id} still {job['status']} after {timeout} s"
            time.sleep(0.02)

    def export(self, widget_id: str = "101", output: str = "csv", **body: Any) -> int:
        """Submit an export, wait for it, return the job id."""
        answer = self.post(f"/dashboard_widgets/{widget_id}/submit_export", json={"output": output, **body})
        assert answer.status_code == 200, answer.text
        job_id = int(answer.json()["job"]["id"])
        assert self.wait_job(job_id)["status"] == "success"
        return job_id


@pytest.fixture
def emu(analytics_emulator: AnalyticsEmulator) -> Iterator[AnalyticsEmulator]:
    """The plugin's emulator, reset, with short jobs and a one-minute rate-limit frame."""
    analytics_emulator.job_duration = 0.2
    analytics_emulator.set_rate_limit(frame=60)
    yield analytics_emulator


@pytest.fixture
def api(emu: AnalyticsEmulator) -> Iterator[Api]:
    client = Api(emu)
    yield client
    client.session.close()


def error_of(response: requests.Response) -> dict[str, Any]:
    body = response.json()
    assert isinstance(body, dict)
    return body["error"] if isinstance(body.get("error"), dict) else body
