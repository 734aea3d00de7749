"""Reading a ``multipart/form-data`` body piece by piece (uploads of up to 5 x 200 MB).

The server spools the body to a temporary file; this reader walks it in chunks, so neither a
part nor the whole body is ever held in memory. File parts go to temporary files of their own.
"""

from __future__ import annotations

import io
import re
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

from analytics_provider.testing.emulator.errors import invalid_parameter
from analytics_provider.testing.emulator.wire import Incoming

CHUNK = 1024 * 1024
MAX_HEADER = 16 * 1024
_PARAM = re.compile(r';\s*([a-zA-Z*]+)="?([^";]*)"?')


@dataclass
class FilePart:
    name: str
    filename: str
    size: int
    content: IO[bytes]  # at its start


@dataclass
class Form:
    """The fields (name: values) and file parts of a form, in order."""

    fields: dict[str, list[str]] = field(default_factory=dict)
    files: list[FilePart] = field(default_factory=list)


def read_form(request: Incoming) -> Form:
    """The form of a multipart request; a 400 when the body is not one."""
    content_type = request.headers.get("content-type", "")
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.lower().startswith("multipart/form-data") or not found:
        raise invalid_parameter("the request body must be multipart/form-data with a boundary")
    source: IO[bytes] = request.stream if request.stream is not None else io.BytesIO(request.body)
    return _parse(source, found.group(1).encode("latin-1"))


def _parse(source: IO[bytes], boundary: bytes) -> Form:
    form = Form()
    reader = _Reader(source)
    if not reader.skip_past(b"--" + boundary):
        raise invalid_parameter("the multipart body has no part")
    separator = b"\r\n--" + boundary
    while True:
        ending = reader.take(2)
        if ending == b"--":
            return form
        if ending != b"\r\n":
            raise invalid_parameter("the multipart body is malformed")
        headers = _headers(reader.until(b"\r\n\r\n", MAX_HEADER))
        disposition = headers.get("content-disposition", "")
        params = dict((k.lower(), v) for k, v in _PARAM.findall(disposition))
        name = params.get("name")
        if not disposition.lower().startswith("form-data") or not name:
            raise invalid_parameter("a multipart part has no Content-Disposition form-data name")
        if "filename" in params:
            content = tempfile.SpooledTemporaryFile(max_size=CHUNK)  # noqa: SIM115 (the handler reads it)
            size = reader.copy_until(separator, content)
            content.seek(0)
            form.files.append(FilePart(name, params["filename"], size, content))
        else:
            buffer = io.BytesIO()
            reader.copy_until(separator, buffer, limit=MAX_HEADER)
            form.fields.setdefault(name, []).append(buffer.getvalue().decode("utf-8", "replace"))


def _headers(block: bytes) -> dict[str, str]:
    found = {}
    for line in block.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name:
            found[name.strip().lower()] = value.strip()
    return found


class _Reader:
    """A buffered view of the body that finds separators across chunk edges."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.buffer = b""

    def _more(self) -> bool:
        chunk = self.source.read(CHUNK)
        self.buffer += chunk
        return bool(chunk)

    def skip_past(self, marker: bytes) -> bool:
        while (at := self.buffer.find(marker)) < 0:
            self.buffer = self.buffer[-len(marker):]
            if not self._more():
                return False
        self.buffer = self.buffer[at + len(marker):]
        return True

    def take(self, n: int) -> bytes:
        while len(self.buffer) < n and self._more():
            pass
        taken, self.buffer = self.buffer[:n], self.buffer[n:]
        return taken

    def until(self, marker: bytes, limit: int) -> bytes:
        while (at := self.buffer.find(marker)) < 0:
            if len(self.buffer) > limit or not self._more():
                raise invalid_parameter("the multipart body is malformed")
        found, self.buffer = self.buffer[:at], self.buffer[at + len(marker):]
        return found

    def copy_until(self, marker: bytes, target: Any, limit: int | None = None) -> int:
        """Copy the bytes before ``marker`` to ``target``; returns how many."""
        size = 0
        while (at := self.buffer.find(marker)) < 0:
            keep = len(marker) - 1
            if len(self.buffer) > keep:
                target.write(self.buffer[:-keep])
                size += len(self.buffer) - keep
                self.buffer = self.buffer[-keep:]
            if (limit is not None and size > limit) or not self._more():
                raise invalid_parameter("the multipart body is malformed (a part does not end)")
        target.write(self.buffer[:at])
        size += at
        self.buffer = self.buffer[at + len(marker):]
        return size
