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

Two different plans of one scope are two records: what holds them apart is the scope's apply lock
(:meth:`AppliedPlans.holding`), a file ``lock-<kind>-<scope>.json`` of the same folder, created
exclusively before the apply reads the service for its stale check and removed when it ends. A
second apply of the scope meanwhile is refused at once, naming the holder, and writes nothing; the
later apply takes the lock only once the earlier one has written, so its stale check sees those
writes. The service offers no conditional write: the lock holds only applies that share the
folder. While it holds its locks, an apply writes the time into them every :data:`HEARTBEAT`. A
lock an apply left behind (it crashed, its machine went away) is broken, with a note, when its
holder ran on this host and its process is gone, or when its holder ran on another host and its
last heartbeat (or its taking) is more than :data:`LOCK_BOUND` ago; a holder running on this host
is never broken. Any other is refused, naming the file to delete once its holder is known to have
stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import stat
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from analytics_provider.exceptions import bounded
from analytics_provider.plans.apply import SyncApplyError, for_saved_plan
from analytics_provider.plans.saved import SavedPlanError, digest, write_file

RECORD_FORMAT = "analytics_provider applied plan 1"
LOCK_FORMAT = "analytics_provider apply lock 1"
LOCK_BOUND = timedelta(hours=1)
"""How long since its last heartbeat (or since it was taken) a lock whose holder ran on another host
stands before another apply breaks it as left behind (one crashed on another machine leaves its
lock). A holder on this host whose process runs is never broken, however old its lock."""
HEARTBEAT = timedelta(minutes=5)
"""How often an apply holding locks writes the time into them (``heartbeat_at``): an apply that runs
for hours (a long access sync under a per-minute quota) keeps its locks fresh."""
log = logging.getLogger(__name__)


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
        return self._at(f"applied-{digest(data)}.json")

    def _at(self, name: str) -> Any:
        if hasattr(self.storage, "protocol") or "://" in str(self.storage):
            if not hasattr(self.storage, "protocol"):
                from airflow.providers.common.compat.sdk import ObjectStoragePath

                try:
                    found = ObjectStoragePath(str(self.storage)) / name
                    found.fs  # noqa: B018  # its file system, found now: a scheme none serves is named here
                except (ValueError, ImportError) as exc:
                    raise SavedPlanError(f"the plan storage {self.storage} cannot be reached: "
                                         f"{bounded(str(exc), 200)}; nothing was written") from None
                return found
            return self.storage / name
        return Path(os.fspath(self.storage)).expanduser() / name

    def unusable(self, exc: OSError) -> str:
        """What is wrong with the plan storage, as ``exc`` (raised writing in it) and a look at a
        local folder tell: a path that is there and no folder (``/dev/null``), one not writable."""
        if not hasattr(self.storage, "protocol") and "://" not in str(self.storage):
            path = Path(os.fspath(self.storage)).expanduser()
            for found in (path, *path.parents):
                if found.exists():
                    if not found.is_dir():
                        return f"the plan storage {self.storage} is no folder: {found} is there and is no folder"
                    if not os.access(found, os.W_OK | os.X_OK):
                        return f"the plan storage {self.storage} cannot be written: {found} is not writable here"
                    break
        return f"the plan storage {self.storage} cannot be written ({exc})"

    def refuse_if_applied(self, where: str, data: Mapping[str, Any]) -> None:
        """Refuse (nothing written) a plan that has a record: applied, or being applied."""
        try:
            record = self.record(data)
            if not record.exists():
                return
            text = _text(record)
        except OSError as exc:
            raise SavedPlanError(f"{where}: the record of applied plans {record} cannot be read ({exc}); nothing "
                                 "was written") from None
        except SavedPlanError as exc:
            raise SavedPlanError(f"{where}: {exc}") from None
        if text is None:
            raise SavedPlanError(f"{where}: the record of applied plans {record} is damaged (not UTF-8 text of at most "
                                 f"{MAX_LOCK_BYTES // 1024} KiB): this "
                                 "plan is refused as recorded; if it is known never to have been applied, delete "
                                 "the record and apply again, else plan again (nothing was written)")
        raise SavedPlanError(f"{where}: {_said(text, record)}; a plan is applied once, even when what it did was "
                             "undone since: plan again (nothing was written)")

    def claim(self, where: str, data: Mapping[str, Any]) -> None:
        """Create the plan's record, exclusively: refused when another apply made it first."""
        record = self.record(data)
        body = (json.dumps({"format": RECORD_FORMAT, "digest": digest(data), "plan_id": data.get("plan_id"),
                            "what": data.get("what"), "params": data.get("params"), "origin": data.get("origin"),
                            "by": self.by, "started_at": _now(), "outcome": "applying"}, indent=1) + "\n").encode()
        try:
            _create(record, body)
        except FileExistsError:
            text = ""
            with contextlib.suppress(OSError):
                text = _text(record) or ""
            raise SavedPlanError(f"{where}: another apply recorded this plan first: {_said(text, record)}; this one "
                                 "wrote nothing") from None
        except OSError as exc:
            raise SavedPlanError(f"{where}: {self.unusable(exc)}: a plan is applied only once recorded ({record}); "
                                 "nothing was written") from None

    def finish(self, data: Mapping[str, Any], outcome: str) -> None:
        """Write the apply's outcome into the plan's record (kept: the plan stays used)."""
        record = self.record(data)
        try:
            found = json.loads(_text(record) or "null")
            found["outcome"], found["finished_at"] = outcome, _now()
            if isinstance(record, Path):
                write_file(found, record)
            else:
                with record.open("wb") as out:
                    out.write((json.dumps(found, indent=1) + "\n").encode())
        except (OSError, ValueError, TypeError):  # the record stands (the plan is used); only its outcome is missing
            pass


    @contextlib.contextmanager
    def holding(self, where: str, what: str, scopes: Iterable[str]) -> Iterator[None]:
        """Hold the apply locks of ``what`` (a plan's kind) for each of ``scopes`` while the block runs:
        each taken in turn (sorted), and all released at its end; one held by another apply refuses
        this one (:class:`SavedPlanError`, naming the holder) before anything is read or written."""
        taken: list[tuple[Any, str]] = []
        stop = threading.Event()
        beating = threading.Thread(target=_heartbeat, args=(taken, stop), name="apply-lock-heartbeat", daemon=True)
        try:
            for scope in sorted(set(scopes)):
                taken.append(self._lock(where, what, scope))
            beating.start()
            yield
        finally:
            stop.set()
            if beating.is_alive():
                beating.join()
            for lock, token in reversed(taken):
                _release(lock, token)

    def _lock(self, where: str, what: str, scope: str) -> tuple[Any, str]:
        try:
            lock = self._at(f"lock-{_slug(what)}-{_slug(scope)}.json")
        except SavedPlanError as exc:
            raise SavedPlanError(f"{where}: {exc}") from None
        token = uuid.uuid4().hex
        body = (json.dumps({"format": LOCK_FORMAT, "what": what, "scope": scope, "by": self.by,
                            "host": socket.gethostname(), "pid": os.getpid(), "space": process_space(),
                            "started_at": _now(),
                            "token": token}, indent=1) + "\n").encode()
        for attempt in range(2):
            try:
                _create(lock, body)
                return lock, token
            except FileExistsError:
                _refuse_no_lock(where, lock)
                text: str | None = ""
                try:
                    text = _text(lock)
                except FileNotFoundError:
                    if not attempt:
                        continue  # released meanwhile: taken again
                except OSError:
                    pass
                if text is None:
                    raise SavedPlanError(
                        f"{where}: {lock} is no apply lock (not UTF-8 text of at most {MAX_LOCK_BYTES // 1024} "
                        f"KiB): once no apply of {what} ({scope}) is known to run, delete it and retry; nothing was "
                        "written") from None
                why = _left_behind(text, lock)
                if why is None or attempt or not _broken(lock, text):
                    raise SavedPlanError(
                        f"{where}: another apply of {what} ({scope}) is running {_holder(text, lock)}; nothing was "
                        f"written: retry when it ends (an apply that stopped without ending leaves its lock: "
                        f"once it is known to have stopped, delete {lock})") from None
                log.warning("%s: the apply lock %s was broken: %s (%s)", where, lock, why, _holder(text, lock))
            except OSError as exc:
                raise SavedPlanError(f"{where}: {self.unusable(exc)}: a plan is applied only under its apply lock "
                                     f"({lock}); nothing was written") from None
        raise AssertionError("unreachable")  # pragma: no cover


def held(once: AppliedPlans | None, where: str, what: str, scopes: Iterable[str]) -> Any:
    """``once``'s apply locks of ``scopes`` (:meth:`AppliedPlans.holding`); nothing to hold without records."""
    return contextlib.nullcontext() if once is None else once.holding(where, what, scopes)


def _create(path: Any, body: bytes) -> None:
    """Create ``path`` holding ``body``, exclusively: :class:`FileExistsError` when it is there."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # its folder is there and no folder (/dev/null): not a lock or record found
        raise NotADirectoryError(f"{path.parent} is there and is no folder") from None
    if isinstance(path, Path) and not hasattr(path, "protocol") and _linked_whole(path, body):  # local only
        return
    try:
        with path.open("xb") as out:
            out.write(body)
    except (ValueError, NotImplementedError):  # an object store without exclusive creates
        if path.exists():
            raise FileExistsError(str(path)) from None
        with path.open("wb") as out:
            out.write(body)


def _linked_whole(path: Path, body: bytes) -> bool:
    """Create the local file ``path`` whole (written aside, then hard-linked to its name, which fails when
    it is there): another apply never reads a lock half written. False where the file system has no
    hard links (it is then created in place)."""
    aside = path.with_name(f".{path.name}.{uuid.uuid4().hex}.new")
    aside.write_bytes(body)
    try:
        os.link(aside, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here
        return False
    finally:
        aside.unlink(missing_ok=True)
    return True


MAX_LOCK_BYTES = 64 * 1024
"""The most of a lock or a record of an applied plan read (an apply writes well under 1 KiB): one
larger is no lock or record of ours, refused as damaged, never read whole."""


def _text(path: Any) -> str | None:
    """The text of ``path`` (a lock or a record), or None when it is not UTF-8 or larger than
    :data:`MAX_LOCK_BYTES` (damaged): at most that much is read."""
    with path.open("rb") as found:
        raw = found.read(MAX_LOCK_BYTES + 1)
    if len(raw) > MAX_LOCK_BYTES:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _refuse_no_lock(where: str, lock: Any) -> None:
    """Refuse an apply whose lock's place holds no file (a folder, a pipe): it cannot be taken or broken."""
    if isinstance(lock, Path):
        with contextlib.suppress(OSError):
            mode = lock.lstat().st_mode
            if not stat.S_ISREG(mode):
                kind = "a folder" if stat.S_ISDIR(mode) else "a link" if stat.S_ISLNK(mode) else "no regular file"
                raise SavedPlanError(f"{where}: {lock}, the place of an apply lock, is {kind}: remove it (no apply "
                                     "ever makes one) and retry; nothing was written")


def _slug(name: str) -> str:
    """``name`` as a part of a file name: as it is when it is plain, else its hash."""
    plain = re.sub(r"\s+", "-", name.strip())
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", plain):
        return plain
    return "h" + hashlib.sha256(name.encode()).hexdigest()[:24]


def _lock_of(text: str) -> dict[str, Any] | None:
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) and found.get("format") == LOCK_FORMAT else None


def _holder(text: str, lock: Any) -> str:
    found = _lock_of(text)
    if found is None:
        return f"(its lock {lock} is being written, or unreadable)"
    return (f"since {found.get('started_at')} by {found.get('by')} (host {found.get('host')}, pid {found.get('pid')}; "
            f"its lock {lock})")


def _left_behind(text: str, lock: Any, now: datetime | None = None) -> str | None:
    """Why the lock in ``text`` was left by an apply that is gone, or None (its holder may be running)."""
    now = now or datetime.now(timezone.utc)
    found = _lock_of(text)
    if found is None:  # being written, or garbled: judged by the file's age where it has one
        try:
            since = datetime.fromtimestamp(lock.stat().st_mtime, timezone.utc) if isinstance(lock, Path) else None
        except OSError:
            since = None
    else:
        pid, host = found.get("pid"), found.get("host")
        if host == socket.gethostname() and found.get("space") == process_space() and isinstance(pid, int):
            if _running(pid):
                return None  # running here: never broken by age
            return f"its holder, process {pid} on this host ({host}), is no longer running"
        try:
            since = datetime.fromisoformat(str(found.get("heartbeat_at") or found.get("started_at")))
        except ValueError:
            since = None
        if since is not None and since.tzinfo is None:  # written by hand without its zone: taken as UTC
            since = since.replace(tzinfo=timezone.utc)
    if since is not None and now - since > LOCK_BOUND:
        return f"taken or last refreshed at {since.isoformat(timespec='seconds')}, more than {LOCK_BOUND} ago"
    return None


def process_space() -> str:
    """Where this process's ids mean what they say: its PID namespace and the machine's boot (Linux:
    two containers with one hostname each have a process 5; a pid from another namespace cannot be
    looked up here, and its lock is judged by its age), or "" where the system cannot tell."""
    parts = []
    for path, read in (("/proc/self/ns/pid", os.readlink), ("/proc/sys/kernel/random/boot_id", _first_line)):
        try:
            parts.append(read(path))
        except OSError:
            return ""
    return " ".join(parts)


def _first_line(path: str) -> str:
    with open(path, encoding="ascii") as source:
        return source.readline().strip()


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # another user's process, or not ours to ask: taken as running
    return True


def _broken(lock: Any, text: str) -> bool:
    """Remove the lock judged left behind (``text``), unless another apply broke and took it since:
    a local one is renamed aside first, and put back when what was moved is not what was judged."""
    if not isinstance(lock, Path):
        with contextlib.suppress(OSError):
            lock.unlink()
        return True
    aside = lock.with_name(f".{lock.name}.{uuid.uuid4().hex}.broken")
    try:
        os.rename(lock, aside)
    except FileNotFoundError:
        return True  # broken by another apply meanwhile: this one may take it
    try:
        if _text(aside) == text:
            return True
        with contextlib.suppress(OSError):
            os.link(aside, lock)  # another apply's fresh lock: back in its place
        return False
    finally:
        aside.unlink(missing_ok=True)


def _heartbeat(taken: list[tuple[Any, str]], stop: threading.Event) -> None:
    """Every :data:`HEARTBEAT` until ``stop``, write the time into each lock of ``taken`` still this apply's."""
    while not stop.wait(HEARTBEAT.total_seconds()):
        for lock, token in list(taken):
            beat(lock, token)


def beat(lock: Any, token: str) -> bool:
    """Write the time into ``lock`` as its ``heartbeat_at`` when it is still this apply's (``token``):
    a local one replaced whole (a new file renamed over it); whether it was."""
    try:
        found = _lock_of(_text(lock) or "")
        if found is None or found.get("token") != token:
            return False
        body = (json.dumps({**found, "heartbeat_at": _now()}, indent=1) + "\n").encode()
        if isinstance(lock, Path):
            part = lock.with_name(f".{lock.name}.{uuid.uuid4().hex}.beat")
            part.write_bytes(body)
            os.replace(part, lock)
        else:
            with lock.open("wb") as out:
                out.write(body)
    except OSError as exc:
        log.warning("the apply lock %s could not be refreshed: %s", lock, exc)
        return False
    return True


def _release(lock: Any, token: str) -> None:
    """Remove this apply's lock (one broken and taken by another apply since is left to it)."""
    with contextlib.suppress(OSError):
        found = _lock_of(_text(lock) or "")
        if found is not None and found.get("token") == token:
            lock.unlink()


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
        if isinstance(exc, SyncApplyError) and data is not None:
            raise for_saved_plan(exc) from exc.__cause__
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
        return (f"this plan is being applied now, or its record {record} is damaged (no whole record: if no apply "
                "of it runs and it is known never to have been applied, delete the record)")
    outcome = found.get("outcome")
    when = found.get("started_at")
    if outcome == "applying":
        return (f"this plan is being applied since {when} by {found.get('by')} (its record {record}; an apply that "
                "stopped without finishing leaves it so)")
    return f"this plan was applied at {when} by {found.get('by')}: {outcome} (its record {record})"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
