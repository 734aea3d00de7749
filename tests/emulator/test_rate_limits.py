"""Rate limits: headers on every answer, quotas per key and endpoint by level, 429 with Retry-After."""

from __future__ import annotations

import pytest

from analytics_provider.api.wire.operations import OPERATIONS
from analytics_provider.testing.emulator.ratelimit import LEVEL_QUOTAS, RateLimiter, level_of

from .conftest import Api, error_of


def limits(answer) -> tuple[int, int, int]:
    h = answer.headers
    return int(h["RateLimit-Limit"]), int(h["RateLimit-Remaining"]), int(h["RateLimit-Reset"])


def test_every_answer_carries_the_headers(api: Api) -> None:
    answers = [api.get("/dashboards/1"), api.get("/dashboards/999"), api.get("/dashboards/1", key=None),
               api.post("/groups", json={"nope": 1})]
    for answer in answers:
        limit, remaining, reset = limits(answer)
        assert limit == 120 and 0 <= remaining < limit and 1 <= reset <= 60
        assert "Retry-After" not in answer.headers


def test_remaining_counts_down_per_endpoint_and_key(api: Api, emu) -> None:
    first = [limits(api.get(f"/dashboards/{i}"))[1] for i in (1, 2, 3)]
    assert first == [119, 118, 117]  # one endpoint: GET /dashboards/{id}, whatever the id
    assert limits(api.get("/dashboards"))[1] == 119  # another endpoint
    assert limits(api.get("/dashboards/1", key=emu.key_for("analyst")))[1] == 119  # another key


def test_levels() -> None:
    assert level_of("get_job") == 1 and level_of("submit_widget_export") == 2 and level_of("publish_aml_project") == 3
    assert LEVEL_QUOTAS == {1: 120, 2: 60, 3: 20}
    assert {level_of(name) for name in OPERATIONS} == {1, 2, 3}


def test_level_quotas_are_reported(api: Api) -> None:
    assert limits(api.post("/dashboard_widgets/101/submit_export", json={"output": "csv"}))[0] == 60
    assert limits(api.post("/aml_studio/projects/submit_publish", json={}))[0] == 20


def test_over_quota_is_429_with_retry_after(api: Api, emu) -> None:
    emu.set_rate_limit(quota=3, operation="get_dashboard")
    statuses = [api.get("/dashboards/1").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    refused = api.get("/dashboards/1")
    assert refused.status_code == 429
    assert error_of(refused)["type"] == "RateLimitExceedError"
    limit, remaining, reset = limits(refused)
    assert (limit, remaining) == (3, 0) and int(refused.headers["Retry-After"]) == reset >= 1
    assert api.get("/dashboards").status_code == 200  # other endpoints keep their quota


def test_the_frame_resets(api: Api, emu, monkeypatch) -> None:
    now = [1000.0]  # the limiter's clock, over HTTP: a frame ends when the test says, not when a busy machine lets it
    monkeypatch.setattr(emu.limiter, "_clock", lambda: now[0])
    emu.set_rate_limit(frame=1, quota=2)
    assert [api.get("/users/me").status_code for _ in range(3)] == [200, 200, 429]
    now[0] += 1  # the next frame
    answer = api.get("/users/me")
    assert answer.status_code == 200 and limits(answer)[1] == 1


def test_limiter_with_a_fake_clock() -> None:
    now = [120.0]  # frames are aligned on the clock: this one is [120, 180)
    limiter = RateLimiter(frame=60, clock=lambda: now[0])
    op = OPERATIONS["publish_aml_project"]
    verdicts = [limiter.hit("k", op) for _ in range(21)]
    assert [v.allowed for v in verdicts] == [True] * 20 + [False]
    assert verdicts[0].headers() == {"RateLimit-Limit": "20", "RateLimit-Remaining": "19", "RateLimit-Reset": "60"}
    assert verdicts[-1].headers()["Retry-After"] == "60"
    now[0] += 59.5
    assert limiter.hit("k", op).reset == 1  # never 0 while counting
    now[0] += 1
    assert limiter.hit("k", op).remaining == 19
    now[0] = 200.0
    assert limiter.hit("k", op).reset == 40 and limiter.hit("other", op).remaining == 19
    with pytest.raises(ValueError):
        limiter.configure(operation="no_such_operation", quota=1)
    with pytest.raises(ValueError):
        RateLimiter(frame=0)
