"""Drawing a chart definition before it is published: its template filled with sample rows (or a
csv file's) and rendered by the same compilers the lint uses."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analytics_provider.aml import compiler
from analytics_provider.aml.checks_def import check_def
from analytics_provider.aml.checks_template import check_template
from analytics_provider.aml.diagnostics import Diagnostic, Reporter, Source
from analytics_provider.aml.limits import FileNotRead, read_source
from analytics_provider.aml.lint import check_memory, check_timeout, parse_source
from analytics_provider.aml.model import ChartDef
from analytics_provider.aml.sample import fill, read_rows, sample_rows

FORMATS = ("png", "svg")


class PreviewError(Exception):
    """The chart cannot be drawn; ``diagnostics`` say where and why when the definition is at fault."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


SCALES = (0.1, 10.0)
"""The scale factors a PNG preview takes (``--scale``): a tenth of the chart's size to ten times."""
MAX_PIXELS = 25_000_000
"""Pixels a PNG preview may have at most: a 5,000 x 5,000 picture, 100 MB of RGBA while it is
painted (a chart of 600 x 400 at scale 10 is 24 million). ``--scale=200`` of a small chart took
6.1 GiB before it was refused."""


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def check_scale(scale: Any) -> float:
    """``scale`` as a number within :data:`SCALES`, else ``ValueError`` naming the range."""
    low, high = SCALES
    number = None if isinstance(scale, bool) else scale
    if isinstance(number, str):  # ASCII digits only: float() takes "\u0663" (3) and "1_0" (10)
        number = float(number) if _DECIMAL.fullmatch(number.strip()) else None
    # compared, not converted: math.isfinite(10**400) overflows; NaN and infinities fail the range
    if not isinstance(number, (int, float)) or not low <= number <= high:
        shown = repr(scale) if len(repr(scale)) <= 40 else f"{repr(scale)[:30]}... ({len(repr(scale))} characters)"
        raise ValueError(f"--scale must be a number from {low:g} to {high:g}, got {shown}")
    return float(number)


@dataclass(frozen=True)
class Preview:
    """A drawn chart: the file written, the definition's name, what compiled it, and the service
    transforms it was drawn without."""

    path: Path
    chart_name: str
    judge: str
    left_out: tuple[str, ...] = ()


def preview(path: str | Path, out: str | Path | None = None, data: str | Path | None = None,
            chart: str | None = None, scale: float = 1.0,
            compile_timeout: float | None = compiler.DEFAULT_COMPILE_TIMEOUT,
            compile_memory: int | None = compiler.DEFAULT_COMPILE_MEMORY) -> Preview:
    """Draw one definition of a ``.chart.aml`` file (the one named ``chart`` when the file has
    several) to ``out`` (``<chart_name>.png`` by default; ``.svg`` writes SVG). The file is
    written whole or not at all. Raises :class:`PreviewError`, and
    :class:`~analytics_provider.aml.compiler.CompilerCrashed` when vl-convert crashes (in its child
    process: the caller lives on). Compiling, and then drawing, may each take ``compile_timeout``
    seconds and hold ``compile_memory`` bytes (None: no limit); past either the compiler is stopped
    and :class:`PreviewError` says so (CC422, CC423)."""
    compile_timeout, compile_memory = check_timeout(compile_timeout), check_memory(compile_memory)
    try:
        scale = check_scale(scale)
    except ValueError as exc:
        raise PreviewError(str(exc)) from None
    if not compiler.available():
        raise PreviewError(f"preview needs {compiler.PACKAGE}: {compiler.INSTALL_HINT}")
    source_path = Path(path)
    try:
        source = Source(read_source(source_path), str(source_path))
    except (OSError, UnicodeDecodeError, FileNotRead) as exc:
        raise PreviewError(f"cannot read {source_path}: {exc}") from None
    parsed = parse_source(source)
    definition = _pick(parsed.model.defs, chart, source_path)
    rep = parsed.rep
    info = check_def(definition, rep)
    entry = definition.body.first("template")
    tpl = check_template(entry, info, rep) if entry is not None else None
    errors = [d for d in rep.items if d.is_error]
    if tpl is None or errors:
        raise PreviewError(f"{source_path}: the definition has errors; fix them first", errors)
    rows = read_rows(data, info) if data is not None else sample_rows(info)
    target = Path(out) if out is not None else Path(f"{definition.name or 'chart'}.png")
    fmt = target.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise PreviewError(f"--out must end in .png or .svg, got {target.name!r}")
    data = fill(tpl, info, rows)
    try:
        compiled = compiler.compile_spec(data, tpl.engine, compile_timeout, compile_memory)
    except compiler.CallTimedOut as exc:
        raise _too_long(rep, tpl.root.offset, source_path, exc.seconds) from None
    except compiler.CallOverMemory as exc:
        raise _too_much(rep, tpl.root.offset, source_path, exc.limit) from None
    except compiler.CompileError as exc:
        rep.add("CC421", compiler.locate(tpl, exc.message), f"the chart cannot render: {exc.message}")
        raise PreviewError(f"{source_path}: the chart cannot render", rep.items[-1:]) from None
    try:
        picture = compiler.render(compiled, fmt, scale, compile_timeout, MAX_PIXELS, compile_memory)
    except compiler.PictureTooLarge as exc:
        raise PreviewError(f"{source_path}: {exc.message} at scale {scale:g}, past the {MAX_PIXELS:,} a preview may "
                           "have; nothing was drawn: a smaller --scale, or a smaller width and height in the "
                           "template") from None
    except compiler.CallTimedOut as exc:
        raise _too_long(rep, tpl.root.offset, source_path, exc.seconds) from None
    except compiler.CallOverMemory as exc:
        raise _too_much(rep, tpl.root.offset, source_path, exc.limit) from None
    except compiler.CompileError as exc:  # the chart ran; the headless renderer could not paint it
        raise PreviewError(f"{source_path}: the chart compiles and runs, but {compiler.PACKAGE} cannot paint it "
                           f"here ({exc.message}); it may need a browser canvas (an image mark, a heatmap)") from None
    _write_whole(target, picture)
    judge = f"Vega-Lite {compiled.vega_lite_version}" if compiled.vega_lite_version else "Vega"
    return Preview(target, definition.name or "", judge, tuple(sorted(set(compiler.service_transforms(data)))))


def _too_long(rep: Reporter, offset: int, path: Path, seconds: float) -> PreviewError:
    rep.add("CC422", offset, compiler.took_too_long(seconds))
    return PreviewError(f"{path}: {compiler.took_too_long(seconds)}", rep.items[-1:])


def _too_much(rep: Reporter, offset: int, path: Path, limit: int) -> PreviewError:
    rep.add("CC423", offset, compiler.took_too_much(limit))
    return PreviewError(f"{path}: {compiler.took_too_much(limit)}", rep.items[-1:])


def _pick(defs: list[ChartDef], chart: str | None, path: Path) -> ChartDef:
    names = [d.name or "" for d in defs]
    if chart is not None:
        for definition in defs:
            if definition.name == chart:
                return definition
        raise PreviewError(f"{path} has no CustomChartDef named {chart!r}; it has: {', '.join(names) or 'none'}")
    if len(defs) != 1:
        raise PreviewError(f"{path} has {len(defs)} CustomChartDef blocks ({', '.join(names) or 'none'}); "
                           "name one with --chart" if defs else f"{path} defines no CustomChartDef")
    return defs[0]


def _write_whole(target: Path, content: bytes) -> None:
    """Write through a temporary file in the same folder, then rename: no partial file is left."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
