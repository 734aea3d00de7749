"""Linting a project: find the files, parse them, run every check, and the project-wide rules.

A bug of the linter met on one file is reported on that file (CC000, internal error) and the other
files are still linted; the compiler runs in a child process
(:mod:`~analytics_provider.aml.compiler_process`), so that its crash is such a report too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from analytics_provider.aml import compiler as compiler_check
from analytics_provider.aml import compiler_process
from analytics_provider.aml import schema as schema_check
from analytics_provider.aml.checks_def import check_def
from analytics_provider.aml.checks_template import check_template, filled
from analytics_provider.aml.checks_use import check_use
from analytics_provider.aml.compiler import DEFAULT_COMPILE_MEMORY, DEFAULT_COMPILE_TIMEOUT
from analytics_provider.aml.diagnostics import Diagnostic, Reporter, Source
from analytics_provider.aml.lexer import AmlSyntaxError
from analytics_provider.aml.limits import FILE_CODE, FileNotRead, read_source
from analytics_provider.aml.model import ChartDef, DefInfo, FileModel, extract, extract_objects
from analytics_provider.aml.nodes import Entry, Heredoc, Obj
from analytics_provider.aml.parser import parse, scan_objects

CHART_SUFFIX = ".chart.aml"
AML_SUFFIX = ".aml"
_MENTIONS_CHART = re.compile(r"\bCustomChart(?:Def)?\b")
_SKIP_DIRS = {"node_modules", "__pycache__", "venv"}
INTERNAL_CODE = "CC000"
_T = TypeVar("_T")


@dataclass
class _File:
    rep: Reporter
    model: FileModel = field(default_factory=FileModel)
    parsed: bool = True
    infos: list[DefInfo | None] = field(default_factory=list)
    """What the rules found of each definition, in order; None where the linter failed on it."""


def is_chart_file(path: str | Path) -> bool:
    """Whether a path names a chart definition file (``*.chart.aml``)."""
    return str(path).endswith(CHART_SUFFIX)


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """The files to lint: each file given, and in each folder every ``*.chart.aml`` file and every
    ``*.aml`` file that mentions CustomChart (by path). Raises FileNotFoundError for a path that does not
    exist."""
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if path.exists() and not path.is_dir():  # a FIFO or a device too: a finding (CC006), not a stall
            found[path] = None
        elif path.is_dir():
            for file in sorted(_walk(path)):
                found[file] = None
        else:
            raise FileNotFoundError(f"no such file or directory: {raw}")
    return list(found)


def _walk(folder: Path) -> list[Path]:
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(names):
            path = Path(root, name)
            if name.endswith(CHART_SUFFIX) or (name.endswith(AML_SUFFIX) and _mentions_chart(path)):
                files.append(path)
    return files


def _mentions_chart(path: Path) -> bool:
    try:
        return _MENTIONS_CHART.search(read_source(path, errors="replace")) is not None
    except (OSError, FileNotRead):  # not a chart's file, or one the linter would not read
        return False


def lint_paths(paths: Iterable[str | Path], *, schema: bool = True, compiler: bool = True,
               compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
               compile_memory: int | None = DEFAULT_COMPILE_MEMORY) -> list[Diagnostic]:
    """Lint files and folders as one project; diagnostics sorted by path, line and column.

    ``schema=False`` skips the Vega-Lite schema check, ``compiler=False`` the compile step (each is
    skipped anyway when what it needs is not installed). A chart whose compile takes longer than
    ``compile_timeout`` seconds (None: no limit) is a finding (CC422), as is one whose compile holds
    more than ``compile_memory`` bytes (CC423; None: no limit). Raises FileNotFoundError
    when a path does not exist. An internal error of the linter on a file is a diagnostic of its
    own (CC000).
    """
    return sorted(d for _, found in lint_each(paths, schema=schema, compiler=compiler,
                                              compile_timeout=compile_timeout, compile_memory=compile_memory)
                  for d in found)


def lint_each(paths: Iterable[str | Path], *, schema: bool = True, compiler: bool = True,
              compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
              compile_memory: int | None = DEFAULT_COMPILE_MEMORY) -> Iterator[tuple[str, list[Diagnostic]]]:
    """Lint files and folders as one project, yielding each file's path and sorted diagnostics as
    soon as that file is done, in the order of :func:`discover`. Every file is read and the rules of
    its definitions run first (they give the names and slots the uses are checked against); the
    templates' schema check and compiler, the slow part, then run file by file."""
    files = []
    for path in discover(paths):
        try:
            text = read_source(path)
        except FileNotRead as exc:
            rep = Reporter(Source("", str(path)))
            rep.add(FILE_CODE, 0, str(exc))
            files.append(_File(rep, parsed=False))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            rep = Reporter(Source("", str(path)))
            rep.add("CC002", 0, f"cannot read the file as UTF-8 text ({exc.__class__.__name__}); save it as UTF-8")
            files.append(_File(rep, parsed=False))
            continue
        files.append(parse_source(Source(text, str(path))))
    yield from _check_project(files, Checks(schema, compiler and compiler_check.available(),
                                            check_timeout(compile_timeout), check_memory(compile_memory)))


def lint_text(text: str, path: str, *, schema: bool = True, compiler: bool = True,
              compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
              compile_memory: int | None = DEFAULT_COMPILE_MEMORY) -> list[Diagnostic]:
    """Lint one text as a project of its own; ``path`` names it in diagnostics and, by its suffix,
    says whether it is a ``.chart.aml`` file."""
    checks = Checks(schema, compiler and compiler_check.available(), check_timeout(compile_timeout),
                    check_memory(compile_memory))
    return sorted(d for _, found in _check_project([parse_source(Source(text, path))], checks) for d in found)


def parse_source(source: Source) -> _File:
    """Parse one file's text into its definitions and uses; syntax errors go to its reporter, and so
    does an internal error (the file then counts as not parsed)."""
    result = _File(Reporter(source))
    if _guarded(result.rep, 0, "file", functools.partial(_parse_into, result)) is None:
        result.parsed, result.model = False, FileModel()
    return result


def _parse_into(result: _File) -> bool:
    """Fill ``result`` in; True (for :func:`_guarded`, whose None means the parse failed)."""
    source = result.rep.source
    try:
        result.model = extract(parse(source.text))
    except AmlSyntaxError as exc:
        if is_chart_file(source.path):
            result.rep.add(exc.code, exc.offset, exc.message)
            result.parsed = False
            return True
        # AML this parser does not model: lint the chart blocks it can find on their own
        objects: list[Obj] = []
        for item in scan_objects(source.text):
            if isinstance(item, AmlSyntaxError):
                result.rep.add(item.code, item.offset, item.message)
            else:
                objects.append(item)
        result.model = extract_objects(objects)
    return True


def _guarded(rep: Reporter, offset: int, what: str, action: Callable[[], _T]) -> _T | None:
    """``action()``; when it fails (a bug of the linter), report that on the file (CC000) and return None."""
    try:
        return action()
    except Exception as exc:  # the other files must still be linted, and this one's failure seen
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f", in {Path(frame.filename).name}:{frame.lineno}" if frame else ""
        detail = f"{type(exc).__name__}: {exc}"
        detail = detail if len(detail) <= 200 else detail[:197] + "..."
        rep.add(INTERNAL_CODE, offset, f"internal error of the linter ({detail}{where}); the rest of this {what} was "
                                       "not checked, the other files were; please report it with this file")
        return None


MAX_COMPILE_TIMEOUT = 3600.0
"""The longest ``compile_timeout`` taken (an hour a chart): past what the OS's waits can count, a
limit would end every chart's compile in an error instead."""


def check_timeout(seconds: float | None) -> float | None:
    """``compile_timeout`` as given (None: no limit), or ``ValueError`` naming it."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_COMPILE_TIMEOUT:
        raise ValueError(f"compile_timeout must be a positive number of seconds up to {MAX_COMPILE_TIMEOUT:g} "
                         f"(or None), got {seconds!r}")
    return float(seconds)


MIN_COMPILE_MEMORY = 256 * 1_048_576
"""The least ``compile_memory`` taken: the compiler's process holds about 80 MB loaded."""


def check_memory(limit: int | None) -> int | None:
    """``compile_memory`` as given (None: no limit), or ``ValueError`` naming it."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < MIN_COMPILE_MEMORY:
        raise ValueError(f"compile_memory must be a number of bytes of at least {MIN_COMPILE_MEMORY:,} "
                         f"(256 MiB; or None), got {limit!r}")
    return limit


@dataclass(frozen=True)
class Checks:
    """The optional template checks to run, and the time and memory one chart's compile may take."""

    schema: bool = True
    compiler: bool = False
    compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT
    compile_memory: int | None = DEFAULT_COMPILE_MEMORY


def _check_project(files: list[_File], checks: Checks) -> Iterator[tuple[str, list[Diagnostic]]]:
    if checks.compiler and any(file.model.defs for file in files):
        with contextlib.suppress(OSError):  # else the first compile says why, on its chart
            compiler_process.start()  # vl-convert loads in the child while the rules run here
    defs: dict[str, DefInfo] = {}
    first_seen: dict[str, str] = {}
    for file in files:
        rep = file.rep
        chart_file = is_chart_file(rep.source.path)
        if chart_file and file.parsed and not file.model.defs:
            rep.add("CC003", 0, "this .chart.aml file defines no CustomChartDef; add one or rename the file")
        for chart in file.model.defs:
            if not chart_file:
                rep.add("CC004", chart.offset, "CustomChartDef belongs in a file ending in .chart.aml; move it there")
            info = _guarded(rep, chart.offset, "definition", functools.partial(check_def, chart, rep))
            file.infos.append(info)
            if chart.name is None:
                continue
            if chart.name in first_seen:
                rep.add("CC103", chart.name_offset, f"chart_name '{chart.name}' is already used by the "
                                                    f"CustomChartDef at {first_seen[chart.name]}; chart names must "
                                                    "be unique in the project, rename one")
                continue
            line, column = rep.source.position(chart.name_offset)
            first_seen[chart.name] = f"{rep.source.path}:{line}:{column}"
            defs[chart.name] = info if info is not None else DefInfo(options_known=False)

    def check_inline(chart: ChartDef, rep: Reporter) -> DefInfo:
        return check_definition(chart, rep, checks)

    for file in files:
        rep = file.rep
        for chart, found in zip(file.model.defs, file.infos, strict=True):
            entry = chart.body.first("template")
            if found is None or entry is None:
                continue
            where = entry.value.offset if isinstance(entry.value, Heredoc) else entry.offset
            _guarded(rep, where, "definition", functools.partial(_check_template, entry, found, rep, checks))
        for use in file.model.uses:
            _guarded(rep, use.offset, "CustomChart", functools.partial(check_use, use, rep, defs, check_inline))
        yield rep.source.path, sorted(rep.items)


def check_definition(chart: ChartDef, rep: Reporter, checks: Checks) -> DefInfo:
    """Every check of one definition: its rules, then its template's."""
    info = check_def(chart, rep)
    entry = chart.body.first("template")
    if entry is not None:
        _check_template(entry, info, rep, checks)
    return info


def _check_template(entry: Entry, info: DefInfo, rep: Reporter, checks: Checks) -> None:
    """The template's rules; the schema check and then the compiler run only on a template that
    broke no rule so far (they would repeat the error)."""
    tpl = check_template(entry, info, rep)
    errors = sum(d.is_error for d in rep.items)
    if tpl is not None and checks.schema:
        schema_check.check_schema(tpl, filled(tpl, info), rep)
    if tpl is not None and checks.compiler and sum(d.is_error for d in rep.items) == errors:
        compiler_check.check_compile(tpl, info, rep, checks.compile_timeout, checks.compile_memory)
