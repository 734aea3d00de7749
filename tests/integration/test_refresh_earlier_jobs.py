"""A job the service de-duplicates (``already_existed``) was started before the refresh asked: its
rows may predate the cache bust, so the refresh waits it out and submits its own, and only that one
is counted and named by the freshness asset event; against the emulator, the operator called directly."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsJobError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.operators import AnalyticsRefreshImpactedOperator
from analytics_provider.operators.refresh import BOOK_KEY
from analytics_provider.testing.task_instance import FakeTaskInstance


class Events:
    """One outlet's ``outlet_events`` entry: the events added through an alias."""

    def __init__(self) -> None:
        self.extra: dict[str, Any] = {}
        self.added: list[tuple[str, dict[str, Any]]] = []

    def add(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        self.added.append((asset.uri, dict(extra or {})))


class OutletEvents(defaultdict):  # type: ignore[type-arg]
    """``outlet_events`` keyed by the outlet's name (an ``AssetAlias`` is unhashable on Airflow 3.1)."""

    def __init__(self) -> None:
        super().__init__(Events)

    def __getitem__(self, outlet: Any) -> Events:
        return super().__getitem__((type(outlet).__name__, getattr(outlet, "name", outlet)))


def run(outlet_events: OutletEvents | None = None, **kwargs: Any) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    outlet_events = OutletEvents() if outlet_events is None else outlet_events
    operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["marketing.campaigns"], deferrable=False,
                                                poll_interval=0.05, **kwargs)
    result = operator.execute({"ti": FakeTaskInstance(), "outlet_events": outlet_events})
    return result, [e for events in outlet_events.values() for e in events.added]


def preloads_of(emulator: Any, dashboard_id: int) -> list[Any]:
    return [j for j in emulator.jobs if j.operation == "preload_dashboard" and j.params.get("id") == dashboard_id]


def test_a_preload_started_before_the_bust_is_waited_out_and_submitted_anew(analytics_emulator,
                                                                            analytics_connection) -> None:
    # a scheduled preload of dashboard 2, running when the load ended (two reads of it, then done)
    analytics_emulator.script_next_job("preload_dashboard", [("running", 2), ("success", 0)], by_reads=True)
    earlier = AnalyticsHook(analytics_connection).preload_dashboard(2)
    result, events = run()
    bust = next(j for j in analytics_emulator.jobs if j.operation == "bust_data_source_cache")
    own = [j for j in preloads_of(analytics_emulator, 2) if j.existing_job_id is None and j.id != earlier["id"]]
    assert len(own) == 1 and own[0].created >= bust.created  # its own preload, after the bust
    counted = next(j for j in result["jobs"] if j["kind"] == "preload" and j["id"] == 2)
    assert counted == {"kind": "preload", "id": 2, "job_id": own[0].id, "status": "success",
                       "earlier": [earlier["id"]]}  # the earlier job it waited out, named
    fresh = {e["dashboard_id"]: e["job_id"] for _, e in events}
    assert fresh[2] == own[0].id != earlier["id"]  # the freshness event names the post-bust preload only


def test_a_preload_that_keeps_pointing_at_earlier_jobs_fails_and_emits_no_event(analytics_emulator,
                                                                                analytics_connection,
                                                                                monkeypatch) -> None:
    from analytics_provider.impact import refresh

    monkeypatch.setattr(refresh, "MAX_EARLIER", 0)  # the first earlier job is already one too many
    analytics_emulator.script_next_job("preload_dashboard", [("running", 2), ("success", 0)], by_reads=True)
    earlier = AnalyticsHook(analytics_connection).preload_dashboard(2)
    outlet_events = OutletEvents()
    with pytest.raises(AnalyticsJobError, match=rf"preload of dashboard 2: the service answered already_existed 1 "
                                                rf"times in a row \(jobs {earlier['id']}\)"):
        run(outlet_events)
    assert [e for events in outlet_events.values() for e in events.added] == []  # not even dashboard 5's


class StateStore(dict[str, Any]):
    """Airflow 3.3's task state store (get/set), kept across a clear as Airflow keeps it."""

    def set(self, key: str, value: Any) -> None:
        self[key] = value


def test_a_retry_submits_a_stale_preload_anew_and_never_counts_the_earlier_job(analytics_emulator,
                                                                               analytics_connection,
                                                                               monkeypatch) -> None:
    """The earlier job a stale action followed ends in success before the retry: re-reading it would
    count another party's preload, started before the bust, as this refresh's."""
    from analytics_provider.impact import refresh

    monkeypatch.setattr(refresh, "MAX_EARLIER", 0)
    analytics_emulator.script_next_job("preload_dashboard", [("running", 2), ("success", 0)], by_reads=True)
    earlier = AnalyticsHook(analytics_connection).preload_dashboard(2)
    store = StateStore()

    def attempt(try_number: int, outlet_events: OutletEvents) -> Any:
        operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["marketing.campaigns"],
                                                    deferrable=False, poll_interval=0.05)
        return operator.execute({"ti": FakeTaskInstance(try_number), "outlet_events": outlet_events,
                                 "dag_run": SimpleNamespace(run_id="r", clear_number=0), "task_state_store": store})

    with pytest.raises(AnalyticsJobError, match="already_existed 1 times in a row"):
        attempt(1, OutletEvents())
    assert store[BOOK_KEY]["jobs"]["preload:2"]["status"] == "stale"
    monkeypatch.setattr(refresh, "MAX_EARLIER", 3)
    while AnalyticsHook(analytics_connection).get_job(earlier["id"])["status"] != "success":
        pass  # the other party's job ends before the retry (two reads)
    outlet_events = OutletEvents()
    result = attempt(2, outlet_events)
    own = [j for j in preloads_of(analytics_emulator, 2) if j.existing_job_id is None and j.id != earlier["id"]]
    assert len(own) == 1  # submitted anew on the retry
    counted = next(j for j in result["jobs"] if j["kind"] == "preload" and j["id"] == 2)
    assert counted["job_id"] == own[0].id != earlier["id"]
    fresh = {e["dashboard_id"]: e["job_id"] for events in outlet_events.values() for _, e in events.added}
    assert fresh[2] == own[0].id


@pytest.mark.parametrize(("clear_number", "try_number", "max_tries", "resumed"), [
    (0, 2, None, True),  # a retry of the failed try
    (1, 2, None, False),  # the run cleared after the failed try (its clear count raised)
    (0, 2, 5, False),  # the task cleared: max_tries raised
    (0, 3, None, False),  # not the previous try's book
    (None, 2, None, False),  # Airflow gives no clear count: a clear cannot be told from a retry
], ids=["retry", "run-cleared", "max-tries-raised", "not-the-previous-try", "clear-count-unknown"])
def test_only_a_retry_of_the_failed_try_resumes_its_jobs(analytics_emulator, analytics_connection, clear_number,
                                                         try_number, max_tries, resumed) -> None:
    """A cleared run (a new load) busts and preloads anew: following the failed try's bust would mark
    dashboards fresh whose rows predate the new load."""
    store = StateStore()

    def attempt(ti: FakeTaskInstance, clears: int | None) -> Any:
        operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"], deferrable=False,
                                                    outlets=[], poll_interval=0.05)
        dag_run = {} if clears is None else {"dag_run": SimpleNamespace(run_id="r", clear_number=clears)}
        return operator.execute({"ti": ti, "outlet_events": {}, "task_state_store": store, **dag_run})

    analytics_emulator.fail_next_job("preload_dashboard", last_error_log="warehouse timed out")
    first = FakeTaskInstance(1)
    first.max_tries = None  # type: ignore[attr-defined]
    with pytest.raises(AnalyticsJobError, match="1 of 3 job"):
        attempt(first, 0 if clear_number is not None else None)
    first_bust = next(j["job_id"] for j in store[BOOK_KEY]["jobs"].values() if "job_id" in j)
    second = FakeTaskInstance(try_number)
    second.max_tries = max_tries  # type: ignore[attr-defined]
    result = attempt(second, clear_number)
    busts = [j.id for j in analytics_emulator.jobs if j.operation == "bust_data_source_cache"]
    assert len(busts) == (1 if resumed else 2)
    bust = next(j for j in result["jobs"] if j["kind"] == "bust")
    assert (bust["job_id"] == first_bust) is resumed


def test_without_a_bust_each_preload_ignores_its_widgets_cache(analytics_emulator, analytics_connection) -> None:
    """Attack on #43: with bust_cache=False the preloads went out with "bust_cache": false; the service
    skipped every cached widget, and the dashboards were announced fresh, green, nothing refreshed."""
    _, events = run(bust_cache=False)
    assert [j.operation for j in analytics_emulator.jobs] == ["preload_dashboard"] * 2
    assert [r.json["bust_cache"] for r in analytics_emulator.requests if r.operation == "preload_dashboard"] == [
        True, True]
    assert len(events) == 2
    run()  # with the bust: the preloads need not ignore the cache the bust cleared
    assert [r.json["bust_cache"] for r in analytics_emulator.requests if r.operation == "preload_dashboard"][2:] == [
        False, False]


def test_a_query_model_built_on_a_changed_model_by_its_sql_is_followed_when_the_service_leaves_it_out(
        analytics_emulator, analytics_connection) -> None:
    """Attack on #43: query model 5 reads ``{{ #orders o }}``; when the service's dependants of orders left
    it out, its dashboard (Regional sales, 4) dropped out of the refresh with no note."""
    state = analytics_emulator.world.state
    assert "{{ #orders o }}" in state.data_models[5]["sql"]
    listed = AnalyticsRefreshImpactedOperator(task_id="plan", tables=["public.orders"], dry_run=True).execute({})
    state.data_models[5]["_built_on"] = []  # the service's answer leaves it out
    found = AnalyticsRefreshImpactedOperator(task_id="plan", tables=["public.orders"], dry_run=True).execute({})
    assert [m["id"] for m in found["data_models"]] == [m["id"] for m in listed["data_models"]] == [1, 5]
    assert [d["id"] for d in found["dashboards"]] == [d["id"] for d in listed["dashboards"]] == [1, 4]
    assert any("built on data model orders by their SQL, which the service did not list" in n for n in found["notes"])


def test_the_closest_tables_are_searched_for_a_bounded_number_of_unmatched_tables(analytics_connection) -> None:
    """Attack on #43: each table no model reads had every model's table compared by spelling; a dbt build of
    thousands of such tables spent minutes of CPU on hints before any job."""
    from analytics_provider.hooks.impact_reads import CLOSEST_HINTS

    tables = ["marketing.campaign"] + [f"staging.stg_nothing_{n}" for n in range(CLOSEST_HINTS + 4)]
    impact = AnalyticsHook(analytics_connection).find_impacted(tables=tables)
    hinted = {row["table"]: row.get("closest") for row in impact["tables"] if row["data_model_ids"] == []}
    assert hinted["marketing.campaign"] == ["marketing.campaigns"]  # the first ones named with their closest
    assert [t for t in tables[CLOSEST_HINTS:] if hinted[t]] == []
    assert f"{len(tables):,} tables no data model reads: the closest model tables are named for the first " \
           f"{CLOSEST_HINTS} only" in impact["notes"]
