"""A saved plan is applied once: each apply records the plan it applies, and a plan recorded is refused.

The stale check cannot tell an old plan from a new one once the service was put back as the plan
found it (a revoked grant, a pruned alert): an approved plan applied, undone, then applied again
(a re-run CI job, a cleared task of an old run) passes it. So each apply of a saved plan records
the plan's digest in :class:`AppliedPlans`, a folder (a path, or an object-storage URL) of records
``applied-<digest>.json``: looked up before anything is read (a plan recorded is refused, naming
when, by whom and with what outcome), then created exclusively right before the first write (of
two applies at once, the one that did not create it writes nothing), and given the outcome at the
end. A plan's digest covers its ``plan_id`` (random, made with the plan), so a new plan of the same
changes is a new plan.

The service cannot hold these records (it keeps nothing of a membership removed or a schedule
deleted), so the guarantee rests on the folder: only the applies that share it are held to one
use; a local folder serves one machine. Where an object store cannot create a file exclusively
(its filesystem refuses mode ``x``), the record is looked up and then written: two applies in the
same instant may then both pass it, and each write's own re-read (the stale check before each
update and delete, the creates' re-read) is what holds them apart.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from analytics_provider.exceptions import bounded
from analytics_provider.plans.saved import SavedPlanError, digest, write_file

RECORD_FORMAT = "analytics_provider applied plan 1"


def default_plan_storage() -> str:
    """``[common.io] xcom_objectstorage_path`` when set (Airflow's object-storage XCom), else a folder
    under ``$AIRFLOW_HOME``."""
    from airflow.providers.common.compat.sdk import conf

    shared = conf.get("common.io", "xcom_objectstorage_path", fallback="")
    home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    return shared.rstrip("/") + "/analytics_provider/plans" if shared else os.path.join(home, "analytics_provider",
                                                                                       "plans")


@dataclass(frozen=True)
class AppliedPlans:
    """The records of the saved plans applied, in ``storage`` (a folder: a path, a URL or an
    ``ObjectStoragePath``); ``by`` names this apply in the record it makes (a task of a run, the
    command line on a host)."""

    storage: Any
    by: str

    def record(self, data: Mapping[str, Any]) -> Any:
        """Where the plan's record is (a ``Path``, or an ``ObjectStoragePath`` for a URL)."""
        name = f"applied-{digest(data)}.json"
        if hasattr(self.storage, "protocol") or "://" in str(self.storage):
            if not hasattr(self.storage, "protocol"):
                from airflow.providers.common.compat.sdk import ObjectStoragePath

                return ObjectStoragePath(str(self.storage)) / name
            return self.storage / name
        return Path(os.fspath(self.storage)).expanduser() / name

    def refuse_if_applied(self, where: str, data: Mapping[str, Any]) -> None:
        """Refuse (nothing written) a plan that has a record: applied, or being applied."""
        record = self.record(data)
        try:
            if not record.exists():
                return
            text = record.read_text(encoding="utf-8")
        except OSError as exc:
            raise SavedPlanError(f"{where}: the record of applied plans {record} cannot be read ({exc}); nothing "
                                 "was written") from None
        raise SavedPlanError(f"{where}: {_said(text, record)}; a plan is applied once, even when what it did was "
                             "undone since: plan again (nothing was written)")

    def claim(self, where: str, data: Mapping[str, Any]) -> None:
        """Create the plan's record, exclusively: refused when another apply made it first."""
        record = self.record(data)
        body = (json.dumps({"format": RECORD_FORMAT, "digest": digest(data), "plan_id": data.get("plan_id"),
                            "what": data.get("what"), "params": data.get("params"), "origin": data.get("origin"),
                            "by": self.by, "started_at": _now(), "outcome": "applying"}, indent=1) + "\n").encode()
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            try:
                with record.open("xb") as out:
                    out.write(body)
            except (ValueError, NotImplementedError):  # an object store without exclusive creates
                if record.exists():
                    raise FileExistsError(str(record)) from None
                with record.open("wb") as out:
                    out.write(body)
        except FileExistsError:
            text = ""
            with contextlib.suppress(OSError):
                text = record.read_text(encoding="utf-8")
            raise SavedPlanError(f"{where}: another apply recorded this plan first: {_said(text, record)}; this one "
                                 "wrote nothing") from None
        except OSError as exc:
            raise SavedPlanError(f"{where}: the plan's record {record} cannot be written ({exc}): a plan is applied "
                                 "only once recorded; nothing was written") from None

    def finish(self, data: Mapping[str, Any], outcome: str) -> None:
        """Write the apply's outcome into the plan's record (kept: the plan stays used)."""
        record = self.record(data)
        try:
            found = json.loads(record.read_text(encoding="utf-8"))
            found["outcome"], found["finished_at"] = outcome, _now()
            if isinstance(record, Path):
                write_file(found, record)
            else:
                with record.open("wb") as out:
                    out.write((json.dumps(found, indent=1) + "\n").encode())
        except (OSError, ValueError):  # the record stands (the plan is used); only its outcome is missing
            pass


def applied_once(where: str, data: Mapping[str, Any], once: AppliedPlans | None, ready: Callable[[], None] | None,
                 apply: Callable[[], int]) -> int:
    """Record the plan (``once``: refused when recorded meanwhile), call ``ready``, then ``apply``;
    the outcome goes into the record (the number applied, or the failure)."""
    if once is not None:
        once.claim(where, data)
    if ready is not None:
        ready()
    try:
        applied = apply()
    except BaseException as exc:
        if once is not None:
            once.finish(data, f"failed: {bounded(str(exc), 300)}")
        raise
    if once is not None:
        once.finish(data, f"applied {applied} change(s)")
    return applied


def _said(text: str, record: Any) -> str:
    """What a record says of its plan's apply (one made by an apply still writing it: that)."""
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        return f"this plan is being applied now (its record {record} is being written)"
    outcome = found.get("outcome")
    when = found.get("started_at")
    if outcome == "applying":
        return (f"this plan is being applied since {when} by {found.get('by')} (its record {record}; an apply that "
                "stopped without finishing leaves it so)")
    return f"this plan was applied at {when} by {found.get('by')}: {outcome} (its record {record})"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
