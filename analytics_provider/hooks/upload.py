"""Requests whose body is not the operation's JSON: streamed multipart uploads, and webhook relays.

The multipart body is requests-toolbelt's ``MultipartEncoder``, which reads each file in small
pieces while the socket sends them, so a 200 MB manifest never sits in memory. Both kinds go
through the hook's driver as raw sends of one :class:`~analytics_provider.api.call.exchange.Exchange`
under its retry policy; both
operations are creates, so nothing is re-sent once the body may have left.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from analytics_provider.api.call.request import ApiRequest, build_request
from analytics_provider.api.wire.operations import MANIFEST_FIELD, MAX_MANIFEST_BYTES, MAX_MANIFEST_FILES
from analytics_provider.exceptions import AnalyticsParameterError

if TYPE_CHECKING:
    from analytics_provider.api.call.events import Steps
    from analytics_provider.hooks.client import AnalyticsClientHook


@dataclass(frozen=True)
class ManifestFile:
    """One manifest to send: its name in the form, and how to open it at its start."""

    filename: str
    size: int
    open: Callable[[], Any]  # a binary file object; closing it is the upload's business


def check_manifests(manifests: Sequence[Any]) -> list[ManifestFile]:
    """Check the count, the kinds and the sizes before anything is sent."""
    if isinstance(manifests, (str, bytes, os.PathLike)) or not isinstance(manifests, Sequence):
        raise AnalyticsParameterError(
            "upload_dbt_manifests: manifests must be a list of paths or (filename, binary file) pairs"
        )
    if not 1 <= len(manifests) <= MAX_MANIFEST_FILES:
        raise AnalyticsParameterError(
            f"upload_dbt_manifests: give 1 to {MAX_MANIFEST_FILES} manifests per request, got {len(manifests)}"
        )
    files = [_manifest(index, item) for index, item in enumerate(manifests)]
    for index, found in enumerate(files):
        if found.size > MAX_MANIFEST_BYTES:
            raise AnalyticsParameterError(
                f"upload_dbt_manifests: manifests[{index}] ({found.filename}) is {found.size} bytes; "
                f"the limit is {MAX_MANIFEST_BYTES} bytes ({MAX_MANIFEST_BYTES >> 20} MB) per file"
            )
    return files


def _manifest(index: int, item: Any) -> ManifestFile:
    if isinstance(item, (str, os.PathLike)):
        path = os.fspath(item)
        if not os.path.isfile(path):
            raise AnalyticsParameterError(f"upload_dbt_manifests: manifests[{index}] is not a file: {path!r}")
        return ManifestFile(os.path.basename(path), os.path.getsize(path), lambda: open(path, "rb"))
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and item[0]:
        name, stream = item
        if not (hasattr(stream, "read") and hasattr(stream, "seek") and stream.seekable()):
            raise AnalyticsParameterError(
                f"upload_dbt_manifests: manifests[{index}] needs a seekable binary file object"
            )
        start = stream.tell()
        size = stream.seek(0, os.SEEK_END) - start
        stream.seek(start)

        def rewound() -> _Borrowed:
            stream.seek(start)  # a retry (only before anything was sent) reads from the start again
            return _Borrowed(stream, size)

        return ManifestFile(name, size, rewound)
    raise AnalyticsParameterError(
        f"upload_dbt_manifests: manifests[{index}] must be a path or a (filename, binary file) pair, got {item!r}"
    )


class _Borrowed:
    """The caller's file object, which the upload reads but does not close.

    ``len`` is the bytes still to send, which the encoder reads to know when the part ends.
    """

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self._stream = stream
        self._end = stream.tell() + size

    @property
    def len(self) -> int:
        return max(0, self._end - self._stream.tell())

    def read(self, size: int = -1) -> bytes:
        return self._stream.read(size)

    def close(self) -> None:
        pass


class _LargeReads:
    """The encoder read in pieces of at least 256 KiB (the socket asks for 8 or 16 KiB at a time,
    and the encoder's cost is per read): about twice the throughput, a bounded memory cost."""

    PIECE = 256 * 1024

    def __init__(self, encoder: Any) -> None:
        self._encoder = encoder

    @property
    def len(self) -> int:
        return int(self._encoder.len)

    def read(self, size: int = -1) -> bytes:
        return bytes(self._encoder.read(max(size, self.PIECE) if size is not None and size >= 0 else -1))


def send_manifests(hook: AnalyticsClientHook, manifests: Sequence[Any], data_source_name: str | None) -> Any:
    """``POST /data_sources/upload_multiple_dbt_manifests`` with a streamed multipart body."""
    from requests_toolbelt import MultipartEncoder

    files = check_manifests(manifests)
    if data_source_name is not None and (not isinstance(data_source_name, str) or not data_source_name):
        raise AnalyticsParameterError("upload_dbt_manifests: data_source_name must be a non-empty string")
    request = build_request("upload_dbt_manifests")

    def body() -> tuple[Any, dict[str, str], list[Any]]:
        opened = [f.open() for f in files]
        fields: list[tuple[str, Any]] = []
        if data_source_name is not None:
            fields.append(("data_source_name", data_source_name))
        for found, handle in zip(files, opened, strict=True):
            fields.append((MANIFEST_FIELD, (found.filename, handle, "application/json")))
        encoder = MultipartEncoder(fields=fields)
        return _LargeReads(encoder), {"Content-Type": encoder.content_type}, opened

    return _send(hook, request, body)


def send_json_with_headers(hook: AnalyticsClientHook, name: str, body: bytes, headers: Mapping[str, str]) -> Any:
    """An operation whose JSON body must go out byte for byte (a signed webhook payload) with headers."""
    request = build_request(name)
    extra = {"Content-Type": "application/json", **headers}
    return _send(hook, request, lambda: (body, dict(extra), []))


def _send(
    hook: AnalyticsClientHook, request: ApiRequest, body: Callable[[], tuple[Any, dict[str, str], list[Any]]]
) -> Any:
    exchange = hook.client.exchange(request)

    def attempt() -> Steps[Any]:
        data, headers, opened = body()  # a fresh body each attempt: a stream is read once
        try:
            answer = yield from exchange.send(data=data, headers=headers)
        finally:
            for handle in opened:
                handle.close()
        return exchange.result(answer)

    return hook.client.run(exchange.retried(attempt))
