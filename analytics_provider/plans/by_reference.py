"""A saved plan too large for an XCom, kept by reference: the plan in a file, its summary in the XCom.

Airflow keeps every XCom in its metadata database (or its XCom backend), and every task that pulls
one reads it whole: a plan of 20,000 changes is megabytes. Past :data:`MAX_XCOM_BYTES` (the
operators' ``max_xcom_bytes``), :func:`by_reference` writes the saved plan to a file of the plan
storage (a local folder, or an object-storage URL every worker reaches) named by its SHA-256, and
the XCom carries :func:`reference`: what the plan does (``what``, ``counts``), where it is, its size
and its SHA-256. :func:`resolved` reads it back for the apply task and refuses a file whose content
is not the one referenced (nothing is written). A saved plan within the limit stays in the XCom.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analytics_provider.exceptions import bounded
from analytics_provider.plans.saved import FORMAT, Json, SavedPlanError, size_problem, write_file

REFERENCE_FORMAT = "analytics_provider saved plan reference 1"
MAX_XCOM_BYTES = 256 * 1024
"""Bytes of a saved plan kept in the XCom itself (about a thousand changes); a larger one is
stored by reference."""


def bounded_repr(value: Any) -> str:
    return bounded(repr(value), 200)


def size_of(saved: Mapping[str, Any]) -> int:
    """The saved plan's bytes as JSON (what an XCom would hold)."""
    return len(json.dumps(saved, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def is_reference(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("format") == REFERENCE_FORMAT


STORAGE_FORMS = ("a folder for the saved plans: an absolute path (a folder, or none yet), an object-storage URL "
                 "every worker reaches (s3://bucket/plans, gs://..., file:///...), or an ObjectStoragePath")
"""What ``plan_storage`` takes (the operators' refusals quote it)."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]*", re.ASCII)


def storage_problem(storage: Any) -> str | None:
    """What is wrong with ``storage`` that can be known without writing (its type, a malformed
    URL, a relative path, a path that is there and no folder), or None. Whether an URL's scheme
    has a file system, or the folder can be written, is known when the plan is written."""
    if hasattr(storage, "protocol"):
        return None
    if not isinstance(storage, (str, os.PathLike)) or isinstance(storage, bytes):
        return f"it is of type {type(storage).__name__}, no folder"
    text = os.fspath(storage)
    if not isinstance(text, str) or not text.strip():
        return "it names no folder"
    if "://" in text:
        if not _SCHEME.fullmatch(text):
            return "it is no URL (scheme://location, without spaces)"
        if text.lower().startswith("file://") and not text[len("file://"):].startswith("/"):
            return ("a file:// URL names a folder as file:///absolute/path; this one depends on the folder each "
                    "worker runs in")
        if text.split("://", 1)[0].lower() == "memory":
            return ("memory:// is held by one process only: the apply, another task or command would never find "
                    "what it holds")
        return None
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ~user of no such user
        return f"{text.split('/', 1)[0]} names no user's home folder"
    if not path.is_absolute():
        return "a relative path depends on the folder each worker runs in"
    if path.exists() and not path.is_dir():
        return "it is there and is no folder"
    above = next((found for found in path.parents if found.exists()), None)
    if above is not None and not above.is_dir():
        return f"{above} is there and is no folder: no folder can be made in it"
    return None


def served_problem(storage: Any) -> str | None:
    """Beyond :func:`storage_problem`: for a URL, whether an installed file system serves its scheme
    (imports fsspec: for a command, or a running task), or None."""
    text = storage if isinstance(storage, str) else ""
    if "://" not in text:
        return None
    try:
        from fsspec.registry import get_filesystem_class
    except ImportError:  # no fsspec: Airflow's object storage names the problem when it is reached
        return None
    scheme = text.split("://", 1)[0].lower()
    try:
        get_filesystem_class(scheme)
    except (ValueError, ImportError) as exc:
        return f"no installed file system serves {scheme}:// ({bounded(str(exc), 200)})"
    return None


def by_reference(saved: Json, storage: Any, limit: int = MAX_XCOM_BYTES, where: str = "the plan task") -> Json:
    """``saved`` itself when it has at most ``limit`` bytes; else its :func:`reference`, after writing
    it whole to ``storage`` (a folder: a path, or an ``ObjectStoragePath``) as
    ``plan-<sha256>.json``. A storage that cannot take it raises :class:`SavedPlanError` naming
    ``where`` (the task), ``plan_storage`` and what it takes."""
    size = size_of(saved)
    if size <= limit or saved.get("format") != FORMAT:
        return saved
    data = (json.dumps(saved, indent=1, sort_keys=True) + "\n").encode()  # as write_file spells it
    name = f"plan-{saved['sha256']}.json"
    size_problem(len(data), name)
    problem = storage_problem(storage)
    try:
        if problem is not None:
            raise ValueError(problem)
        if hasattr(storage, "protocol") or "://" in str(storage):
            location = _write_remote(storage, name, data)
        else:
            location = _write_local(Path(os.fspath(storage)).expanduser(), name, data)
    except (OSError, ValueError, ImportError, TypeError) as exc:
        raise SavedPlanError(
            f"{where}: the saved plan ({len(data):,} bytes, past max_xcom_bytes={limit}) cannot be written to "
            f"plan_storage={bounded_repr(storage)} ({type(exc).__name__}: {exc}); plan_storage must be "
            f"{STORAGE_FORMS}") from None
    return {"format": REFERENCE_FORMAT, "what": saved.get("what"), "counts": saved.get("counts"),
            "changes_count": len(saved.get("changes") or []), "sha256": saved["sha256"],
            "file_sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "location": location}


def resolved(value: Any, where: str) -> Any:
    """The saved plan a :func:`reference` names, read back and checked (its file's SHA-256 and the
    plan's own); anything else as it is."""
    if not is_reference(value):
        return value
    location = str(value.get("location"))
    try:
        data = _read(location, value.get("bytes"))
    except (OSError, ValueError, ImportError) as exc:
        raise SavedPlanError(f"{where}: the saved plan at {location} cannot be read ({type(exc).__name__}: {exc}); "
                             "nothing was written: plan again, with plan storage every worker reaches "
                             "(plan_storage=)") from None
    if len(data) != value.get("bytes") or hashlib.sha256(data).hexdigest() != value.get("file_sha256"):
        raise SavedPlanError(f"{where}: the saved plan at {location} is not the one the plan task stored (its "
                             "size or SHA-256 differs: changed since?); nothing was written: plan again")
    saved = json.loads(data)
    if not isinstance(saved, dict) or saved.get("sha256") != value.get("sha256"):
        raise SavedPlanError(f"{where}: the saved plan at {location} is another plan; nothing was written")
    return saved


def _write_local(folder: Path, name: str, data: bytes) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    write_file(json.loads(data), target)  # whole or not at all: the same bytes (the same JSON spelling)
    return str(target.resolve())


def _write_remote(storage: Any, name: str, data: bytes) -> str:
    if not hasattr(storage, "protocol"):
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        storage = ObjectStoragePath(str(storage))
    target = storage / name
    with target.open("wb") as out:  # an object store's upload appears whole or not at all
        out.write(data)
    return str(target)


def _read(location: str, expected: Any) -> bytes:
    """The file's bytes, up to one past the ``expected`` size the reference records: a file grown is
    not read whole, and one replaced by a device or a pipe is refused unread (never waited on)."""
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < 1:
        raise ValueError(f"the reference records no size ({expected!r})")
    size_problem(expected, location)
    if "://" in location and not location.startswith("file://"):
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        with ObjectStoragePath(location).open("rb") as source:
            data = bytes(source.read(expected + 1))
    else:
        path = Path(location.removeprefix("file://"))
        if not stat.S_ISREG(path.stat().st_mode):
            raise ValueError("not a regular file")
        with path.open("rb") as source:
            data = source.read(expected + 1)
    return data
