"""Input checks before any request, pagination, batching, and the connection's settings."""

from __future__ import annotations

import json

import pytest

from analytics_provider.api.call.settings import ConnectionConfigError, resolve_base_url
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook

from .conftest import BASE


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda h: h.list_users(limit=0), "limit must be from 1 to 100, got 0"),
        (lambda h: h.list_users(limit=101), "limit must be from 1 to 100"),
        (lambda h: h.list_users(status="gone"), "status must be one of active, deleted, pending; got 'gone'"),
        (lambda h: h.list_users(role="viewer"), "role must be one of user, explorer, analyst, admin"),
        (lambda h: h.list_users(sort="newest"), "sort must be one of natural, id_asc, id_desc, name_asc"),
        (lambda h: h.list_dashboards(include_embed_info="yes"), "include_embed_info must be true or false"),
        (lambda h: h.list_data_schedules(dest_type="FtpDest"), "dest_type must be one of EmailDest, SlackDest"),
        (lambda h: h.list_data_alerts(dest_type="SftpDest"), "dest_type must be one of EmailDest, SlackDest; got"),
        (lambda h: h.get_dependants(1, "Dashboard"), "type must be one of DataSource, DataModel, DataSet"),
        (lambda h: h.list_user_attribute_entries("Team", 1), "subject_type must be one of User, Group"),
        (lambda h: h.submit_widget_export(1, "docx"), "output must be one of csv, xlsx, pdf; got 'docx'"),
        (
            lambda h: h.submit_widget_export(1, "csv", [{"dynamic_filter_id": "x", "condition": {}}]),
            r"dashboard_filter_conditions\[0\].dynamic_filter_id must be an integer",
        ),
        (
            lambda h: h.preload_dashboard(1, [{"dynamic_filter_id": 3, "condition": {"operator": "is"}}]),
            r"dashboard_filter_conditions\[0\].condition.values must be a list",
        ),
        (lambda h: h.invite_users("a@x.io", "admin"), "emails must be a non-empty list"),
        (lambda h: h.invite_users(["a@x.io"], "owner"), "role must be one of user, explorer"),
        (lambda h: h.get_dashboard(None), "get_dashboard: id must be a positive integer"),
        (lambda h: h.upsert_user_attribute_entries([{"values": ["x"]}]), "entry 0 names no attribute"),
        (lambda h: h.call("get_job"), r"get_job takes 1 path argument\(s\) \(id\), got 0"),
        (lambda h: h.call("list_users", query={"colour": "red"}), "list_users has no option colour"),
    ],
)
def test_bad_input_is_refused_before_any_request(hook, mock, call, message) -> None:
    with pytest.raises(AnalyticsParameterError, match=message):
        call(hook)
    assert mock.call_count == 0


def test_lists_are_lazy_and_follow_cursors(hook, mock) -> None:
    def page(request, context):
        after = request.qs.get("after", [None])[0]
        start = int(after) if after else 0
        users = [{"id": i} for i in range(start, min(start + 100, 250))]
        nxt = str(start + 100) if start + 100 < 250 else None
        return {"users": users, "cursors": {"next": nxt, "previous": None}}

    mock.get(BASE + "/users", json=page)
    users = hook.list_users(limit=100)
    assert mock.call_count == 0  # nothing fetched until needed
    first = next(iter(users))
    assert first == {"id": 0} and mock.call_count == 1
    assert [u["id"] for u in users] == list(range(250))
    assert mock.call_count == 4  # 1 for `first`, 3 for the whole walk
    assert [r.qs.get("after") for r in mock.request_history[1:]] == [None, ["100"], ["200"]]
    assert all(r.qs["limit"] == ["100"] for r in mock.request_history)


def test_pages_expose_side_data(hook, mock) -> None:
    mock.get(BASE + "/users", json={"users": [{"id": 1}], "counters": {"total": 1}, "cursors": {"next": None}})
    pages = list(hook.list_users().pages())
    assert pages[0]["counters"] == {"total": 1}


def test_upsert_sends_batches_of_at_most_100(hook, mock) -> None:
    mock.put(
        BASE + "/user_attribute_entries/upsert",
        json=lambda req, ctx: {"user_attribute_entries": req.json()["user_attribute_entries"]},
    )
    entries = [
        {"user_attribute_id": 1, "subject_type": "User", "subject_id": i, "values": ["x"], "input_type": "manual"}
        for i in range(250)
    ]
    result = hook.upsert_user_attribute_entries(entries)
    sizes = [len(r.json()["user_attribute_entries"]) for r in mock.request_history]
    assert sizes == [100, 100, 50]
    assert [e["subject_id"] for e in result] == list(range(250))


@pytest.mark.parametrize(
    ("region", "base_url", "expected"),
    [
        ("apac", None, "https://secure.holistics.io/api/v2"),
        ("eu", None, "https://eu.holistics.io/api/v2"),
        ("US", None, "https://us.holistics.io/api/v2"),
        (None, None, "https://eu.holistics.io/api/v2"),
        ("us", "http://127.0.0.1:8080/api/v2/", "http://127.0.0.1:8080/api/v2"),
    ],
)
def test_base_address(region, base_url, expected) -> None:
    assert resolve_base_url(region, base_url) == expected


@pytest.mark.parametrize(
    ("region", "base_url", "message"),
    [
        ("mars", None, "region must be one of apac, eu, us; got 'mars'"),
        (None, "https://eu.holistics.io/api/v1", "v1 stopped working on 20 November 2023"),
        (None, "https://proxy.example.com/analytics", "must be an http\\(s\\) address ending in /api/v2"),
        (None, "ftp://host/api/v2", "must be an http\\(s\\) address ending in /api/v2"),
    ],
)
def test_bad_base_address_is_refused(region, base_url, message) -> None:
    with pytest.raises(ConnectionConfigError, match=message):
        resolve_base_url(region, base_url)


def test_connection_from_uri(monkeypatch, mock) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", "analytics://:uri-key-123456@/?region=apac&timeout=5")
    hook = AnalyticsHook()
    assert hook.settings.base_url == "https://secure.holistics.io/api/v2"
    assert hook.settings.read_timeout == 5.0
    mock.get("https://secure.holistics.io/api/v2/users/me", json={"user": {"email": "a@b.c", "role": "admin"}})
    assert hook.test_connection() == (True, "Connected as a@b.c (role admin)")
    assert mock.last_request.headers["X-Holistics-Key"] == "uri-key-123456"


def test_connection_without_key_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps({"conn_type": "analytics", "extra": {}}))
    with pytest.raises(ConnectionConfigError, match="has no API key"):
        AnalyticsHook().settings  # noqa: B018


def test_test_connection_reports_the_error(hook, mock) -> None:
    mock.get(BASE + "/users/me", status_code=401, json={"type": "AuthError", "message": "Invalid API key"})
    assert hook.test_connection() == (False, "401 AuthError on GET /users/me: Invalid API key")


def test_provider_form_metadata() -> None:
    from analytics_provider.get_provider_info import get_provider_info

    (conn_type,) = get_provider_info()["connection-types"]
    assert conn_type["connection-type"] == "analytics"
    assert conn_type["conn-fields"]["region"]["schema"]["enum"] == ["apac", "eu", "us"]
    assert conn_type["ui-field-behaviour"]["relabeling"] == {"password": "API key"}
    assert {"host", "login", "port", "schema"} <= set(conn_type["ui-field-behaviour"]["hidden-fields"])
