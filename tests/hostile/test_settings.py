"""Issue 8, cases 7 and 9 (settings): no silent default for a bad value, form and code agree, and
a connection error names the field, not a temporary connection id."""

from __future__ import annotations

import time
from typing import Any

import pytest

from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.api.call.settings import MAX_TIMEOUT, MIN_TIMEOUT, ConnectionConfigError
from analytics_provider.exceptions import AnalyticsDeadlineExceeded, AnalyticsParameterError, AnalyticsTransportError
from analytics_provider.get_provider_info import get_provider_info
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.async_client import AsyncAnalyticsClient
from hostile.server import Answer, always

RUNNING = Answer(200, {"job": {"id": 7, "status": "running"}})


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_attempts", 0), ("max_attempts", -1), ("max_attempts", 2.5), ("max_retry_time", 0),
     ("max_retry_time", -3), ("timeout", 0), ("timeout", -1), ("connect_timeout", 0), ("timeout", float("inf"))],
)
def test_the_hook_refuses_a_bad_option_by_name(connect, server, option, value) -> None:
    label = "timeout" if option == "timeout" else option
    with pytest.raises(ValueError, match=label):
        AnalyticsHook(**{option: value})
    assert server.requests == []


@pytest.mark.parametrize(("option", "value"), [("timeout", 0), ("connect_timeout", -2)])
def test_the_async_client_refuses_the_same_options(option, value) -> None:
    with pytest.raises(ValueError, match=option):
        AsyncAnalyticsClient("analytics_default", **{option: value})


@pytest.mark.parametrize("field", ["max_elapsed", "initial_wait", "max_wait"])
def test_retry_durations_must_be_positive(field) -> None:
    with pytest.raises(AnalyticsParameterError, match=field):
        RetryPolicy(**{field: 0})


@pytest.mark.parametrize(("extra", "value"), [("timeout", 0), ("timeout", "0"), ("connect_timeout", -1),
                                              ("timeout", MIN_TIMEOUT / 2), ("timeout", "soon")])
def test_a_connection_timeout_below_the_forms_minimum_is_refused(connect, server, extra, value) -> None:
    connect(**{extra: value})
    with pytest.raises(ConnectionConfigError, match=f"{extra} must be a number of seconds of at least"):
        AnalyticsHook().get_job(1)
    assert server.requests == []


def test_the_form_and_the_code_agree_on_the_minimum() -> None:
    fields = get_provider_info()["connection-types"][0]["conn-fields"]
    assert fields["timeout"]["schema"]["minimum"] == MIN_TIMEOUT
    assert fields["connect_timeout"]["schema"]["minimum"] == MIN_TIMEOUT
    assert fields["timeout"]["schema"]["maximum"] == fields["connect_timeout"]["schema"]["maximum"] == MAX_TIMEOUT


@pytest.mark.parametrize(("extra", "value"), [("timeout", 1e12), ("timeout", "86401"), ("connect_timeout", 10**12)])
def test_a_connection_timeout_past_a_day_is_refused_by_name(connect, server, extra, value) -> None:
    """``timeout=1e12`` was taken, and every call then failed on the socket (OverflowError), retried."""
    connect(**{extra: value})
    with pytest.raises(ConnectionConfigError, match=rf"{extra} must be a number of seconds of at least 0\.1 and at "
                                                    "most 86,400, got "):
        AnalyticsHook().get_job(1)
    assert server.requests == []


def test_a_day_is_a_timeout_and_so_are_the_hooks_own(connect, server) -> None:
    server.answer = always(RUNNING)
    connect(timeout=MAX_TIMEOUT, connect_timeout="86400")
    assert AnalyticsHook().get_job(7)["status"] == "running"
    with pytest.raises(ConnectionConfigError, match=r"timeout must be a number of seconds of at least 0\.1 and at"):
        AnalyticsHook(timeout=1e12).get_job(7)
    with pytest.raises(AnalyticsParameterError, match=r"max_retry_time must be .* at most 604,800 \(7 days\)"):
        AnalyticsHook(max_retry_time=1e12)


# -- size and ratio settings (issue 46): one parser, one set of rules, wherever they are set -------

SIZES = ["max_answer_bytes", "max_header_bytes", "max_download_bytes", "max_decode_ratio", "max_download_seconds",
         "max_xcom_bytes"]
CONNECTION_SIZES = SIZES[:5]
OPERATOR_SIZES = SIZES[2:]
NOT_A_SIZE = ["\u00b2", "\u0663", "\u0661\u0660\u0660", "1e3", "1_000", "-5", "", "lots", True, 0, 10**29]
# superscript two, Arabic-Indic three and 100: str.isdigit() and int() take them


def size_setting_of_a_task(name: str, value: Any) -> Any:
    """An operator built with ``name=value``: the export operator, or a plan operator for max_xcom_bytes."""
    from analytics_provider.operators.access import AnalyticsSyncGroupMembersOperator
    from analytics_provider.operators.analytics import AnalyticsExportWidgetOperator

    if name == "max_xcom_bytes":
        return AnalyticsSyncGroupMembersOperator(task_id="task", rows=[], dry_run=True, max_xcom_bytes=value)
    return AnalyticsExportWidgetOperator(task_id="task", widget_id=5, destination="/tmp/unused.csv", **{name: value})


@pytest.mark.parametrize("value", NOT_A_SIZE, ids=repr)
@pytest.mark.parametrize("name", CONNECTION_SIZES)
def test_a_bad_size_in_the_connection_is_refused_by_name_before_any_request(connect, server, name, value) -> None:
    connect(**{name: value})
    if value == "":  # an emptied field of the form: the default
        AnalyticsHook(max_attempts=1)
        return
    with pytest.raises(ConnectionConfigError, match=rf"^connection 'analytics_default': {name} must be a (whole )?"
                                                    rf"number of .* as a number or a string of ASCII digits, got "):
        AnalyticsHook().get_job(1)
    assert server.requests == []


@pytest.mark.parametrize("value", [v for v in NOT_A_SIZE if v != ""], ids=repr)
@pytest.mark.parametrize("name", OPERATOR_SIZES)
def test_a_bad_size_of_an_operator_is_refused_by_name_when_the_dag_is_parsed(name, value) -> None:
    with pytest.raises(AnalyticsParameterError, match=rf"^task: {name} must be a (whole )?number of .* from 1 to "):
        size_setting_of_a_task(name, value)


@pytest.mark.parametrize("name", SIZES)
def test_every_size_setting_takes_the_same_forms_up_to_its_bound(name) -> None:
    from analytics_provider.api.call.limits import SIZE_SETTINGS, size_setting

    high = int(SIZE_SETTINGS[name].high)
    for given in (1024, "1024", " 1024 "):
        assert size_setting(given, name) == 1024
        if name in OPERATOR_SIZES:
            assert getattr(size_setting_of_a_task(name, given), name) == 1024  # kept as the number
    assert size_setting(high, name) == high and size_setting(str(high), name) == high
    for past in (high + 1, str(high + 1)):
        with pytest.raises(ValueError, match=f"^{name} must be .* from [0-9,]+ to {high:,} "):
            size_setting(past, name)


def test_the_form_and_the_code_agree_on_the_size_bounds() -> None:
    from analytics_provider.api.call.limits import SIZE_SETTINGS

    fields = get_provider_info()["connection-types"][0]["conn-fields"]
    for name in CONNECTION_SIZES:
        assert (fields[name]["schema"]["minimum"], fields[name]["schema"]["maximum"]) == (
            SIZE_SETTINGS[name].low, SIZE_SETTINGS[name].high)


def test_a_short_read_timeout_is_applied_not_replaced(connect, server) -> None:
    connect(timeout=60)  # the connection's read timeout outlasts the server's stall...
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}, delay=30.0))
    hook = AnalyticsHook(timeout=0.3, max_attempts=1)
    with pytest.raises(AnalyticsTransportError, match="ReadTimeout"):  # ...the hook's 0.3 s does not
        hook.get_job(7)
    assert server.seen(1)  # on a loaded machine the server's thread reads the request after the client gave up
    assert len(server.requests) == 1 and server.answers_sent == 0


def test_a_connection_tested_from_the_ui_names_the_field_not_its_temporary_id(connect, server) -> None:
    connect(conn_id="rMS6ndwM", region="mars", base_url="")
    ok, message = AnalyticsHook("rMS6ndwM").test_connection()
    assert not ok and message == "region must be one of apac, eu, us; got 'mars'"
    assert "rMS6ndwM" not in message


def test_an_error_at_run_time_still_names_the_connection(connect) -> None:
    connect(conn_id="reporting", region="mars", base_url="")
    with pytest.raises(ConnectionConfigError, match="connection 'reporting': region must be one of"):
        AnalyticsHook("reporting").get_current_user()


def test_a_deadline_shorter_than_the_timeouts_wins(connect, server) -> None:
    connect(timeout=60)  # the read timeout outlasts the server's stall: only the deadline can end the call
    hook = AnalyticsHook()
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}))
    hook.call("get_job", 7)  # the connection read and the session made (a loaded machine takes seconds)
    server.answer = always(Answer(200, {"job": {"id": 7, "status": "running"}}, delay=30.0))
    with pytest.raises(AnalyticsDeadlineExceeded):
        hook.call("get_job", 7, deadline=time.monotonic() + 5.0)
    assert len(server.requests) == 2 and server.answers_sent == 1
