"""Issue 33, problems 7 to 9, on the emulator: a title is a title (digits included), titles are
compared in one Unicode normal form and look-alikes are told apart, number filters take finite
numbers only; each refusal comes before any job."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsLookupError, AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.operators import AnalyticsExportWidgetOperator, AnalyticsPreloadDashboardOperator
from analytics_provider.testing.task_instance import FakeTaskInstance

WIDGET = "Revenue by region and month"  # a widget of every copy of dashboard 1


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> Iterator[AnalyticsHook]:
    made = AnalyticsHook(analytics_connection)
    yield made
    made.close()


def posted(emulator: Any) -> list[str]:
    return [r.operation for r in emulator.requests if r.method == "POST"]


# -- problem 7: a title made of digits ----------------------------------------------------------


def test_a_title_of_digits_that_is_also_an_id_is_refused_naming_both(hook, analytics_emulator) -> None:
    (titled_one,) = analytics_emulator.add_dashboards(["1"])
    with pytest.raises(AnalyticsLookupError) as refused:
        hook.find_dashboard("1")
    text = str(refused.value)
    assert f"'1' (id {titled_one}" in text and "'Sales overview' (id 1" in text
    assert f"dashboard={titled_one}" in text  # how to say which: an id is an int


def test_an_int_is_an_id(hook, analytics_emulator) -> None:
    analytics_emulator.add_dashboards(["1"])
    assert hook.find_dashboard(1)["title"] == "Sales overview"


def test_a_year_that_is_a_title_is_looked_up_as_a_title(hook, analytics_emulator) -> None:
    (board,) = analytics_emulator.add_dashboards(["2025"])
    assert hook.find_dashboard("2025")["id"] == board
    assert hook.find_dashboard(" 2025 ")["id"] == board


def test_digits_that_are_neither_say_both_readings_were_tried(hook) -> None:
    with pytest.raises(AnalyticsLookupError, match=r"^no dashboard is named '2024' and none has the id 2024"):
        hook.find_dashboard("2024")


def test_digits_that_only_an_id_has_are_that_id(hook) -> None:
    assert hook.find_dashboard("3")["title"] == "Executive summary"


def test_a_digit_that_is_not_ascii_is_a_title(hook, analytics_emulator) -> None:
    (board,) = analytics_emulator.add_dashboards(["²"])
    assert hook.find_dashboard("²")["id"] == board
    with pytest.raises(AnalyticsLookupError, match=r"^no dashboard is named '³'"):
        hook.find_dashboard("³")


def test_the_export_is_refused_before_its_job_when_both_readings_exist(analytics_emulator, analytics_connection,
                                                                      tmp_path) -> None:
    (titled_one,) = analytics_emulator.add_dashboards(["1"])
    op = AnalyticsExportWidgetOperator(task_id="export", dashboard="1", widget=WIDGET,
                                       destination=str(tmp_path / "x.csv"), analytics_conn_id=analytics_connection)
    with pytest.raises(AnalyticsLookupError, match=rf"^export: .*'1' \(id {titled_one}.*'Sales overview' \(id 1"):
        op.execute({"ti": FakeTaskInstance()})
    assert posted(analytics_emulator) == [] and analytics_emulator.jobs == []


def test_a_preload_by_dashboard_id_as_text_is_an_id(analytics_emulator, analytics_connection) -> None:
    analytics_emulator.add_dashboards(["3"])
    op = AnalyticsPreloadDashboardOperator(task_id="preload", dashboard_id="3", filters={"Region": ["EU"]},
                                           poll_interval=0.05, analytics_conn_id=analytics_connection)
    assert op.execute({"ti": FakeTaskInstance()})["dashboard_id"] == 3


# -- problem 8: normal forms and look-alikes ------------------------------------------------------


def test_a_title_typed_in_another_normal_form_is_found(hook, analytics_emulator) -> None:
    board, other = analytics_emulator.add_dashboards([unicodedata.normalize("NFC", "Café sales"),
                                                      unicodedata.normalize("NFD", "Crème report")])
    assert hook.find_dashboard(unicodedata.normalize("NFD", "Café sales"))["id"] == board
    assert hook.find_dashboard(unicodedata.normalize("NFC", "crème  REPORT"))["id"] == other


def test_a_look_alike_in_an_error_says_how_it_differs(hook, analytics_emulator) -> None:
    analytics_emulator.add_dashboards(["Revenue r\u0435p\u043ert"])  # Cyrillic ie and o
    with pytest.raises(AnalyticsLookupError) as refused:
        hook.find_dashboard("Revenue report")
    text = str(refused.value)
    assert "closest: 'Revenue r\u0435p\u043ert'" in text
    assert ("character 10 is U+0435 CYRILLIC SMALL LETTER IE where 'Revenue report' has "
            "U+0065 LATIN SMALL LETTER E") in text


def test_titles_that_differ_only_in_normal_form_are_one_title_and_told_apart(hook, analytics_emulator) -> None:
    composed, decomposed = analytics_emulator.add_dashboards(
        [unicodedata.normalize("NFC", "Café sales"), unicodedata.normalize("NFD", "Café sales")])
    with pytest.raises(AnalyticsLookupError) as refused:
        hook.find_dashboard(unicodedata.normalize("NFC", "Café sales"))
    text = str(refused.value)
    assert text.startswith("2 dashboards are named 'Café sales'") and f"(id {composed}" in text
    assert (f"(id {decomposed}, http" in text and "character 4 is U+0065 LATIN SMALL LETTER E + U+0301 COMBINING "
            "ACUTE ACCENT where 'Café sales' has U+00E9 LATIN SMALL LETTER E WITH ACUTE") in text


def test_look_alikes_that_both_differ_from_what_was_typed_are_told_apart_from_each_other(hook,
                                                                                      analytics_emulator) -> None:
    analytics_emulator.add_dashboards([unicodedata.normalize("NFC", "Café sales"),
                                       unicodedata.normalize("NFD", "Café sales")])
    with pytest.raises(AnalyticsLookupError, match=r"2 dashboards are named 'CAFÉ SALES'.*character 4 is U\+0065"):
        hook.find_dashboard("CAFÉ SALES")


# -- problem 9: number filters --------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "1e999", "1_000", " 5 ", "inf", "-Infinity", "0x10", ""])
def test_a_number_filter_takes_finite_plain_numbers_only(analytics_emulator, analytics_connection, value) -> None:
    op = AnalyticsPreloadDashboardOperator(
        task_id="preload", dashboard="Executive summary", poll_interval=0.05, analytics_conn_id=analytics_connection,
        filters={"Revenue at least": {"operator": "greater_than", "values": [value]}})
    with pytest.raises(AnalyticsParameterError,
                       match=rf"^preload: Revenue at least is a number filter; {value!r} is not a number"):
        op.execute({"ti": FakeTaskInstance()})
    assert posted(analytics_emulator) == [] and analytics_emulator.jobs == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_value_no_json_can_carry_is_refused_when_the_dag_is_parsed(value) -> None:
    with pytest.raises(AnalyticsParameterError,
                       match=r"^preload: filters\['Revenue at least'\].values must hold finite"):
        AnalyticsPreloadDashboardOperator(task_id="preload", dashboard="Executive summary",
                                          filters={"Revenue at least": {"operator": "greater_than", "values": [value]}})


@pytest.mark.parametrize("value", ["1000", "-2.5", "1e3", 1000, 2.5])
def test_plain_numbers_are_taken(hook, value) -> None:
    conditions = hook.filter_conditions("Executive summary",
                                        {"Revenue at least": {"operator": "greater_than", "values": [value]}})
    assert conditions == [{"dynamic_filter_id": 6, "condition": {"operator": "greater_than", "values": [value]}}]
