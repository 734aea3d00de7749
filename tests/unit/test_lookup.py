"""Names to ids without I/O: which item a name means, the errors when none or several do, filter values."""

from __future__ import annotations

import pytest

from analytics_provider.api.wire.lookup import check_filters, filter_conditions, pick
from analytics_provider.exceptions import AnalyticsLookupError, AnalyticsParameterError

BOARDS = [
    {"id": 1, "title": "Sales overview"},
    {"id": 2, "title": "sales overview"},
    {"id": 3, "title": "Marketing  performance"},
    {"id": 4, "title": "Executive summary"},
]


def find(wanted: str, items=BOARDS):
    return pick("dashboard", wanted, items, lambda d: [d["title"]], lambda d: f"{d['title']!r} (id {d['id']})",
                detail=lambda d: f"{d['title']!r} (id {d['id']}, https://x/{d['id']})", instead="dashboard")


def test_an_exact_title_wins_over_titles_that_differ_in_case() -> None:
    assert find("Sales overview")["id"] == 1 and find("sales overview")["id"] == 2


def test_otherwise_case_and_spaces_are_ignored() -> None:
    assert find("marketing performance")["id"] == 3
    assert find("  EXECUTIVE   summary ")["id"] == 4


def test_several_loose_matches_name_each_with_its_id_and_url_and_the_id_to_use() -> None:
    with pytest.raises(AnalyticsLookupError) as error:
        find("SALES OVERVIEW")
    assert str(error.value) == (
        "2 dashboards are named 'SALES OVERVIEW': 'Sales overview' (id 1, https://x/1); 'sales overview' "
        "(id 2, https://x/2); give its id instead (dashboard=<id>)")


def test_two_exact_matches_are_ambiguous_too() -> None:
    twins = [{"id": 7, "title": "Revenue"}, {"id": 9, "title": "Revenue"}]
    with pytest.raises(AnalyticsLookupError, match=r"2 dashboards are named 'Revenue': 'Revenue' \(id 7, https://x/7\)"):
        find("Revenue", twins)


def test_no_match_names_the_closest_with_their_ids() -> None:
    with pytest.raises(AnalyticsLookupError) as error:
        find("Sales overveiw")
    assert str(error.value).startswith("no dashboard is named 'Sales overveiw'; closest: 'Sales overview' (id 1)")
    many = [{"id": n, "title": f"Board {n}"} for n in range(50)]
    with pytest.raises(AnalyticsLookupError, match=r"no dashboard is named 'Zebra' \(none of 50 is close\)"):
        find("Zebra", many)
    with pytest.raises(AnalyticsLookupError, match=r"\(there are none\)"):
        find("Zebra", [])


def test_a_lookup_error_is_a_parameter_error() -> None:
    assert issubclass(AnalyticsLookupError, AnalyticsParameterError)


DASHBOARD = {
    "id": 3, "title": "Executive summary",
    "dynamic_filters": [
        {"id": 5, "uname": "region", "definition": {
            "label": "Region", "filter_type": "string",
            "filter_source": {"source_type": "ManualFilterSource",
                              "manual_options": [{"value": v} for v in ("EU", "US", "APAC", "LATAM")]}}},
        {"id": 6, "uname": "revenue_at_least", "definition": {
            "label": "Revenue at least", "filter_type": "number",
            "filter_source": {"source_type": "ManualFilterSource", "manual_options": []}}},
        {"id": 8, "uname": "order_date", "definition": {
            "label": "Order date", "filter_type": "date", "filter_source": {"source_type": "DmFieldFilterSource"}}},
    ],
}


def test_filters_by_label_or_uname_become_conditions_by_id() -> None:
    conditions = filter_conditions(DASHBOARD, {
        "Region": ["EU", "US"],
        "revenue_at_least": {"operator": "greater_than", "values": [1000]},
        "order date": {"operator": "last", "values": [7], "modifier": "day"},
    })
    assert conditions == [
        {"dynamic_filter_id": 5, "condition": {"operator": "is", "values": ["EU", "US"]}},
        {"dynamic_filter_id": 6, "condition": {"operator": "greater_than", "values": [1000]}},
        {"dynamic_filter_id": 8, "condition": {"operator": "last", "values": [7], "modifier": "day"}},
    ]
    assert filter_conditions(DASHBOARD, {"Region": "APAC"})[0]["condition"]["values"] == ["APAC"]


def test_a_value_outside_the_options_is_refused_naming_them() -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^Region has no option 'EMEA'; options: EU, US, APAC, LATAM$"):
        filter_conditions(DASHBOARD, {"Region": ["EU", "EMEA"]})
    with pytest.raises(AnalyticsParameterError, match="Region has no option 'EMEA'"):
        filter_conditions(DASHBOARD, {"Region": {"operator": "is_not", "values": ["EMEA"]}})
    # an operator that does not pick among options is not held to them
    assert filter_conditions(DASHBOARD, {"Region": {"operator": "contains", "values": ["E"]}})


def test_a_number_filter_refuses_text() -> None:
    with pytest.raises(AnalyticsParameterError, match=r"Revenue at least is a number filter; 'high' is not a number"):
        filter_conditions(DASHBOARD, {"Revenue at least": {"operator": "greater_than", "values": ["high"]}})
    assert filter_conditions(DASHBOARD, {"Revenue at least": {"operator": "greater_than", "values": ["1e3"]}})


def test_an_unknown_filter_names_the_closest_and_a_filter_given_twice_is_refused() -> None:
    expected = r"no filter is named 'Regions' on dashboard 'Executive summary'; closest: 'Region' \(id 5\)"
    with pytest.raises(AnalyticsLookupError, match=expected):
        filter_conditions(DASHBOARD, {"Regions": ["EU"]})
    with pytest.raises(AnalyticsParameterError, match=r"'region' and 'Region' are the same filter"):
        filter_conditions(DASHBOARD, {"Region": ["EU"], "region": ["US"]})


@pytest.mark.parametrize("bad", [["Region"], {"": ["EU"]}, {"Region": {"operator": "between", "values": [1]}},
                                 {"Region": {"operator": "wrong", "values": []}}, "Region=EU"])
def test_the_shape_of_filters_is_checked_without_the_dashboard(bad) -> None:
    with pytest.raises(AnalyticsParameterError, match="filters"):
        check_filters(bad)
