"""Writing a downloaded file so that the destination never holds a partial one.

The bytes go to a temporary file first (beside a local destination, so the final ``os.replace``
is atomic; on local disk for an object store, which then receives one complete upload). Only a
complete file, whose size matches ``Content-Length``, reaches the destination.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from analytics_provider.exceptions import IncompleteDownloadError

CHUNK_SIZE = 1024 * 1024
LOCAL_PROTOCOLS = ("file", "local")

Destination = str | os.PathLike[str] | Any  # Any: airflow.sdk.ObjectStoragePath


def filename_from_disposition(value: str | None) -> str | None:
    """The file name a ``Content-Disposition`` header proposes, reduced to a bare name."""
    if not value:
        return None
    found = re.search(r"filename\*?=(?:UTF-8'')?\"?([^\";]+)\"?", value, flags=re.IGNORECASE)
    name = os.path.basename(found.group(1).strip()) if found else ""
    return name or None


def save_stream(
    chunks: Iterable[bytes],
    destination: Destination,
    *,
    expected_bytes: int | None,
    suggested_name: str | None,
    what: str,
) -> tuple[str, int]:
    """Write ``chunks`` to ``destination``; return the final location and the byte count.

    A destination that is a folder (an existing one, or a path ending in ``/``) receives the
    file under ``suggested_name``.
    """
    wants_folder = os.fspath(destination).endswith("/") if isinstance(destination, (str, os.PathLike)) else False
    remote = _remote_path(destination)
    local = None if remote is not None else _local_path(destination, suggested_name)
    scratch_dir = str(local.parent) if local is not None else None
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".analytics-download-", suffix=".part", dir=scratch_dir)
    try:
        size = 0
        with os.fdopen(fd, "wb") as tmp:
            for chunk in chunks:
                tmp.write(chunk)
                size += len(chunk)
        if expected_bytes is not None and size != expected_bytes:
            raise IncompleteDownloadError(
                f"{what}: received {size} of {expected_bytes} bytes", method="GET", path="/exports/download"
            )
        if local is not None:
            os.replace(tmp_name, local)
            return str(local), size
        target = _remote_target(remote, suggested_name, wants_folder)
        with open(tmp_name, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, CHUNK_SIZE)
        return str(target), size
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


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
    if text.endswith(("/", os.sep)) or path.is_dir():
        path = path / (suggested_name or "export")
    return path


def _remote_target(remote: Any, suggested_name: str | None, wants_folder: bool) -> Any:
    # ObjectStoragePath drops a trailing "/", so the caller's spelling says "folder"
    if wants_folder or str(remote).endswith("/") or (remote.exists() and remote.is_dir()):
        return remote / (suggested_name or "export")
    return remote
