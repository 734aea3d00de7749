"""What the linter reads and what the compilers can draw: its limits (nesting, expression length,
digits), finite numbers, and the characters a chart string may hold.

Past a limit the file is reported (CC005) at the place, instead of the parser or a later check
running out of stack or time: each limit is far beyond what a chart needs.
"""

from __future__ import annotations

import math
import re
import stat
import unicodedata
from pathlib import Path

LIMIT_CODE = "CC005"
FILE_CODE = "CC006"
MAX_FILE_BYTES = 16 * 1024 * 1024
"""Bytes of one file the linter reads (16 MiB): a chart file has a few KiB, a large AML project
file a few hundred; a file past it is a finding (CC006) and is not read."""


class FileNotRead(Exception):
    """A file the linter does not read (not a regular file, or past :data:`MAX_FILE_BYTES`); its
    text says why, for the finding at the file."""


def read_source(path: Path, errors: str = "strict") -> str:
    """The text of a regular file of at most :data:`MAX_FILE_BYTES` bytes (a symbolic link is
    followed). Raises :class:`FileNotRead` otherwise, before anything is read (a FIFO would block
    the linter, ``/dev/zero`` fill its memory); OSError and UnicodeDecodeError as reading does."""
    mode, size = (info := path.stat()).st_mode, info.st_size
    if not stat.S_ISREG(mode):
        raise FileNotRead("not read: it is not a regular file (a FIFO, a device or a socket; a symbolic link is "
                          "followed); the linter reads regular files only")
    data = bytearray()
    if size <= MAX_FILE_BYTES:
        with path.open("rb") as handle:  # in pieces: read(n) would take n bytes of memory at once
            while len(data) <= MAX_FILE_BYTES and (piece := handle.read(1 << 16)):
                data += piece  # a file that grew since is read no further than the limit
    if max(size, len(data)) > MAX_FILE_BYTES:
        raise FileNotRead(f"not read: it has {max(size, len(data)):,} bytes; the linter reads files of at most "
                          f"{MAX_FILE_BYTES:,} bytes (16 MiB)")
    return bytes(data).decode("utf-8", errors)

MAX_DEPTH = 100
"""Levels of nesting ({ [ and parentheses) in AML, and in a template on its own."""
MAX_TERMS = 1_000
"""Terms of one AML operator expression (``a + b + ...``)."""
MAX_DIGITS = 500
"""Digits of one number: within Python's own limit on reading integers (640 at the least)."""
_UNDRAWABLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(1, 17)) + "]"
)


def depth_message(what: str) -> str:
    """The finding for the bracket that opens one level too many."""
    return (f"{what} nested more than {MAX_DEPTH} levels deep: the linter reads at most {MAX_DEPTH} "
            "levels; flatten it")


def read_number(text: str) -> tuple[int | float | None, str]:
    """The value of a number's text (an int unless it has a fraction or an exponent), and '' ; or
    None and why it cannot be read: more than :data:`MAX_DIGITS` digits, or beyond the range of a
    double (``1e999`` would be infinity)."""
    digits = sum(ch.isdigit() for ch in text)
    if digits > MAX_DIGITS:
        return None, f"a number of {digits} digits: the linter reads numbers of at most {MAX_DIGITS} digits"
    if any(c in text for c in ".eE"):
        value = float(text)
        if not math.isfinite(value):
            shown = text if len(text) <= 30 else text[:27] + "..."
            return None, f"{shown} is beyond the range of a number (it would be infinity); write a finite number"
        return value, ""
    return int(text), ""


def undrawable(text: str) -> int:
    """Index of the first character the compilers cannot draw (they abort on it): a control character
    other than tab, line feed and carriage return, or a Unicode noncharacter such as U+FFFF; -1 if none."""
    found = _UNDRAWABLE.search(text)
    return found.start() if found else -1


def describe_character(ch: str) -> str:
    """``U+0007 (BELL)`` for a message."""
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")
