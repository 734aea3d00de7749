"""Linting a project: find the files, parse them, run every check, and the project-wide rules."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from analytics_provider.aml import compiler as compiler_check
from analytics_provider.aml import schema as schema_check
from analytics_provider.aml.checks_def import check_def
from analytics_provider.aml.checks_template import check_template, filled
from analytics_provider.aml.checks_use import check_use
from analytics_provider.aml.diagnostics import Diagnostic, Reporter, Source
from analytics_provider.aml.lexer import AmlSyntaxError
from analytics_provider.aml.model import ChartDef, DefInfo, FileModel, extract, extract_objects
from analytics_provider.aml.nodes import Obj
from analytics_provider.aml.parser import parse, scan_objects

CHART_SUFFIX = ".chart.aml"
AML_SUFFIX = ".aml"
_MENTIONS_CHART = re.compile(r"\bCustomChart(?:Def)?\b")
_SKIP_DIRS = {"node_modules", "__pycache__", "venv"}


@dataclass
class _File:
    rep: Reporter
    model: FileModel = field(default_factory=FileModel)
    parsed: bool = True


def is_chart_file(path: str | Path) -> bool:
    """Whether a path names a chart definition file (``*.chart.aml``)."""
    return str(path).endswith(CHART_SUFFIX)


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """The files to lint: each file given, and in each folder every ``*.chart.aml`` file and every
    ``*.aml`` file that mentions CustomChart. Raises FileNotFoundError for a path that does not exist."""
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found[path] = None
        elif path.is_dir():
            for file in _walk(path):
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
        return _MENTIONS_CHART.search(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def lint_paths(paths: Iterable[str | Path], *, schema: bool = True, compiler: bool = True) -> list[Diagnostic]:
    """Lint files and folders as one project; diagnostics sorted by path, line and column.

    ``schema=False`` skips the Vega-Lite schema check, ``compiler=False`` the compile step (each is
    skipped anyway when what it needs is not installed). Raises FileNotFoundError when a path does
    not exist.
    """
    files = []
    for path in discover(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            rep = Reporter(Source("", str(path)))
            rep.add("CC002", 0, f"cannot read the file as UTF-8 text ({exc.__class__.__name__}); save it as UTF-8")
            files.append(_File(rep, parsed=False))
            continue
        files.append(parse_source(Source(text, str(path))))
    return _check_project(files, Checks(schema, compiler and compiler_check.available()))


def lint_text(text: str, path: str, *, schema: bool = True, compiler: bool = True) -> list[Diagnostic]:
    """Lint one text as a project of its own; ``path`` names it in diagnostics and, by its suffix,
    says whether it is a ``.chart.aml`` file."""
    return _check_project([parse_source(Source(text, path))], Checks(schema, compiler and compiler_check.available()))


def parse_source(source: Source) -> _File:
    """Parse one file's text into its definitions and uses; syntax errors go to its reporter."""
    result = _File(Reporter(source))
    try:
        result.model = extract(parse(source.text))
    except AmlSyntaxError as exc:
        if is_chart_file(source.path):
            result.rep.add("CC001", exc.offset, exc.message)
            result.parsed = False
            return result
        # AML this parser does not model: lint the chart blocks it can find on their own
        objects: list[Obj] = []
        for item in scan_objects(source.text):
            if isinstance(item, AmlSyntaxError):
                result.rep.add("CC001", item.offset, item.message)
            else:
                objects.append(item)
        result.model = extract_objects(objects)
    return result


@dataclass(frozen=True)
class Checks:
    """The optional template checks to run."""

    schema: bool = True
    compiler: bool = False


def _check_project(files: list[_File], checks: Checks) -> list[Diagnostic]:
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
            info = check_definition(chart, rep, checks)
            if chart.name is None:
                continue
            if chart.name in first_seen:
                rep.add("CC103", chart.name_offset, f"chart_name '{chart.name}' is already used by the "
                                                    f"CustomChartDef at {first_seen[chart.name]}; chart names must "
                                                    "be unique in the project, rename one")
                continue
            line, column = rep.source.position(chart.name_offset)
            first_seen[chart.name] = f"{rep.source.path}:{line}:{column}"
            defs[chart.name] = info

    def check_inline(chart: ChartDef, rep: Reporter) -> DefInfo:
        return check_definition(chart, rep, checks)

    for file in files:
        for use in file.model.uses:
            check_use(use, file.rep, defs, check_inline)
    return sorted(d for file in files for d in file.rep.items)


def check_definition(chart: ChartDef, rep: Reporter, checks: Checks) -> DefInfo:
    """Every check of one definition; the schema check and then the compiler run only on a template
    that broke no rule so far (they would repeat the error)."""
    info = check_def(chart, rep)
    entry = chart.body.first("template")
    if entry is None:
        return info
    tpl = check_template(entry, info, rep)
    errors = sum(d.is_error for d in rep.items)
    if tpl is not None and checks.schema:
        schema_check.check_schema(tpl, filled(tpl, info), rep)
    if tpl is not None and checks.compiler and sum(d.is_error for d in rep.items) == errors:
        compiler_check.check_compile(tpl, info, rep)
    return info
