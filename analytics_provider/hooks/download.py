"""Writing a downloaded file so that the destination never holds a partial one.

The bytes go to a temporary file first (beside a local destination, so the final ``os.replace``
is atomic; on local disk for an object store, which then receives one complete upload). Only a
file known to be complete reaches the destination (:func:`wire_length` says how it is known). A
local file gets the mode a plain ``open(path, "w")`` would give (``0666`` less the umask), or
``file_mode``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from analytics_provider.exceptions import (
    AnalyticsParameterError,
    IncompleteDownloadError,
    UnverifiableDownloadError,
)

CHUNK_SIZE = 1024 * 1024
LOCAL_PROTOCOLS = ("file", "local")
IDENTITY = ("", "identity")
COMPRESSED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The content codings a download decodes itself (zlib's window bits), each ending in a mark
(gzip's trailer: CRC and size; zlib's checksum) that tells a whole body from a cut one."""

Destination = str | os.PathLike[str] | Any  # Any: airflow.sdk.ObjectStoragePath


def filename_from_disposition(value: str | None) -> str | None:
    """The file name a ``Content-Disposition`` header proposes, reduced to a bare name."""
    if not value:
        return None
    found = re.search(r"filename\*?=(?:UTF-8'')?\"?([^\";]+)\"?", value, flags=re.IGNORECASE)
    name = os.path.basename(found.group(1).strip()) if found else ""
    if name in (".", ".."):
        return None
    return name[-200:] or None  # the end keeps the extension


def content_coding(headers: Mapping[str, str]) -> str:
    return headers.get("Content-Encoding", "").strip().lower()


def wire_length(headers: Mapping[str, str], what: str) -> int | None:
    """The bytes the body must have on the wire, or None where its own framing tells its end.

    A chunked body must end with its last chunk (the HTTP client raises otherwise); a compressed
    one (gzip, deflate) with its compressed stream's end (:func:`decoded` raises otherwise);
    otherwise ``Content-Length`` counts it. A body with none of these, sent until the connection
    closes, cannot be told from a cut one: :class:`UnverifiableDownloadError`, before any byte is
    written. So is a coding this module does not decode (``br``, ``zstd``).
    """
    coding = content_coding(headers)
    if coding not in IDENTITY and coding not in COMPRESSED:
        raise UnverifiableDownloadError(
            f"{what}: the file host sent the file encoded as {coding!r} although asked for it uncompressed; "
            f"only gzip and deflate are decoded and checked for completeness, so the file is not written")
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return None
    length = headers.get("Content-Length", "").strip()
    if length.isdigit():
        return int(length)
    if coding in COMPRESSED:
        return None
    raise UnverifiableDownloadError(
        f"{what}: the file host sent no Content-Length and neither chunked nor compressed the file, "
        "so a whole body cannot be told from a cut one; the file is not written (the file at the "
        "destination, if any, is left as it was)")


def decoded(chunks: Iterable[bytes], coding: str, what: str) -> Iterator[bytes]:
    """The body's bytes decoded from ``coding``; a compressed body that ends before its
    compressed stream does (or is corrupt) raises :class:`IncompleteDownloadError`."""
    if coding not in COMPRESSED:
        yield from chunks
        return
    decoder = zlib.decompressobj(COMPRESSED[coding])
    try:
        for chunk in chunks:
            while chunk:
                if decoder.eof:  # a gzip file may hold several members
                    decoder = zlib.decompressobj(COMPRESSED[coding])
                yield decoder.decompress(chunk)
                chunk = decoder.unused_data if decoder.eof else b""
        if not decoder.eof:
            raise IncompleteDownloadError(f"{what}: the compressed body ends before its end ({coding})",
                                          method="GET", path="/exports/download")
        yield decoder.flush()
    except zlib.error as exc:
        raise IncompleteDownloadError(f"{what}: the compressed body is corrupt ({coding}: {exc})",
                                      method="GET", path="/exports/download") from None


def check_destination(destination: Destination) -> None:
    """Refuse, before any job is submitted, a destination the download could not write.

    A local destination's folder must exist or be creatable, and accept a new file (tried
    with a probe file, which is removed); an object-storage URL must parse. Errors name
    ``destination``.
    """
    if destination is None or (isinstance(destination, str) and not destination.strip()):
        raise AnalyticsParameterError("destination is required: a local path, a folder ending in / or a URL")
    if not isinstance(destination, (str, os.PathLike)) and not hasattr(destination, "protocol"):
        raise AnalyticsParameterError(
            f"destination must be a path, a URL or an ObjectStoragePath, got {type(destination).__name__}"
        )
    try:
        remote = _remote_path(destination)
    except Exception as exc:
        raise AnalyticsParameterError(f"destination {str(destination)!r} is not a usable URL: {exc}") from None
    if remote is not None:
        return
    local = _local_path(destination, None)  # a folder destination gives folder/export here
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
    if local.is_dir():
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
        with os.fdopen(fd, "wb") as tmp:
            for chunk in chunks:
                tmp.write(chunk)
                size += len(chunk)
            if file_mode is not None:
                os.fchmod(tmp.fileno(), file_mode)
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
    if text.endswith(("/", os.sep)) or path.is_dir():
        path = path / (suggested_name or "export")
    return path


def _remote_target(remote: Any, suggested_name: str | None, wants_folder: bool) -> Any:
    # ObjectStoragePath drops a trailing "/", so the caller's spelling says "folder"
    if wants_folder or str(remote).endswith("/") or (remote.exists() and remote.is_dir()):
        return remote / (suggested_name or "export")
    return remote
