"""The emulator answers as the live service was seen to (field notes), and honours every list option."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

import pytest

from analytics_provider.api.call.quota import parse_retry_after
from analytics_provider.exceptions import AnalyticsParameterError, NotFoundError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.testing.emulator.app import AnalyticsEmulator
from analytics_provider.testing.emulator.pagination import encode_cursor

from .conftest import Api


@pytest.fixture
def hook(emu: AnalyticsEmulator, analytics_connection: str) -> AnalyticsHook:
    return AnalyticsHook(analytics_conn_id=analytics_connection)


def test_the_users_list_leaves_out_title_and_job_title_which_the_update_answers(api: Api) -> None:
    updated = api.put("/users/6", json={"user": {"title": "Lead", "job_title": "Analytics engineer"}}).json()
    assert (updated["title"], updated["job_title"]) == ("Lead", "Analytics engineer")
    listed = next(u for u in api.get("/users", params={"limit": 100}).json()["users"] if u["id"] == 6)
    assert "title" not in listed and "job_title" not in listed and listed["email"] == updated["email"]


def test_users_by_several_statuses_and_by_ids(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    everyone = {u["id"]: u for u in hook.list_users(limit=100)}
    pending = [u["id"] for u in everyone.values() if not u["is_activated"] and not u["is_deleted"]]
    deleted = [u["id"] for u in everyone.values() if u["is_deleted"]]
    assert pending and deleted
    both = sorted(u["id"] for u in hook.list_users(statuses=["pending", "deleted"], limit=100))
    assert both == sorted(pending + deleted)
    assert [u["id"] for u in hook.list_users(ids=[1, 2], limit=100)] == [1, 2]
    assert emu.requests[-1].query["ids[]"] == ["1", "2"]


def test_user_search_matches_initials_and_group_names(hook: AnalyticsHook, api: Api) -> None:
    users = list(hook.list_users(limit=100))
    someone = next(u for u in users if u["initials"] and u["group_ids"])
    found = [u["id"] for u in hook.list_users(search_term=someone["initials"].lower(), limit=100)]
    assert someone["id"] in found
    group = api.get(f"/groups/{someone['group_ids'][0]}").json()["group"]
    members = [u["id"] for u in hook.list_users(search_term=group["name"].upper(), limit=100)]
    assert someone["id"] in members and all(group["id"] in u["group_ids"] for u in users if u["id"] in members
                                            and group["name"].lower() not in (u["name"] + u["email"]).lower())


def test_dashboards_carry_their_tags(hook: AnalyticsHook) -> None:
    assert hook.get_dashboard(1)["tags"] == ["certified", "finance"]
    assert all(isinstance(board["tags"], list) for board in hook.list_dashboards())


def test_retry_after_as_an_http_date_is_a_setting(api: Api, emu: AnalyticsEmulator) -> None:
    emu.set_rate_limit(quota=1, operation="get_current_user", retry_after="date")
    assert api.get("/users/me").status_code == 200
    refused = api.get("/users/me")
    assert refused.status_code == 429
    when = parsedate_to_datetime(refused.headers["Retry-After"]).timestamp()
    assert time.time() - 1 <= when <= time.time() + 61
    assert 0 <= parse_retry_after(refused.headers) <= 61  # the hook reads the date as a wait
    emu.inject("get_job", status=503, retry_after=30)
    assert parsedate_to_datetime(api.get("/jobs/1").headers["Retry-After"]).timestamp() > time.time() + 25
    emu.reset()
    emu.set_rate_limit(quota=1, operation="get_current_user")
    api.get("/users/me")
    assert api.get("/users/me").headers["Retry-After"].isdigit()  # seconds unless told


def test_a_success_can_be_scripted_with_a_partial_body(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    emu.inject("update_user", status=200, body={"id": 6, "group_ids": [1]})
    assert hook.update_user(6, {"title": "Lead"}) == {"id": 6, "group_ids": [1]}
    assert hook.update_user(6, {"title": "Lead"})["title"] == "Lead"  # one answer only, then the operation again
    with pytest.raises(ValueError, match="needs the body"):
        emu.inject("update_user", status=200)
    with pytest.raises(ValueError, match="scripted JSON success"):
        emu.inject("download_file", status=200, body={})


def test_data_schedules_by_search_term_sort_creator_roles_and_page(hook: AnalyticsHook) -> None:
    assert [s["id"] for s in hook.list_data_schedules(search_term="CAMPAIGN")] == [2]  # the source's title
    assert [s["id"] for s in hook.list_data_schedules(search_term="sales overview")] == [1]  # the title
    assert [s["id"] for s in hook.list_data_schedules(sort="title_desc")] == [2, 1]
    assert [s["id"] for s in hook.list_data_schedules(sort="destination_desc")] == [2, 1]  # SlackDest, EmailDest
    assert [s["id"] for s in hook.list_data_schedules(creator_roles=["admin"])] == [1]
    assert [s["id"] for s in hook.list_data_schedules(creator_roles=["embed"])] == []
    assert [s["id"] for s in hook.list_data_schedules(page=2, limit=1)] == [2]


def test_jobs_with_their_source_and_data_source_stats_only_when_asked(hook: AnalyticsHook, api: Api) -> None:
    job_id = api.export()
    plain = hook.get_job(job_id)
    assert plain["source"] is None and plain["data_source_stats"] is None
    full = hook.get_job(job_id, include_source=True, include_data_source_stats=True)
    assert full["source"] and full["data_source_stats"][0]["id"] == f"emu-job-{job_id}-q1"
    (listed,) = hook.list_jobs([job_id], include_source=True)
    assert listed["source"] == full["source"] and listed["data_source_stats"] is None


def test_data_models_of_a_branch_or_a_commit(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    commit = emu.world.state.projects[1]["commit_oid"]
    every = [m["id"] for m in hook.list_data_models(1)]
    assert [m["id"] for m in hook.list_data_models(1, branch_name="master")] == every
    assert [m["id"] for m in hook.list_data_models(1, commit_oid=commit, branch_name="other")] == every
    with pytest.raises(NotFoundError, match="branch"):
        list(hook.list_data_models(1, branch_name="feature/missing"))
    with pytest.raises(NotFoundError, match="commit"):
        list(hook.list_data_models(1, commit_oid="0" * 40))


def test_lists_walk_back_from_a_before_cursor(hook: AnalyticsHook, emu: AnalyticsEmulator) -> None:
    forward = [u["id"] for u in hook.list_users(limit=100)]
    back = list(hook.list_users(limit=2, before=encode_cursor(6)).pages())
    assert [[u["id"] for u in page["users"]] for page in back] == [forward[4:6], forward[2:4], forward[0:2]]
    assert [r.query["before"][0] for r in emu.requests[-3:]] == [encode_cursor(6), encode_cursor(4), encode_cursor(2)]
    sent = len(emu.requests)
    with pytest.raises(AnalyticsParameterError, match="not both"):
        hook.list_users(after=encode_cursor(2), before=encode_cursor(4))
    assert len(emu.requests) == sent
