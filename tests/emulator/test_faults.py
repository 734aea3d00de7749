"""Injected faults: error statuses with the document's bodies, delays, dropped connections, truncation."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from .conftest import Api, error_of


def statuses(emu, operation: str) -> list[int | None]:
    return [r.status for r in emu.requests if r.operation == operation]


def test_429_has_retry_after_and_spent_quota(api: Api, emu) -> None:
    emu.inject("get_current_user", status=429, retry_after=2)
    answer = api.get("/users/me")
    assert answer.status_code == 429 and error_of(answer)["type"] == "RateLimitExceedError"
    assert answer.headers["Retry-After"] == "2" and answer.headers["RateLimit-Remaining"] == "0"
    assert answer.headers["RateLimit-Reset"] == "2"
    assert api.get("/users/me").status_code == 200  # times=1
    assert statuses(emu, "get_current_user") == [429, 200]
    emu.inject("get_current_user", status=429)
    assert api.get("/users/me").headers["Retry-After"] == "1"  # one second unless told
    emu.inject("get_current_user", status=429, retry_after=0.2)
    assert api.get("/users/me").headers["Retry-After"] == "1"  # whole seconds, rounded up


def test_500_carries_a_debug_id(api: Api, emu) -> None:
    emu.inject("get_dashboard", status=500, times=2)
    for _ in range(2):
        answer = api.get("/dashboards/1")
        body = answer.json()
        assert answer.status_code == 500 and body["type"] == "InternalHolisticsError"
        assert body["debug_id"] and body["debug_id"] in body["message"]
    assert api.get("/dashboards/1").status_code == 200


def test_gateway_errors_answer_the_nested_shape(api: Api, emu) -> None:
    emu.inject("get_dashboard", status=502)
    body = api.get("/dashboards/1").json()
    assert set(body) == {"error"} and body["error"]["type"] == "InternalHolisticsError" and body["error"]["debug_id"]


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(503, "MaintenanceError"), (400, "InvalidParameterError"), (401, "AuthError"), (403, "PermissionDeniedError"),
     (404, "BaseError"), (422, "InvalidOperationError")],
)
def test_statuses_map_to_the_document_types(api: Api, emu, status: int, error_type: str) -> None:
    emu.inject("list_dashboards", status=status, retry_after=5)
    answer = api.get("/dashboards")
    assert answer.status_code == status and error_of(answer)["type"] == error_type and error_of(answer)["message"]
    assert ("Retry-After" in answer.headers) == (status == 503)


def test_custom_body(api: Api, emu) -> None:
    emu.inject("get_job", status=422, body={"type": "InvalidOperationError", "message": "custom"})
    assert api.get("/jobs/1").json() == {"type": "InvalidOperationError", "message": "custom"}


def test_delay_then_normal_answer(api: Api, emu) -> None:
    emu.inject("get_dashboard", delay=0.3)
    started = time.monotonic()
    assert api.get("/dashboards/1").status_code == 200
    assert time.monotonic() - started >= 0.3


def test_dropped_connection(api: Api, emu) -> None:
    assert api.get("/users/me").status_code == 200  # the next request reuses this connection
    emu.inject("get_current_user", drop=True)
    with pytest.raises(requests.ConnectionError):
        api.get("/users/me")
    assert api.get("/users/me").status_code == 200
    assert statuses(emu, "get_current_user") == [200, None, 200]


def test_truncated_download(api: Api, emu) -> None:
    emu.set_export_size("101", 1_000_000)
    location = api.get("/exports/download", params={"job_id": api.export()}).headers["Location"]
    emu.inject("download_file", truncate=True)
    with requests.get(location, stream=True, timeout=10) as broken:
        expected = int(broken.headers["Content-Length"])
        received = 0
        with pytest.raises((requests.exceptions.ChunkedEncodingError, requests.ConnectionError)):
            for chunk in broken.iter_content(1024):
                received += len(chunk)
    assert 0 < received < expected
    assert len(requests.get(location, timeout=10).content) == expected


def test_files_origin_faults(api: Api, emu) -> None:
    location = api.get("/exports/download", params={"job_id": api.export()}).headers["Location"]
    emu.inject("download_file", status=503, retry_after=1)
    answer = requests.get(location, timeout=10)
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1" and b"<Error>" in answer.content
    emu.inject("download_file", drop=True)
    with pytest.raises(requests.ConnectionError):
        requests.get(location, timeout=10)
    assert requests.get(location, timeout=10).status_code == 200
    assert statuses(emu, "download_file") == [503, None, 200]


def test_truncate_applies_to_api_answers_too(api: Api, emu) -> None:
    emu.inject("list_dashboards", truncate=True)
    with pytest.raises(requests.exceptions.RequestException):
        api.get("/dashboards").json()


def test_list_jobs_answers_can_be_made_unusable_while_single_reads_stay_healthy(api: Api, emu) -> None:
    ids = emu.add_jobs(3, seconds=60)
    query = "&".join(f"ids[]={i}" for i in ids)

    def listed(rewrite: str) -> Any:
        emu.inject("list_jobs", rewrite=rewrite)
        answer = api.get(f"/jobs?{query}")
        assert answer.status_code == 200
        return answer.json()["jobs"]

    assert [j["id"] for j in listed("leave_out")] == [ids[0], ids[2]]
    assert [j["id"] for j in listed("add_unasked")] == [*ids, *(i + 1_000_000 for i in ids)]
    assert {j["id"] for j in listed("none_asked")}.isdisjoint(ids)
    assert sorted(listed("jobs_object")) == sorted(str(i) for i in ids)
    assert [(j["id"], j["status"]) for j in listed("contradict")][:2] == [(ids[0], "success"), (ids[0], "failure")]
    emu.inject("list_jobs", rewrite="truncated_json")
    with pytest.raises(ValueError):
        api.get(f"/jobs?{query}").json()
    emu.inject("list_jobs", status=500, times=2)
    assert [api.get(f"/jobs/{ids[0]}").status_code, api.get(f"/jobs?{query}").status_code] == [200, 500]
    assert [api.get(f"/jobs?{query}").status_code, api.get(f"/jobs?{query}").status_code] == [500, 200]


def test_bad_injections_are_refused(emu) -> None:
    with pytest.raises(ValueError, match="unknown operation"):
        emu.inject("get_dashbaord", status=500)
    for kwargs in ({}, {"status": 500, "drop": True}, {"status": 200}, {"delay": -1}, {"status": 500, "times": 0},
                   {"rewrite": "leave_out"}, {"rewrite": "nonsense"}, {"rewrite": "truncated_json", "status": 500}):
        with pytest.raises(ValueError):
            emu.inject("get_dashboard", **kwargs)
    with pytest.raises(ValueError):
        emu.fail_next_job("nope")


def test_reset_clears_faults(api: Api, emu) -> None:
    emu.inject("get_dashboard", status=500, times=5)
    emu.reset()
    assert api.get("/dashboards/1").status_code == 200
