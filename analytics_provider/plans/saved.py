"""A plan saved to be applied later exactly as reviewed (Terraform's ``plan -out`` and ``apply PLANFILE``).

A saved plan is JSON: the changes in the order they are sent, each with its write; and each
resource the plan touches as it was read when planning (:class:`Touched`: the values of the fields
the plan compared, or absent for one it creates, with their fingerprint). The provider's version
and a SHA-256 of the content guard it: a plan saved by another version, or edited by hand, is
refused. Applying it re-reads those resources first: if any changed, nothing is written
(:class:`StalePlanError`, "stale plan: plan again", naming each resource and what changed).
The JSON also carries ``counts`` and the ``changes``' rows, so a review shows it as any plan.
Nothing here knows a feature: a feature says which resources its changes touch and how to read
them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.providers.common.compat.sdk import AirflowFailException

from analytics_provider import __version__
from analytics_provider.exceptions import bounded
from analytics_provider.plans.plan import Action, Change, Plan
from analytics_provider.plans.writes import KINDS, Write

FORMAT = "analytics_provider saved plan 1"
LISTED_STALE = 20
"""Resources a stale plan's refusal names one by one; the rest are counted."""
Json = dict[str, Any]


class SavedPlanError(AirflowFailException):
    """A saved plan that cannot be applied as it is: another provider version's, edited, malformed,
    or stale. Nothing was written; plan again (a retry cannot help)."""


class StalePlanError(SavedPlanError):
    """A resource the saved plan touches changed since the plan was made: nothing was written."""


@dataclass(frozen=True)
class Touched:
    """A resource a plan writes, as read when planning. ``kind`` names its collection
    (``data_schedules``); ``id`` is None for one the plan creates (then ``key`` finds one made
    since); ``label`` names it in messages; ``fields`` holds the values the plan compared
    (None: there was none)."""

    kind: str
    id: int | None
    key: str
    label: str
    fields: Json | None

    def to_json(self) -> Json:
        return {"kind": self.kind, "id": self.id, "key": self.key, "label": self.label, "fields": self.fields,
                "fingerprint": fingerprint(self.fields)}


def fingerprint(fields: Json | None) -> str:
    """The SHA-256 of the compared fields' values (canonical JSON); of ``null`` for an absent one."""
    return hashlib.sha256(_canonical(fields).encode()).hexdigest()


def saved_plan(plan: Plan, changes: Sequence[Change[Any]], touched: Sequence[Touched],
               params: Mapping[str, Any], encode: Callable[[Any], Json] | None = None) -> Json:
    """The plan as JSON to save: ``changes`` in the order they will be sent; ``params``, what it
    was planned with (shown, and kept with it); ``encode`` turns a change's write into JSON
    (default: a :class:`~analytics_provider.plans.writes.Write`'s kind, id and fields)."""
    encode = encode or write_json
    content = {
        "format": FORMAT,
        "provider_version": __version__,
        "what": plan.what,
        "params": dict(params),
        "columns": {"subject": plan.subject_label, "target": plan.target_label},
        "counts": plan.counts(),
        "changes": [{**c.row(), "write": encode(c.sent)} for c in changes],
        "touched": [t.to_json() for t in touched],
        "left": list(plan.left),
    }
    content = json.loads(_canonical(content))  # as it reads back from a file or XCom (tuples are lists)
    return {**content, "sha256": _digest(content)}


def loaded(data: Any, where: str, what: str, decode: Callable[[Any], Any] | None = None
           ) -> tuple[list[Change[Any]], list[Touched], Json]:
    """The changes, the resources touched and the params of a saved plan of ``what`` (its
    ``Plan.what``: ``deliveries``, ``group members``); refused (nothing written) when it is not one,
    when another version of the provider saved it, or when its content no longer matches its
    hash. ``decode`` reads a change's write back (the inverse of :func:`saved_plan`'s ``encode``)."""
    decode = decode or write_of
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise SavedPlanError(f"{where}: not a saved plan of analytics_provider (no format {FORMAT!r}); make one "
                             "with a plan task, or `python -m analytics_provider.manage plan PATH --out PLAN.json`")
    if data.get("provider_version") != __version__:
        raise SavedPlanError(f"{where}: saved by analytics_provider {data.get('provider_version')!r}, this is "
                             f"{__version__}: plan again with this version (nothing was written)")
    content = {k: v for k, v in data.items() if k != "sha256"}
    if data.get("sha256") != _digest(content):
        raise SavedPlanError(f"{where}: the plan's content does not match its sha256 (edited since it was saved?): "
                             "plan again (nothing was written)")
    if data.get("what") != what:
        raise SavedPlanError(f"{where}: a saved plan of {data.get('what')!r}, not of {what}: nothing was written")
    try:
        changes = [_change(c, decode) for c in data["changes"]]
        touched = [Touched(t["kind"], t["id"], t["key"], t["label"], t["fields"]) for t in data["touched"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise SavedPlanError(f"{where}: a malformed saved plan ({bounded(repr(exc), 200)}): plan again") from None
    return changes, touched, dict(data.get("params") or {})


def stale(touched: Sequence[Touched], current: Callable[[Touched], Json | str | None]) -> list[str]:
    """What changed since the plan, one line per resource: ``current`` answers a touched
    resource's compared fields now (None: absent; a string: what happened to it instead)."""
    found = []
    for then in touched:
        now = current(then)
        if isinstance(now, str):
            found.append(f"{then.label}: {now}")
        elif now is None and then.fields is not None:
            found.append(f"{then.label}: deleted since the plan")
        elif now is not None and fingerprint(now) != fingerprint(then.fields):
            if then.fields is None:
                found.append(f"{then.label}: made since the plan")
            else:
                found.append(f"{then.label}: {'; '.join(_changed(then.fields, now, ''))}")
    return found


def _changed(then: Any, now: Any, where: str) -> list[str]:
    """``field then, now`` for each field that differs, nested fields by their dotted path."""
    if isinstance(then, Mapping) and isinstance(now, Mapping):
        return [line for name in sorted(set(then) | set(now), key=str)
                for line in _changed(then.get(name), now.get(name), f"{where}.{name}" if where else str(name))]
    return [] if then == now else [f"{where} {then!r} then, {now!r} now"]


def refuse_if_stale(where: str, found: Sequence[str]) -> None:
    if found:
        listed = "\n".join(f"- {bounded(line, 500)}" for line in found[:LISTED_STALE])
        more = f"\n... and {len(found) - LISTED_STALE} more" if len(found) > LISTED_STALE else ""
        raise StalePlanError(f"{where}: stale plan: plan again. {len(found)} resource(s) the plan touches changed "
                             f"since it was made; nothing was written:\n{listed}{more}")


def write_file(data: Json, path: str | Path) -> None:
    """Write the saved plan to ``path`` whole or not at all (a temporary file beside it, then renamed)."""
    target = Path(path)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def read_file(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SavedPlanError(f"{path}: cannot be read as a saved plan: {exc}") from None


def write_json(write: Write) -> Json:
    """A :class:`~analytics_provider.plans.writes.Write` as saved: its kind's name, id and fields."""
    return {"kind": write.kind.name, "id": write.id, "fields": write.fields}


def write_of(data: Mapping[str, Any]) -> Write:
    """The :class:`~analytics_provider.plans.writes.Write` :func:`write_json` saved."""
    ident = data["id"]
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, int)):
        raise ValueError(f"id {ident!r}")
    return Write(KINDS[data["kind"]], ident, data["fields"])


def _change(data: Mapping[str, Any], decode: Callable[[Any], Any]) -> Change[Any]:
    return Change(Action(data["action"]), str(data["subject"]), str(data["target"]), str(data["before"]),
                  str(data["after"]), write=decode(data["write"]))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _digest(content: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(content).encode()).hexdigest()
