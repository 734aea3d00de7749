"""The refresh of what a load touched, without I/O: which dashboards are kept, the plan's jobs
and their order, the job book a retried try resumes from, and the plan as the task logs it.

A plan is a list of actions, ``{"kind": "bust", "id": <data source>}`` first, then ``{"kind":
"preload", "id": <dashboard>}``: each data source is busted once and each dashboard preloaded once.
The book (``{"bust:3": {"job_id": 17, "status": "running"}}``) says which action's job was
submitted; :func:`next_actions` hands out the actions to submit now: none twice, at most
``max_active`` jobs pending at a time, a dashboard's preload only once the busts of the data
sources it reads (``after``; all of the plan's when not known) have succeeded (a preload before
its data source's bust would cache the stale rows again). A preload whose bust failed is never
submitted: :func:`blocked` names it, and a retry busts again, then preloads.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from analytics_provider.exceptions import AnalyticsParameterError

FILTER_KEYS = ("include_titles", "exclude_titles", "include_tags", "exclude_tags")
FILTER_RULE = ("a dict of include_titles, exclude_titles, include_tags, exclude_tags, each a list of titles or "
               "tags (titles may hold * and ? wildcards; compared without case)")


def check_dashboards_filter(value: Any) -> dict[str, list[str]]:
    """``dashboards_filter`` as lists of texts; :class:`AnalyticsParameterError` naming the rule."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or set(value) - set(FILTER_KEYS):
        raise AnalyticsParameterError(f"dashboards_filter must be {FILTER_RULE}; got {value!r}")
    checked: dict[str, list[str]] = {}
    for name, items in value.items():
        if isinstance(items, str) or not isinstance(items, Sequence) or not all(
                isinstance(i, str) and i.strip() for i in items):
            raise AnalyticsParameterError(f"dashboards_filter[{name!r}] must be a list of non-empty texts; "
                                          f"got {items!r}")
        checked[name] = list(items)
    return checked


def never_refreshes(bust_cache: bool, preload: bool, rules: Mapping[str, Sequence[str]]) -> str | None:
    """Why a refresh with these settings could never submit a job, whatever the load wrote (None: it can)."""
    if not bust_cache and not preload:
        return ("bust_cache and preload are both False: every run would succeed having refreshed nothing "
                "(set one of them True)")
    every = next((p for p in rules.get("exclude_titles") or [] if not p.strip().strip("*")), None)
    if every is not None and not bust_cache:
        return (f"dashboards_filter['exclude_titles'] {every!r} leaves out every dashboard and bust_cache is False: "
                "every run would succeed having refreshed nothing")
    return None


def titles_matching_none(rules: Mapping[str, Sequence[str]], titles: Sequence[str]) -> dict[str, list[str]]:
    """Each ``include_titles``/``exclude_titles`` entry that no title in ``titles`` matches, as
    ``"key: no dashboard is titled 'x' (closest: 'y')"`` lines by key (a misspelt title)."""
    import difflib

    from analytics_provider.api.wire.lookup import normalized

    by_folded = {normalized(t): t for t in titles}
    found: dict[str, list[str]] = {}
    for name in ("include_titles", "exclude_titles"):
        for pattern in rules.get(name) or []:
            wanted = normalized(pattern)
            if any(fnmatch.fnmatchcase(t, wanted) for t in by_folded):
                continue
            close = difflib.get_close_matches(wanted.replace("*", "").replace("?", ""), list(by_folded), n=3,
                                              cutoff=0.5)
            closest = f"closest: {', '.join(repr(by_folded[c]) for c in close)}" if close else (
                f"none of {len(by_folded)} is close")
            found.setdefault(name, []).append(f"dashboards_filter[{name!r}]: no dashboard is titled {pattern!r} "
                                              f"({closest})")
    return found


def keeps(dashboard: Mapping[str, Any], rules: Mapping[str, Sequence[str]]) -> bool:
    """Whether ``dashboards_filter`` keeps a dashboard: in the includes (when given), not in the excludes."""
    from analytics_provider.api.wire.lookup import normalized

    title = normalized(dashboard.get("title") or "")
    tags = {normalized(t) for t in dashboard.get("tags") or []}

    def titled(patterns: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(title, normalized(p)) for p in patterns)

    def tagged(names: Sequence[str]) -> bool:
        return bool(tags & {normalized(n) for n in names})

    included = [rule for name, rule in (("include_titles", titled), ("include_tags", tagged)) if rules.get(name)]
    if included and not any(rule(rules[name]) for name, rule in (("include_titles", titled),
                                                                  ("include_tags", tagged)) if rules.get(name)):
        return False
    return not (titled(rules.get("exclude_titles") or []) or tagged(rules.get("exclude_tags") or []))


def plan_actions(data_sources: Sequence[Mapping[str, Any]], dashboards: Sequence[Mapping[str, Any]], *,
                 bust_cache: bool, preload: bool) -> list[dict[str, Any]]:
    """Busts first, then preloads, each preload with ``after``: the busts it waits for. A preload that
    follows no bust ignores what its widgets have cached (``bust_cache``): the service skips a cached
    widget, so a preload after a load with no bust refreshed nothing (and its dashboard was said fresh)."""
    actions: list[dict[str, Any]] = []
    busted = [s["id"] for s in data_sources] if bust_cache else []
    actions += [{"kind": "bust", "id": s} for s in busted]
    if preload:
        for board in dashboards:
            reads = board.get("data_source_ids")
            after = busted if reads is None else [s for s in busted if str(s) in {str(r) for r in reads}]
            actions.append({"kind": "preload", "id": board["id"], "after": after, **({} if after else {
                "bust_cache": True})})
    return actions


MAX_EARLIER = 3
"""How many earlier jobs (``already_existed``) one action waits out before it gives up, ``stale``."""
STALE = "stale"
"""The status of an action whose job kept being one started before this refresh's request."""


def action_key(action: Mapping[str, Any]) -> str:
    return f"{action['kind']}:{action['id']}"


def is_final(status: str) -> bool:
    from analytics_provider.api.jobs.status import FINAL_JOB_STATUSES

    return status in FINAL_JOB_STATUSES or status == STALE


def submitted(book: Mapping[str, Mapping[str, Any]], key: str) -> bool:
    """Whether an action has its own job (one that waited out an earlier job is to be submitted anew)."""
    entry = book.get(key)
    return entry is not None and not entry.get("resubmit")


def follow_earlier(entry: Mapping[str, Any], existing_job_id: int) -> dict[str, Any]:
    """The book entry of an action the service pointed at an earlier job (``already_existed``):
    that job is waited for, not counted; ``stale`` after :data:`MAX_EARLIER` of them."""
    earlier = [*entry.get("earlier", []), int(existing_job_id)]
    if len(earlier) > MAX_EARLIER:
        return {"job_id": int(existing_job_id), "status": STALE, "earlier": earlier}
    return {"job_id": int(existing_job_id), "status": "created", "following": True, "earlier": earlier}


def waited_out(entry: dict[str, Any]) -> None:
    """An earlier job this entry followed has ended: the action is to be submitted anew."""
    if entry.get("following") and is_final(str(entry.get("status"))):
        entry["resubmit"] = True


def _waits_for(action: Mapping[str, Any], actions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The keys of the busts a preload waits for (a plan without ``after``: every bust)."""
    after = action.get("after")
    busts = [a for a in actions if a["kind"] == "bust"]
    return [action_key(b) for b in busts if after is None or str(b["id"]) in {str(s) for s in after}]


def blocked(actions: Sequence[Mapping[str, Any]], book: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each preload not submitted whose data source's bust failed, and those busts' keys."""
    found: dict[str, list[str]] = {}
    for action in actions:
        if action["kind"] != "preload" or submitted(book, action_key(action)):
            continue
        failed = [b for b in _waits_for(action, actions)
                  if b in book and is_final(str(book[b].get("status"))) and book[b].get("status") != "success"]
        if failed:
            found[action_key(action)] = failed
    return found


def next_actions(actions: Sequence[Mapping[str, Any]], book: Mapping[str, Mapping[str, Any]],
                 max_active: int) -> list[Mapping[str, Any]]:
    """The actions to submit now (see the module's text)."""
    pending = sum(1 for entry in book.values() if not is_final(str(entry.get("status"))))
    room = max(0, max_active - pending)
    chosen: list[Mapping[str, Any]] = []
    for action in actions:
        if len(chosen) >= room:
            break
        if submitted(book, action_key(action)):
            continue
        if action["kind"] == "preload" and not all(
                book.get(b, {}).get("status") == "success" for b in _waits_for(action, actions)):
            continue  # its busts are not all done (or one failed: blocked)
        chosen.append(action)
    return chosen


def resumable(book: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What a new try keeps of an earlier try's book: every job but those that failed (submitted anew)."""
    from analytics_provider.api.jobs.status import FINAL_JOB_STATUSES

    ended = (FINAL_JOB_STATUSES - {"success"}) | {STALE}
    return {k: dict(v) for k, v in book.items() if str(v.get("status")) not in ended or v.get("following")}


def describe_plan(result: Mapping[str, Any], *, dry_run: bool, actions: Sequence[Mapping[str, Any]],
                  left_out: Sequence[Mapping[str, Any]] = (), notes: Sequence[str] = ()) -> list[str]:
    """The plan as the task logs it, one line each: inputs, what is refreshed and why, what is not."""
    head = "Refresh plan (dry run: nothing is submitted)" if dry_run else "Refresh plan"
    busts = [a for a in actions if a["kind"] == "bust"]
    preloads = [a for a in actions if a["kind"] == "preload"]
    lines = [f"{head}: {len(result['tables'])} table(s), {len(result['data_models'])} data model(s), "
             f"{len(result['data_sets'])} data set(s); {len(busts)} cache bust(s), {len(preloads)} preload(s)"]
    for table in result["tables"]:
        ids = table["data_model_ids"]
        closest = table.get("closest")
        lines.append(f"  table {table['table']}: " + (
            f"read by data model(s) {', '.join(map(str, ids))}" if ids else "no data model reads it"
            + (f"; closest model tables: {', '.join(closest)}" if closest else "; no model table is close")))
    for source in result["data_sources"]:
        verb = "bust cache of" if busts else "(cache not busted)"
        lines.append(f"  {verb} data source {source['name']!r} ({source['id']}): {source['why']}")
    for board in result["dashboards"]:
        verb = "preload" if preloads else "(not preloaded)"
        lines.append(f"  {verb} dashboard {board['title']!r} ({board['id']}): {board['why']}")
    for board in left_out:
        lines.append(f"  left out by dashboards_filter: dashboard {board['title']!r} ({board['id']})")
    lines += [f"  note: {note}" for note in notes if not note.startswith("table ")]  # tables are shown above
    return lines
