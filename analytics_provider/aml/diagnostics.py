"""Diagnostics, source positions, and the reporter that checks write to; the service's own
diagnostics (of an AML publish) placed in a checkout."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analytics_provider.aml.codes import CODES, Severity


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding: where (1-based line and column), a stable code, and how to fix it."""

    path: str
    line: int
    column: int
    code: str
    message: str
    severity: Severity = "error"

    @property
    def is_error(self) -> bool:
        """True for errors, False for warnings."""
        return self.severity == "error"

    def format(self) -> str:
        """The ``path:line:column: CODE message`` form editors and CI understand."""
        return f"{self.path}:{self.line}:{self.column}: {self.code} {self.message}"


class Source:
    """A file's text with offset-to-(line, column) mapping; a UTF-8 byte-order mark at its start is
    dropped (editors on Windows write one), so positions are those an editor shows."""

    def __init__(self, text: str, path: str) -> None:
        text = text.removeprefix("\ufeff")
        self.text = text
        self.path = path
        self._starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self._starts.append(i + 1)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def line_of(self, offset: int) -> int:
        """1-based line of an offset."""
        return self.position(offset)[0]


@dataclass
class Reporter:
    """Collects diagnostics for one source; the severity comes from the code table."""

    source: Source
    items: list[Diagnostic] = field(default_factory=list)

    def add(self, code: str, offset: int, message: str) -> None:
        """Record ``code`` at ``offset`` with ``message``."""
        line, column = self.source.position(offset)
        severity = CODES[code].severity
        self.items.append(Diagnostic(self.source.path, line, column, code, message, severity))


# -- the service's diagnostics (an AML publish or validate job's), read back against a checkout ----------


def offset_to_position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def format_diagnostic(diagnostic: Mapping[str, Any], project_dir: str | Path | None = None) -> str:
    """``file_path:line:column: category code: message``; offsets when the file is not at hand."""
    file_path = str(diagnostic.get("file_path") or "<project>")
    start = diagnostic.get("start")
    where = file_path
    source = Path(project_dir) / file_path if project_dir else None
    if isinstance(start, int) and source is not None and source.is_file():
        line, column = offset_to_position(source.read_text(encoding="utf-8", errors="replace"), start)
        where = f"{file_path}:{line}:{column}"
    elif isinstance(start, int):
        end = diagnostic.get("end")
        where = f"{file_path}:offset {start}" + (f"-{end}" if isinstance(end, int) else "")
    category = diagnostic.get("category") or "error"
    code = diagnostic.get("code")
    label = f"{category} {code}" if code is not None else str(category)
    return f"{where}: {label}: {diagnostic.get('message', '')}"
