"""The file name a file host proposes in ``Content-Disposition``, read as RFC 6266 says and made safe."""

from __future__ import annotations

import os
import re
import unicodedata
from urllib.parse import unquote_to_bytes

MAX_PROPOSED_NAME = 200
"""Bytes kept of a name the file host proposes (room left for the scratch file's longer name)."""
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
"""Unicode categories never kept in a proposed file name: controls, format marks (a right-to-left
override), surrogates, private and unassigned characters."""
DISPOSITION_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


def filename_from_disposition(value: str | None) -> str | None:
    """The file name a ``Content-Disposition`` header proposes (RFC 6266), reduced to a safe bare name.

    ``filename*`` (RFC 8187: ``UTF-8''r%C3%A9sum%C3%A9.csv``, percent-decoded in its charset)
    wins over ``filename`` wherever each stands; a plain ``filename`` sent as raw UTF-8 is read
    as UTF-8 (the HTTP client hands it over as Latin-1). The name is then made safe: the last part
    of any path (``/`` or ``\\``), control and format characters as ``_``, no leading dots, at most
    :data:`MAX_PROPOSED_NAME` bytes (the extension kept). None when nothing usable is left.
    """
    if not value:
        return None
    params: dict[str, str] = {}
    for key, raw in DISPOSITION_PARAM.findall(value):
        params.setdefault(key.lower(), raw.strip())
    name = _extended_value(params["filename*"]) if "filename*" in params else None
    if name is None and "filename" in params:
        name = _as_utf8(_unquoted(params["filename"]))
    return _safe_name(name) if name is not None else None


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _extended_value(value: str) -> str | None:
    """An RFC 8187 ``charset'language'percent-encoded`` value, decoded; None when it cannot be."""
    found = re.fullmatch(r"([A-Za-z0-9!#$%&+^_`{}~-]*)'[^']*'(.*)", _unquoted(value))
    if found is None:
        return None
    try:
        return unquote_to_bytes(found.group(2)).decode(found.group(1) or "utf-8")
    except (LookupError, UnicodeDecodeError):
        return None


def _as_utf8(text: str) -> str:
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def _safe_name(name: str) -> str | None:
    name = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])
    shown = "".join("_" if unicodedata.category(c) in UNSAFE_CATEGORIES else c for c in name).strip().lstrip(".")
    visible = "".join(c for c in shown if c != "_").strip(". ")
    if not visible:
        return None
    stem, extension = os.path.splitext(shown)
    if len(extension.encode()) > 16:
        stem, extension = shown, ""
    room = MAX_PROPOSED_NAME - len(extension.encode())
    return stem.encode()[:room].decode("utf-8", "ignore") + extension
