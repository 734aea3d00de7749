"""Helpers for the emulator's tests: plain ``requests`` over loopback against the plugin's emulator."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from analytics_provider.api.jobs.status import PENDING_JOB_STATUSES
from analytics_provider.testing.emulator.api import ApiService
from analytics_provider.testing.emulator.app import AnalyticsEmulator
from analytics_provider.testing.emulator.wire import Incoming, Outcome

from .vendor_contract import JUDGES, Verdict, judge

SNIFFED_UPLOAD = 1024 * 1024
"""Uploads up to this size are judged by the vendor's document too (bigger ones stay unread)."""


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

    def wait_job(self, job_id: int, timeout: float = 30.0, **kwargs: Any) -> dict[str, Any]:
        """Poll the job until it is final; returns the Job. ``timeout`` only turns a job that never
        ends into a failure (a busy machine answers slowly)."""
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


class Exchanges:
    """Every request the emulator's API origin answered during a test, judged by the vendor's document."""

    def __init__(self) -> None:
        self.seen: list[tuple[Incoming, Outcome, bytes | None, str]] = []

    def verdicts(self) -> list[Verdict]:
        return [judge(request, outcome, key_header, f"http://{request.headers.get('host', '127.0.0.1')}", body)
                for request, outcome, body, key_header in self.seen if not outcome.injected and not outcome.drop]


@pytest.fixture(autouse=True)
def vendor_checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Exchanges]:
    """Every answer of every emulator test is checked against the vendor's OpenAPI document (patched
    as :mod:`.vendor_patches` says): a valid answer, the documented error shape, RateLimit headers,
    and no request the vendor refuses accepted."""
    exchanges = Exchanges()
    if not JUDGES:  # see vendor_contract.JUDGES
        yield exchanges
        return
    original = ApiService.answer

    def recording(self: ApiService, request: Incoming) -> Outcome:
        body = None
        if request.stream is not None:
            body = request.stream.read(SNIFFED_UPLOAD + 1)
            request.stream.seek(0)
        outcome = original(self, request)
        if body is None or len(body) <= SNIFFED_UPLOAD:
            sent = next((name for name in self.key_headers if name.lower() in request.headers), self.key_headers[0])
            exchanges.seen.append((request, outcome, body, sent))
        return outcome

    monkeypatch.setattr(ApiService, "answer", recording)
    yield exchanges
    problems = [v.describe() for v in exchanges.verdicts() if v.problems]
    assert not problems, "answers the vendor's document does not allow:\n" + "\n".join(problems)


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
