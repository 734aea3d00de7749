"""Writing a downloaded file so that the destination never holds a partial one.

The bytes go to a temporary file first (beside a local destination, so the final ``os.replace``
is atomic; on local disk for an object store, which then receives one complete upload). Only a
file known to be complete reaches the destination (:mod:`.completeness` says how it is known). A
local file gets the mode a plain ``open(path, "w")`` would give (``0666`` less the umask), or
``file_mode``.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from analytics_provider.exceptions import AnalyticsParameterError, IncompleteDownloadError
from analytics_provider.hooks.stores import check_store

CHUNK_SIZE = 1024 * 1024
LOCAL_PROTOCOLS = ("file", "local")
NAME_MAX = 255
"""Bytes a file name may have (ext4, XFS, btrfs, APFS, NTFS in UTF-16 units: the common bound)."""

Destination = str | os.PathLike[str] | Any  # Any: airflow.sdk.ObjectStoragePath


def check_destination(destination: Destination) -> None:
    """Refuse, before any job is submitted, a destination the download could not write.

    A local destination's file name must be one a disk takes (no NUL, at most :data:`NAME_MAX`
    bytes), its folder must exist or be creatable and accept a new file (tried with a probe
    file, which is removed). An object-storage URL must parse, and its store's filesystem be
    installed (:func:`~analytics_provider.hooks.stores.check_store`). Errors start ``destination '<destination>': ``.
    """
    if destination is None or (isinstance(destination, str) and not destination.strip()):
        raise AnalyticsParameterError("destination is required: a local path, a folder ending in / or a URL")
    if not isinstance(destination, (str, os.PathLike)) and not hasattr(destination, "protocol"):
        raise AnalyticsParameterError(
            f"destination must be a path, a URL or an ObjectStoragePath, got {type(destination).__name__}"
        )
    shown = str(destination)
    if "\0" in shown:
        part = "file name" if "\0" in re.split(r"[/\\]", shown)[-1] else "path"
        raise AnalyticsParameterError(f"destination {shown!r}: the {part} holds a NUL character")
    try:
        remote = _remote_path(destination)
    except Exception as exc:
        scheme = urlsplit(shown).scheme
        raise AnalyticsParameterError(
            f"destination {shown!r}: '{scheme}://' is no scheme of a filesystem installed here ({exc})"
        ) from None
    if remote is not None:
        check_store(remote, shown)
        return
    local = _local_path(destination, None)  # a folder destination gives folder/export here
    size = len(os.fsencode(local.name))
    if size > NAME_MAX:
        raise AnalyticsParameterError(
            f"destination {shown!r}: the file name is {size} bytes long; a file name has at most {NAME_MAX}")
    folder = local.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = _create_scratch(str(folder))
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise AnalyticsParameterError(
            f"destination {os.fspath(local)!r}: the folder {str(folder)!r} cannot be written "
            f"({exc.strerror or type(exc).__name__})"
        ) from None
    if _is_dir(local):
        raise AnalyticsParameterError(f"destination {os.fspath(local)!r} is a folder; end it with / to write inside it")


def save_stream(
    chunks: Iterable[bytes],
    destination: Destination,
    *,
    expected_bytes: int | None,
    suggested_name: str | None,
    what: str,
    arrived: Callable[[], int] | None = None,
    file_mode: int | None = None,
) -> tuple[str, int]:
    """Write ``chunks`` to ``destination``; return the final location and the byte count.

    A destination that is a folder (an existing one, or a path ending in ``/``) receives the
    file under ``suggested_name``. ``arrived`` counts the bytes that came over the wire (they
    differ from those written when the host compressed the file anyway); that count is checked
    against ``expected_bytes``.
    """
    wants_folder = os.fspath(destination).endswith("/") if isinstance(destination, (str, os.PathLike)) else False
    remote = _remote_path(destination)
    local = None if remote is not None else _local_path(destination, suggested_name)
    scratch_dir = str(local.parent) if local is not None else None
    try:
        if local is not None:
            local.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = _create_scratch(scratch_dir)
    except OSError as exc:
        raise AnalyticsParameterError(
            f"destination {str(local or destination)!r} cannot be written ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        size = 0
        try:
            with os.fdopen(fd, "wb") as tmp:
                for chunk in chunks:
                    tmp.write(chunk)
                    size += len(chunk)
                if file_mode is not None:
                    os.fchmod(tmp.fileno(), file_mode)
        except OSError as exc:  # the chunks' own failures are AnalyticsApiError, never OSError
            raise OSError(exc.errno, f"{what}: destination {str(local or destination)!r}: "
                                     f"{_write_failure(exc)}; the destination is left as it was") from None
        received = arrived() if arrived is not None else size
        if expected_bytes is not None and received != expected_bytes:
            raise IncompleteDownloadError(
                f"{what}: received {received} of {expected_bytes} bytes", method="GET", path="/exports/download"
            )
        if local is not None:
            try:
                os.replace(tmp_name, local)
            except OSError as exc:
                raise AnalyticsParameterError(
                    f"destination {str(local)!r} cannot be written ({exc.strerror or type(exc).__name__})"
                ) from None
            return str(local), size
        target = _remote_target(remote, suggested_name, wants_folder)
        with open(tmp_name, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, CHUNK_SIZE)
        return str(target), size
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


@contextmanager
def task_named_on_write_failure(task_id: str) -> Iterator[None]:
    """A write that fails (a full disk) raises the same ``OSError`` (``errno`` kept), its text
    naming the task first."""
    try:
        yield
    except OSError as exc:
        raise OSError(exc.errno, f"{task_id}: {exc.strerror or exc}") from None


def _write_failure(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full (no space left on the device)"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is used up"
    if exc.errno == errno.EFBIG:
        return "the file is larger than the file system (or a limit) allows"
    return f"the file cannot be written ({exc.strerror or type(exc).__name__})"


def _create_scratch(folder: str | None) -> tuple[int, str]:
    """A new hidden file, created as a plain write would create it (mode ``0666`` less the umask)."""
    folder = folder or tempfile.gettempdir()
    for _ in range(100):
        name = os.path.join(folder, f".analytics-download-{secrets.token_hex(8)}.part")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free scratch name in {folder}")


def _remote_path(destination: Destination) -> Any | None:
    """An object-storage path that is not on local disk, or None."""
    # A path object with a protocol (UPath, ObjectStoragePath) is kept whole (with its conn_id):
    # the universal-pathlib that Airflow 3.0 and 3.1 use makes it os.PathLike too.
    if isinstance(destination, str) or (isinstance(destination, os.PathLike) and not hasattr(destination, "protocol")):
        text = os.fspath(destination)
        if "://" not in text or text.startswith("file://"):
            return None
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        destination = ObjectStoragePath(text)
    protocol = getattr(destination, "protocol", None)
    return None if protocol in LOCAL_PROTOCOLS else destination


def _local_path(destination: Destination, suggested_name: str | None) -> Path:
    text = os.fspath(destination) if isinstance(destination, (str, os.PathLike)) else str(destination.path)
    if text.startswith("file://"):
        text = text[len("file://") :]
    path = Path(text).expanduser()
    if text.endswith(("/", os.sep)) or _is_dir(path):
        path = path / (suggested_name or "export")
    return path


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long to look up: check_destination says so
        return False


def _remote_target(remote: Any, suggested_name: str | None, wants_folder: bool) -> Any:
    # ObjectStoragePath drops a trailing "/", so the caller's spelling says "folder"
    if wants_folder or str(remote).endswith("/") or (remote.exists() and remote.is_dir()):
        return remote / (suggested_name or "export")
    return remote
