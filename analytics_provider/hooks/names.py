"""Dashboards, widgets and filters by name: the hook's lookups (the rules:
:mod:`~analytics_provider.api.wire.lookup`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics_provider.api.wire.lookup import filter_conditions, matches, pick
from analytics_provider.api.wire.operations import MAX_PAGE_SIZE
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsLookupError

Json = dict[str, Any]
LISTING_REFUSED = frozenset({403, 404, 405, 501})
"""Answers to ``GET /dashboards/list_metadata`` after which the titles are read page by page."""


def is_id(value: Any) -> bool:
    """An id, where an id is asked for (``dashboard_id``): an int, or a string of ASCII digits (as a
    template renders an id). Where a title may be given, a string is a title: see ``find_dashboard``."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value.strip().isascii() and value.strip().isdigit())


class NamedLookups:
    """What :class:`~analytics_provider.hooks.analytics.AnalyticsHook` adds to find things by name.

    The dashboards' titles are read once per hook (an operator makes one per try): one request
    for all of them (``GET /dashboards/list_metadata``), or page by page where the service
    refuses that; a dashboard is then read whole with ``GET /dashboards/{id}``.
    """

    _dashboard_titles: list[Json] | None = None

    def find_dashboard(self, dashboard: Any) -> Json:
        """The dashboard a title names (or an id, given as an int), whole.

        An exact title wins; otherwise one that differs only in case and spaces (titles compared
        in NFC). A title made of digits is a title: where a dashboard has that id too, and another
        has that title, both are named in the error; where only the id exists, that dashboard is
        it. No match raises :class:`~analytics_provider.exceptions.AnalyticsLookupError` naming the
        closest titles and their ids; several, one naming each with its id and URL.
        """
        if isinstance(dashboard, Mapping):
            return dict(dashboard)
        if isinstance(dashboard, int) and not isinstance(dashboard, bool):
            return self.get_dashboard(dashboard)  # type: ignore[attr-defined]
        wanted = str(dashboard)
        titles = self.dashboard_titles()
        digits = wanted.strip()
        as_id = int(digits) if digits.isascii() and digits.isdigit() else None
        with_id = [d for d in titles if as_id is not None and str(d.get("id")) == str(as_id)]
        titled = matches(wanted, titles, _title)
        if with_id and titled and with_id[0] not in titled:
            raise AnalyticsLookupError(
                f"dashboard {wanted!r} may mean the one titled so, {'; '.join(_short(d) for d in titled)}, or the "
                f"one whose id it is, {_short(with_id[0])}; give the one you mean by its id as a number: "
                + " or ".join(f"dashboard={d.get('id')}" for d in [*titled, *with_id]))
        if with_id and not titled:
            return self.get_dashboard(as_id)  # type: ignore[attr-defined]
        found = pick("dashboard", wanted, titles, _title, _short, detail=self._with_url, instead="dashboard",
                     where=f" and none has the id {as_id}" if as_id is not None and not with_id else "")
        return self.get_dashboard(found["id"])  # type: ignore[attr-defined]

    def find_widget(self, dashboard: Any, title: str) -> Json:
        """The widget of a dashboard (a title, an id or the dashboard itself) whose title is ``title``."""
        board = self.find_dashboard(dashboard)
        widgets = [w for w in board.get("widgets") or [] if isinstance(w, Mapping)]
        url = board.get("url") or ""

        def where(widget: Mapping[str, Any]) -> str:
            return f"{widget.get('source_title')!r} (id {widget.get('id')}, {url})" if url else _short_widget(widget)

        found = pick("widget", str(title), widgets, lambda w: [str(w.get("source_title") or "")], _short_widget,
                     detail=where, where=f" on dashboard {board.get('title')!r} (id {board.get('id')})",
                     instead="widget_id")
        return dict(found)

    def filter_conditions(self, dashboard: Any, filters: Mapping[str, Any]) -> list[Json]:
        """``{"Region": ["EU"], "Order date": {"operator": "last", ...}}`` as the dashboard's
        ``dynamic_filter_id`` conditions; values outside a filter's options are refused."""
        return filter_conditions(self.find_dashboard(dashboard), filters)

    def dashboard_titles(self) -> list[Json]:
        """``{id, title}`` of every dashboard the key may read, read once per hook."""
        if self._dashboard_titles is None:
            try:
                listed = self.list_dashboards_metadata()  # type: ignore[attr-defined]
            except AnalyticsApiError as exc:
                if exc.status not in LISTING_REFUSED:
                    raise
                listed = list(self.list_dashboards(limit=MAX_PAGE_SIZE))  # type: ignore[attr-defined]
            self._dashboard_titles = [{"id": d.get("id"), "title": d.get("title")} for d in listed]
        return self._dashboard_titles

    def _with_url(self, dashboard: Mapping[str, Any]) -> str:
        try:
            url = self.get_dashboard(dashboard["id"]).get("url")  # type: ignore[attr-defined]
        except AnalyticsApiError:
            url = None
        return f"{dashboard.get('title')!r} (id {dashboard.get('id')}, {url})" if url else _short(dashboard)


def _title(dashboard: Mapping[str, Any]) -> list[str]:
    return [str(dashboard.get("title") or "")]


def _short(dashboard: Mapping[str, Any]) -> str:
    return f"{dashboard.get('title')!r} (id {dashboard.get('id')})"


def _short_widget(widget: Mapping[str, Any]) -> str:
    return f"{widget.get('source_title')!r} (id {widget.get('id')})"
