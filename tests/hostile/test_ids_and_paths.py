"""Issue 8, case 2: no id can change the request's path or operation; bad ids are refused by name
before any request. A property test over ids and query values holds it for every operation."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics_provider.api.call.request import check_path_id
from analytics_provider.api.wire.operations import OPERATIONS, match_route
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from hostile.conftest import KEY
from hostile.server import Answer, HostileServer, Seen

DOT_IDS = ["", ".", "..", " ", " .. "]


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda h, v: h.get_dashboard(v), "get_dashboard: id"),
        (lambda h, v: h.delete_user(v), "delete_user: id"),
        (lambda h, v: h.get_job_result(v), "get_job_result: id"),
        (lambda h, v: h.execute_data_alert(v), "execute_data_alert: id"),
        (lambda h, v: h.submit_widget_export(v), "submit_widget_export: id"),
        (lambda h, v: h.create_shortened_embed_token(v, "t"), "create_shortened_embed_token: hashcode"),
    ],
)
@pytest.mark.parametrize("value", DOT_IDS)
def test_empty_and_dot_ids_are_refused_by_name_before_any_request(hook, server, call, param, value) -> None:
    with pytest.raises(AnalyticsParameterError, match=param):
        call(hook, value)
    assert server.requests == []


@pytest.mark.parametrize("value", [-1, 0, "-1", "abc", "1.5", "1e3", "+3", 2.0, True, "٣"])
def test_integer_ids_take_positive_integers_only(hook, server, value) -> None:
    with pytest.raises(AnalyticsParameterError, match="get_dashboard: id must be a positive integer"):
        hook.get_dashboard(value)
    assert server.requests == []


def test_the_document_allows_a_string_widget_id_for_an_export(hook, server) -> None:
    server.answer = lambda seen: Answer(200, {"job": {"id": 5, "status": "created"}})
    hook.submit_widget_export("w/../1")
    assert server.routes() == ["POST /api/v2/dashboard_widgets/w%2F..%2F1/submit_export"]


def test_the_operator_label_names_its_own_parameter() -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^widget_id must be a positive integer"):
        check_path_id("get_dashboard_widget", "id", "abc", label="widget_id")


async def test_the_async_client_refuses_the_same_ids(server, connect) -> None:
    async with AsyncAnalyticsClient("analytics_default") as client:
        for value in ("..", ".", "", -1, "abc"):
            with pytest.raises(AnalyticsParameterError, match="get_job: id"):
                await client.call("get_job", value)
    assert server.requests == []


# -- the property ----------------------------------------------------------------------------------

PATH_OPERATIONS = sorted(name for name, op in OPERATIONS.items() if op.path_params)
QUERY_OPERATIONS = sorted(name for name, op in OPERATIONS.items() if any(p.kind is str and not p.choices
                                                                           for p in op.query))
ids = st.one_of(
    st.integers(min_value=-3, max_value=10**12),
    st.text(min_size=0, max_size=12),
    st.sampled_from(["..", ".", "../..", "%2e%2e", "a/b", "?x=1", "#f", "1/../2", " 1", "\n1", "\u2024"]),
)


def _echo_error(seen: Seen) -> Answer:
    """An error that quotes the whole request, headers included, as a careless server might."""
    return Answer(500, {"message": f"no route {seen.method} {seen.path} {seen.headers}", "debug_id": str(seen.headers)})


@pytest.fixture(scope="module")
def echo_server():
    with HostileServer() as running:
        running.answer = _echo_error
        yield running


def _hook_for(server: HostileServer, monkeypatch: pytest.MonkeyPatch) -> AnalyticsHook:
    import json

    conn = {"conn_type": "analytics", "password": KEY, "extra": {"base_url": server.base_url}}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(conn))
    hook = AnalyticsHook(max_attempts=2)  # one retry (a 500): its WARNING line is checked too
    hook.sleep = lambda seconds: None
    return hook


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(PATH_OPERATIONS), value=ids)
def test_no_id_changes_the_method_path_or_operation_sent(echo_server, monkeypatch, caplog, name, value) -> None:
    hook = _hook_for(echo_server, monkeypatch)
    op = OPERATIONS[name]
    before = len(echo_server.requests)
    args = [value] + [1] * (len(op.path_params) - 1)
    try:
        hook.call(name, *args, body={} if op.method in ("POST", "PUT") else None)
    except AnalyticsParameterError as refused:
        assert len(echo_server.requests) == before  # refused before any request
        assert f"{name}: {op.path_params[0]}" in str(refused)
        return
    except AnalyticsApiError as answered:
        assert KEY not in str(answered)
    finally:
        hook.close()
        assert KEY not in caplog.text
    seen, *again = echo_server.requests[before:]  # a retry (never of a create) sends the same
    assert len(again) == (0 if op.creates else 1)
    assert all((a.method, a.path) == (seen.method, seen.path) for a in again)
    assert seen.method == op.method
    route = match_route(seen.method, seen.route[len("/api/v2"):])
    assert route is not None and route[0].name == name, seen.path
    sent = unquote(route[1][op.path_params[0]])
    assert sent == (str(int(str(value).strip())) if op.is_integer_param(op.path_params[0]) else str(value))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(QUERY_OPERATIONS), value=st.text(max_size=20))
def test_no_query_value_changes_the_request_or_leaks_the_key(echo_server, monkeypatch, caplog, name, value) -> None:
    hook = _hook_for(echo_server, monkeypatch)
    op = OPERATIONS[name]
    param = next(p for p in op.query if p.kind is str and not p.choices)
    query = {p.name: (1 if p.kind is int else "User" if p.choices else "x") for p in op.query if p.required}
    query[param.name] = value
    before = len(echo_server.requests)
    args = [1] * len(op.path_params)
    try:
        hook.call(name, *args, query=query, body={} if op.method in ("POST", "PUT") else None)
    except AnalyticsParameterError:
        assert len(echo_server.requests) == before
        return
    except AnalyticsApiError as answered:
        assert KEY not in str(answered) and KEY not in repr(answered)
    finally:
        hook.close()
        assert KEY not in caplog.text
    seen = echo_server.requests[before]
    route = match_route(seen.method, seen.route[len("/api/v2"):])
    assert seen.method == op.method and route is not None and route[0].name == name, seen.path
