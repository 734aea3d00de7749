"""A plan saved to be applied later exactly as reviewed (Terraform's ``plan -out`` and ``apply PLANFILE``).

A saved plan is JSON: the changes in the order they are sent, each with its write (the real
values: what the apply sends); and each resource the plan touches as it was read when planning
(:class:`Touched`: the values of the fields the plan compared, secrets masked, or absent for one it
creates, with the fingerprint of the values themselves). It records where it was
made (:func:`origin`: the service's base address and the key's user): applied through a connection
to another service or account, it is refused before any write. Its ``sha256`` only catches a
file damaged by accident: whoever edits the file can recompute it. What binds a plan to its
approval is its :func:`digest` kept outside the file (with the review's answer in Airflow; given
to ``manage apply --plan F --digest D`` on the CLI): a plan whose content differs is refused. A
plan saved by another version of the provider is refused too. Applying it re-reads the resources
it touches first: if any changed, nothing is written (:class:`StalePlanError`, "stale plan: plan
again", naming each resource and what changed). The JSON also carries ``counts`` and the
``changes``' rows, so a review shows it as any plan. Nothing here knows a feature: a feature says
which resources its changes touch, how to read them again and which writes are its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airflow.providers.common.compat.sdk import AirflowFailException

from analytics_provider import __version__
from analytics_provider.api.call.network import masked_path
from analytics_provider.exceptions import bounded
from analytics_provider.plans.plan import Action, Change, Plan
from analytics_provider.plans.writes import KINDS, Write

FORMAT = "analytics_provider saved plan 1"
MAX_PLAN_BYTES = 64 * 1024 * 1024
"""The largest saved plan file read or written (64 MiB: about 100,000 changes of an access sync);
a larger one is refused unread, naming the file and the bound."""
MAX_DEPTH = 32
"""How deep a saved plan's JSON may nest (a plan's own is about 8 levels); deeper is refused."""
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
    (None: there was none), as people may read them: a feature masks its secrets (a webhook's
    token) with ``shown``; ``hashed`` is the fingerprint of the values themselves (of ``fields``
    when not given), which the staleness check compares."""

    kind: str
    id: int | None
    key: str
    label: str
    fields: Json | None
    hashed: str | None = None

    @classmethod
    def read(cls, kind: str, ident: int | None, key: str, label: str, fields: Json | None,
             shown: Callable[[Json], Json] | None = None) -> Touched:
        """The resource as read, its ``fields`` kept as ``shown`` masks them (their fingerprint whole)."""
        return cls(kind, ident, key, label, shown(fields) if shown and fields is not None else fields,
                   fingerprint(fields))

    @property
    def fingerprint(self) -> str:
        return self.hashed or fingerprint(self.fields)

    def to_json(self) -> Json:
        return {"kind": self.kind, "id": self.id, "key": self.key, "label": self.label, "fields": self.fields,
                "fingerprint": self.fingerprint}


def fingerprint(fields: Json | None) -> str:
    """The SHA-256 of the compared fields' values (canonical JSON); of ``null`` for an absent one."""
    return hashlib.sha256(_canonical(fields).encode()).hexdigest()


def origin(hook: Any) -> Json:
    """Where a plan is made or applied: the connection's base address as :func:`service_of` tells it
    (the plan file, its first line and the applied record are read by people) and the key's user
    (``GET /users/me``), as a saved plan records them."""
    user = hook.get_current_user() or {}
    url = hook.settings.base_url
    return {"service": service_of(url), "service_id": service_id(url), "user_id": user.get("id"),
            "user": user.get("email")}


def service_id(url: str) -> str:
    """What tells a service apart, compared and never shown: the SHA-256 of its address as
    :func:`service_of` reads it, a path segment that looks like a token included (two tenants of a
    gateway, ``/gw/staging01abc/`` and ``/gw/production99/``, are two services)."""
    return hashlib.sha256(("analytics-provider service " + service_of(url, masked=False)).encode()).hexdigest()


def service_of(url: str, *, masked: bool = True) -> str:
    """A base address as a plan shows it: scheme, host, port (a scheme's own left out) and path only.
    Its user and password (a gateway's token: ``http://TOKEN@host``), query (``?apikey=...``) and
    fragment are left out (services told apart only by those are one service; the key's user still
    tells accounts apart), and a path segment that looks like a token (``/gw/Tk3nS3cret9/api/v2``:
    :data:`~analytics_provider.api.call.network.SECRET_LOOKING`) is shown as ``***`` (unless not
    ``masked``: :func:`service_id` tells such services apart); a backslash is read as a ``/``."""
    parts = urlsplit(str(url).strip().replace("\\", "/"))
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    scheme = parts.scheme.lower()
    netloc = host + (f":{port}" if port is not None and (scheme, port) not in (("http", 80), ("https", 443)) else "")
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, netloc, masked_path(path) if masked else path, "", ""))


def saved_plan(plan: Plan, changes: Sequence[Change[Any]], touched: Sequence[Touched],
               params: Mapping[str, Any], made_at: Json, encode: Callable[[Any], Json] | None = None) -> Json:
    """The plan as JSON to save: ``changes`` in the order they will be sent; ``params``, what it
    was planned with (shown, and kept with it); ``made_at``, its :func:`origin`; ``encode`` turns
    a change's write into JSON (default: a :class:`~analytics_provider.plans.writes.Write`'s kind,
    id and fields)."""
    encode = encode or write_json
    content = {
        "format": FORMAT,
        "provider_version": __version__,
        "plan_id": uuid.uuid4().hex,
        "made_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "what": plan.what,
        "origin": made_at,
        "params": dict(params),
        "consent": {"scope": plan.scope, "declared": plan.declared, "kept": plan.kept},
        "columns": {"subject": plan.subject_label, "target": plan.target_label},
        "counts": plan.counts(),
        "changes": [{**c.row(), "write": encode(c.sent)} for c in changes],
        "touched": [t.to_json() for t in touched],
        "left": list(plan.left),
    }
    content = json.loads(_canonical(content))  # as it reads back from a file or XCom (tuples are lists)
    return {**content, "sha256": _digest(content)}


@dataclass(frozen=True)
class Consent:
    """What an apply of a saved plan is given beside it: the ``approved`` digest (None: no review
    bound it), and the removals it consents to, as a plan task's ``max_deletes`` and
    ``allow_delete_all`` (``flags``: how the caller spells them)."""

    approved: str | None = None
    max_deletes: int | None = None
    allow_delete_all: bool = False
    flags: tuple[str, str] = ("allow_delete_all=True", "max_deletes")
    once: Any = None
    """Where the plans applied are recorded (an :class:`~analytics_provider.plans.once.AppliedPlans`):
    a plan recorded there is refused, and this apply records it; None: not held to one use."""


def loaded(data: Any, where: str, what: str, hook: Any, consent: Consent,
           decode: Callable[[Any], Any] | None = None) -> tuple[list[Change[Any]], list[Touched], Json]:
    """The changes, the resources touched and the params of a saved plan of ``what`` (its
    ``Plan.what``: ``deliveries``, ``group members``); refused (nothing written) when it is not one,
    when another version of the provider saved it, when its content differs from the ``consent``'s
    approved digest (or from its own hash), when the ``consent``'s records say it was applied
    already, when ``hook`` reaches another service or account than
    it was made against, or when it removes more than the consent allows. ``decode`` reads a
    change's write back (the inverse of :func:`saved_plan`'s ``encode``)."""
    decode = decode or write_of
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise SavedPlanError(f"{where}: {not_a_plan(data) or _NOT_A_PLAN.format(found=f'no format {FORMAT!r}')}")
    problem = not_a_plan(data)
    if problem:
        raise SavedPlanError(f"{where}: {problem}")
    if data.get("provider_version") != __version__:
        raise SavedPlanError(f"{where}: saved by analytics_provider {data.get('provider_version')!r}, this is "
                             f"{__version__}: plan again with this version (nothing was written)")
    content = {k: v for k, v in data.items() if k != "sha256"}
    if consent.approved is not None and consent.approved != _digest(content):
        raise SavedPlanError(f"{where}: the plan's content is not the one approved (digest {_digest(content)}, "
                             f"approved {bounded(str(consent.approved), 80)}): it was changed after the review; "
                             "nothing was written")
    if data.get("sha256") != _digest(content):
        raise SavedPlanError(f"{where}: the plan's content does not match its sha256 (edited since it was saved?): "
                             "plan again (nothing was written)")
    if data.get("what") != what:
        raise SavedPlanError(f"{where}: a saved plan of {data.get('what')!r}, not of {what}: nothing was written")
    try:
        changes = [_change(c, decode) for c in data["changes"]]
        touched = [Touched(t["kind"], t["id"], t["key"], t["label"], t["fields"], _fingerprint_of(t))
                   for t in data["touched"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise SavedPlanError(f"{where}: a malformed saved plan ({bounded(repr(exc), 200)}): plan again") from None
    consented(data, where, consent, changes)
    if consent.once is not None:
        consent.once.refuse_if_applied(where, data)
    _refuse_elsewhere(where, data.get("origin"), origin(hook))
    return changes, touched, dict(data.get("params") or {})


SHAPES: dict[str, tuple[type, ...]] = {"what": (str,), "plan_id": (str,), "params": (dict,), "origin": (dict,),
                                       "consent": (dict,), "counts": (dict,), "changes": (list,), "touched": (list,),
                                       "left": (list,)}
"""The type of each part of a saved plan, where it has it."""


def not_a_plan(data: Any) -> str | None:
    """Why ``data`` is no saved plan of analytics_provider (any version), or None: not an object with
    its ``format``, a part of another type (``params: 5``), a string that is not text (a lone
    surrogate, ``\\ud800``: JSON can spell it, UTF-8 cannot)."""
    if not isinstance(data, Mapping) or not str(data.get("format", "")).startswith("analytics_provider saved plan "):
        found = f"no format {FORMAT!r}" if isinstance(data, Mapping) else f"{_json_type(data)}, not an object"
        return _NOT_A_PLAN.format(found=found)
    wrong = [f"{name} is {_json_type(data[name])}, not {_json_type(kinds[0]())}" for name, kinds in SHAPES.items()
             if data.get(name) is not None and not isinstance(data[name], kinds)]
    wrong = wrong or _parts_problems(data) or counts_problems(data)
    if wrong:
        return f"a malformed saved plan ({'; '.join(wrong[:5])}): plan again (nothing was written)"
    try:
        _canonical(data).encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"a malformed saved plan: it holds {exc.object[exc.start:exc.end]!a}, a lone surrogate that is no "
                "text: plan again (nothing was written)")
    return None


def counts_problems(data: Mapping[str, Any]) -> list[str]:
    """Where a saved plan's ``counts`` disagree with its ``changes`` (the writes the apply sends, one
    each): a review that asks a person, and says how much, by its counts must count its writes."""
    counted = Counter(str(c.get("action")) for c in data.get("changes") or [] if isinstance(c, Mapping))
    counts = data.get("counts") or {}
    return [f"counts.{action} {bounded(repr(counts.get(action, 0)), 20)}, but {counted.get(action, 0)} such "
            "change(s)" for action in sorted(set(counts) | set(counted), key=str)
            if counts.get(action, 0) != counted.get(action, 0)]


@dataclass(frozen=True)
class Shape:
    """What a saved plan of one kind (its ``what``) may hold: its changes' actions, the kinds of the
    resources it touches, and its ``params`` with a check of each (a value it may not be: refused)."""

    actions: frozenset[str]
    kinds: frozenset[str]
    params: Mapping[str, Callable[[Any], bool]]


def _ids(value: Any) -> bool:
    return isinstance(value, list) and all(_id(v) for v in value)


def _id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


PLAN_SHAPES: dict[str, Shape] = {
    "deliveries": Shape(frozenset({"create", "change", "remove"}), frozenset({"data_schedules", "data_alerts"}),
                        {"scope": lambda v: v is None or isinstance(v, str), "prune": lambda v: isinstance(v, bool)}),
    "group members": Shape(frozenset({"create", "invite", "add", "remove"}), frozenset({"users", "groups"}),
                           {"managed_group_ids": _ids}),
    "user attributes": Shape(frozenset({"invite", "add", "change", "remove"}),
                             frozenset({"users", "user_attribute_values"}), {"managed_attribute_ids": _ids}),
}
"""The shape of each kind of saved plan the provider makes (by its ``what``): a plan of another
``what`` is refused where it is applied."""


def _parts_problems(data: Mapping[str, Any]) -> list[str]:
    """What in a saved plan's changes, touched resources and params has not the shape its kind
    (:data:`PLAN_SHAPES`) gives them: each named by its place (``changes[0].action 'add'``)."""
    shape = PLAN_SHAPES.get(str(data.get("what")))
    if shape is None:
        return []
    found: list[str] = []
    params = data.get("params") or {}
    found += [f"params.{name} {bounded(repr(params[name]), 60)}" for name, fits in shape.params.items()
              if name in params and not fits(params[name])]
    for part, check in (("changes", _change_problems), ("touched", _touched_problems)):
        for n, item in enumerate(data.get(part) or []):
            at = f"{part}[{n}]"
            found += check(item, at, shape) if isinstance(item, Mapping) else [
                f"{at} is {_json_type(item)}, not an object"]
    return found


def _change_problems(change: Mapping[str, Any], at: str, shape: Shape) -> list[str]:
    return [*_not_one_of(change.get("action"), shape.actions, f"{at}.action"),
            *_strings(change, at, ("subject", "target", "before", "after")),
            *_write_problems(change.get("write"), f"{at}.write")]


def _touched_problems(then: Mapping[str, Any], at: str, shape: Shape) -> list[str]:
    return [*_not_one_of(then.get("kind"), shape.kinds, f"{at}.kind"), *_strings(then, at, ("key", "label")),
            *_id_and_fields(then, at)]


def _strings(part: Mapping[str, Any], at: str, names: Iterable[str]) -> list[str]:
    return [f"{at}.{name} is {_json_type(part.get(name))}, not a string" for name in names
            if not isinstance(part.get(name), str)]


def _id_and_fields(part: Mapping[str, Any], at: str) -> list[str]:
    """A resource's ``id`` (a whole number or null) and ``fields`` (an object or null), where they are wrong."""
    found = []
    if part.get("id") is not None and not _id(part.get("id")):
        found.append(f"{at}.id {bounded(repr(part.get('id')), 60)}, not a whole number or null")
    if part.get("fields") is not None and not isinstance(part.get("fields"), Mapping):
        found.append(f"{at}.fields is {_json_type(part.get('fields'))}, not an object or null")
    return found


def _not_one_of(value: Any, allowed: Iterable[str], at: str) -> list[str]:
    if isinstance(value, str) and value in allowed:
        return []
    return [f"{at} {bounded(repr(value), 60)}, not one of {', '.join(sorted(allowed))}"]


def _write_problems(write: Any, at: str) -> list[str]:
    """What in a change's saved write has not its shape: a resource's (kind, id, fields), a
    membership, an invitation or an attribute entry."""
    if not isinstance(write, Mapping):
        return [f"{at} is {_json_type(write)}, not an object"]
    if "membership" in write:
        found = write["membership"] if isinstance(write["membership"], Mapping) else {}
        fits = _id(found.get("user_id")) and (_id(found.get("group")) or isinstance(found.get("group"), str))
        return [] if fits else [f"{at}.membership {bounded(repr(write['membership']), 80)}"]
    if "invitation" in write:
        found = write["invitation"] if isinstance(write["invitation"], Mapping) else {}
        fits = isinstance(found.get("email"), str) and isinstance(found.get("role"), str) and _ids(
            found.get("group_ids"))
        return [] if fits else [f"{at}.invitation {bounded(repr(write['invitation']), 80)}"]
    if "entry" in write:
        found = write["entry"] if isinstance(write["entry"], Mapping) else {}
        fits = _id(found.get("subject_id")) and _id(found.get("user_attribute_id"))
        return [] if fits else [f"{at}.entry {bounded(repr(write['entry']), 80)}"]
    return [*_not_one_of(write.get("kind"), set(KINDS), f"{at}.kind"), *_id_and_fields(write, at)]


_NOT_A_PLAN = ("not a saved plan of analytics_provider ({found}); make one with a plan task, or `python -m "
               "analytics_provider.manage plan PATH --out PLAN.json`")


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
             dict: "an object"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def consented(data: Mapping[str, Any], where: str, consent: Consent,
              changes: Sequence[Change[Any]] | None = None) -> None:
    """Refuse the saved plan's removals as :meth:`Plan.refusal` does when ``consent`` (``max_deletes``,
    ``allow_delete_all``) does not cover them; ``changes``: the plan's, else counted from its rows."""
    if changes is None:
        rows: list[Any] = data["changes"] if isinstance(data.get("changes"), list) else []
        changes = [Change(Action(str(r.get("action"))), str(r.get("subject")), str(r.get("target")))
                   for r in rows if isinstance(r, Mapping) and r.get("action") in {a.value for a in Action}]
    given: Mapping[str, Any] = data["consent"] if isinstance(data.get("consent"), Mapping) else {}
    plan = Plan(str(data.get("what")), "", "", changes=list(changes), scope=str(given.get("scope") or ""),
                declared=given.get("declared"), kept=given.get("kept"))
    refusal = plan.refusal(consent.max_deletes, consent.allow_delete_all, consent.flags)
    if refusal:
        raise SavedPlanError(f"{where}: {refusal}")


def digest(data: Mapping[str, Any]) -> str:
    """The SHA-256 of a saved plan's content (all but its own ``sha256``): what a review approves."""
    return _digest({k: v for k, v in data.items() if k != "sha256"})


def _refuse_elsewhere(where: str, made: Any, here: Json) -> None:
    made = made if isinstance(made, Mapping) else {}
    for name, label in (("service_id", "service"), ("service", "service"), ("user_id", "account")):
        if made.get(name) != here[name]:
            raise SavedPlanError(
                f"{where}: the plan was made against {_place(made)} and this connection reaches {_place(here)}: "
                f"another {label}; plan again through this connection (nothing was written)")


def _place(at: Mapping[str, Any]) -> str:
    return f"{at.get('service') or '(no service recorded)'} as {at.get('user') or at.get('user_id') or '(no user)'}"


def stale(touched: Sequence[Touched], current: Callable[[Touched], Json | str | None],
          shown: Callable[[Json], Json] | None = None) -> list[str]:
    """What changed since the plan, one line per resource: ``current`` answers a touched
    resource's compared fields now (None: absent; a string: what happened to it instead), compared
    by fingerprint; ``shown`` masks them for the message as the plan's ``fields`` were."""
    found = []
    for then in touched:
        now = current(then)
        if isinstance(now, str):
            found.append(f"{then.label}: {now}")
        elif now is None and then.fields is not None:
            found.append(f"{then.label}: deleted since the plan")
        elif now is not None and fingerprint(now) != then.fingerprint:
            if then.fields is None:
                found.append(f"{then.label}: made since the plan")
            else:
                changed = _changed(then.fields, shown(now) if shown else now, "")
                found.append(f"{then.label}: {'; '.join(changed) or 'a masked value changed (not shown)'}")
    return found


def _fingerprint_of(touched: Mapping[str, Any]) -> str | None:
    found = touched.get("fingerprint")
    if found is not None and not (isinstance(found, str) and re.fullmatch(r"[0-9a-f]{64}", found)):
        raise ValueError(f"fingerprint {bounded(repr(found), 80)}")
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


def write_file(data: Json, path: str | Path, *, replace: bool = True) -> None:
    """Write the saved plan to ``path`` whole or not at all: to a new temporary file beside it (made
    with ``O_EXCL``, mode 0600), then renamed over ``path`` (``replace``: a file there is replaced, a
    symbolic link there is replaced, never followed) or linked to it (``replace=False``: refused
    with :class:`FileExistsError` when anything is there, even one made since it was checked)."""
    target = Path(path)
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    size_problem(len(text.encode()), target)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if replace:
            os.replace(tmp_name, target)
        else:
            os.link(tmp_name, target)  # never over what is there (a rename would replace it)
    finally:
        Path(tmp_name).unlink(missing_ok=True)


def size_problem(size: int, path: str | Path) -> None:
    """Refuse a saved plan of more than :data:`MAX_PLAN_BYTES`."""
    if size > MAX_PLAN_BYTES:
        raise SavedPlanError(f"{path}: {size:,} bytes, more than a saved plan may have ({MAX_PLAN_BYTES:,} bytes): "
                             "not read or written; plan a narrower scope")


def read_file(path: str | Path) -> Any:
    """The saved plan in ``path``, a regular file; refused unread past :data:`MAX_PLAN_BYTES`, and
    when it is not JSON or nests deeper than :data:`MAX_DEPTH`."""
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as source:  # a pipe: not waited on
            if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
                raise SavedPlanError(f"{path}: not a regular file: not a saved plan (not read)")
            size_problem(os.fstat(source.fileno()).st_size, path)
            raw = source.read(MAX_PLAN_BYTES + 1)
        size_problem(len(raw), path)  # grown since
        text = raw.decode("utf-8")
        if nesting(text) > MAX_DEPTH:
            raise SavedPlanError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a saved plan (not read)")
        return json.loads(text, object_pairs_hook=_once_each)
    except (OSError, ValueError) as exc:
        raise SavedPlanError(f"{path}: cannot be read as a saved plan: {exc}") from None


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: a second ``recipients`` far to the right of the
    first was read (the last wins) where a person reading the file saw the first."""
    found = dict(pairs)
    if len(found) != len(pairs):
        twice = sorted({key for key, _ in pairs if sum(k == key for k, _ in pairs) > 1})
        raise ValueError(f"the key {twice[0]!r} is given twice in one object (a person reads the first, JSON the last)")
    return found


def is_saved_plan(path: str | Path) -> bool:
    """Whether ``path`` holds a saved plan (of any version of the provider), read as :func:`read_file` does."""
    try:
        data = read_file(path)
    except SavedPlanError:
        return False
    return isinstance(data, dict) and str(data.get("format", "")).startswith("analytics_provider saved plan ")


def nesting(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings not counted),
    found without parsing it (a parser recurses: a deep enough text exhausts Python's stack)."""
    deepest = depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


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
