"""The command line: ``python -m analytics_provider.aml lint PATH...`` and
``python -m analytics_provider.aml preview PATH [--data rows.csv] [--out chart.png|chart.svg]``.

Exit status: see :data:`EXIT_STATUSES`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from analytics_provider.aml import compiler, schema
from analytics_provider.aml.lint import (
    INTERNAL_CODE,
    MAX_COMPILE_TIMEOUT,
    MIN_COMPILE_MEMORY,
    check_memory,
    check_timeout,
    discover,
    lint_each,
)

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_STATUSES = f"""exit status:
  {EXIT_OK}  no errors (lint: warnings alone are fine; preview: the picture was written)
  {EXIT_ERRORS}  errors were found (lint), or the chart has errors or cannot be drawn (preview)
  {EXIT_USAGE}  usage error: no path, a path that does not exist, an unknown option, a bad --data file
  {EXIT_INTERNAL}  internal error: the linter or the compiler (vl-convert) failed on a file; it is
     reported with the file (code {INTERNAL_CODE}) and the other files are still linted
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m analytics_provider.aml",
        description="Check AML custom chart definitions (CustomChartDef) and their uses (CustomChart).",
        epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    lint = commands.add_parser(
        "lint",
        help="lint files and folders as one project",
        description="Lint files and folders as one project. A folder means every .chart.aml file in it and "
                    "every .aml file that has a CustomChart in it. Each file's diagnostics are printed as soon as "
                    "the file is done.",
        epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lint.add_argument("paths", nargs="+", metavar="PATH", help="a file or a folder")
    lint.add_argument("--no-schema", action="store_true", help="skip the Vega-Lite JSON-schema check")
    lint.add_argument("--no-compile", action="store_true",
                      help="skip compiling each template with the Vega-Lite and Vega compilers (vl-convert)")
    lint.add_argument("-q", "--quiet", action="store_true", help="print only the diagnostics, no summary")
    _timeout_option(lint)
    draw = commands.add_parser(
        "preview",
        help="draw a chart definition with sample rows",
        description="Fill a definition's template with sample rows (made from the slots' types, or read from "
                    "a csv file whose columns are named after the slots) and draw it with the compilers the "
                    "lint uses. A chart that cannot be drawn is reported at its line and column (exit 1).",
        epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    draw.add_argument("path", metavar="PATH", help="a .chart.aml file")
    draw.add_argument("--data", metavar="ROWS.csv", help="rows to draw, one column per slot")
    draw.add_argument("--out", metavar="FILE", help="the picture to write, .png or .svg (default <chart_name>.png)")
    draw.add_argument("--chart", metavar="NAME", help="the definition to draw when the file has several")
    draw.add_argument("--scale", type=_scale, default=1.0, metavar="FACTOR",
                      help="PNG scale factor, from 0.1 to 10 (default 1); a picture of more than 25 million "
                           "pixels is refused")
    _timeout_option(draw)
    return parser


def _timeout_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--compile-timeout", type=_seconds, default=compiler.DEFAULT_COMPILE_TIMEOUT, metavar="SECONDS",
        help=f"the time one chart's compile (or drawing) may take; past it the compiler is stopped and the "
             f"chart gets CC422, the other files are still checked (default {compiler.DEFAULT_COMPILE_TIMEOUT:g})")
    command.add_argument(
        "--compile-memory", type=_mebibytes, default=compiler.DEFAULT_COMPILE_MEMORY, metavar="MIB",
        help=f"the memory the compiler may hold during one chart's compile (or drawing), in MiB, at least "
             f"{MIN_COMPILE_MEMORY // 1_048_576}; past it the compiler is stopped and the chart gets CC423, the "
             f"other files are still checked (default {compiler.DEFAULT_COMPILE_MEMORY // 1_048_576:,})")


def _mebibytes(text: str) -> int:
    try:
        return check_memory(int(text) * 1_048_576) or 0
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of MiB of at least {MIN_COMPILE_MEMORY // 1_048_576}, "
                                         f"got {text!r}") from None


def _seconds(text: str) -> float:
    try:
        return check_timeout(float(text)) or 0.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"a positive number of seconds up to {MAX_COMPILE_TIMEOUT:g}, got {text!r}") \
            from None


def _scale(text: str) -> float:
    from analytics_provider.aml.preview import check_scale

    try:
        return check_scale(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--scale must be ")) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the exit status (:data:`EXIT_STATUSES`). A failure of the linter itself
    exits 3 with a message, never with a traceback under the status of a finding."""
    for stream in (sys.stdout, sys.stderr):  # a character the terminal cannot show must not end the run
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return _preview(args) if args.command == "preview" else _lint(args)
    except Exception as exc:  # a bug: said as such, with its own status
        print(f"error: internal error of the linter ({type(exc).__name__}: {exc}); please report it",
              file=sys.stderr)
        return EXIT_INTERNAL


def _lint(args: argparse.Namespace) -> int:
    try:
        files = discover(args.paths)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    errors = warnings = internal = with_findings = 0
    for _, diagnostics in lint_each(files, schema=not args.no_schema, compiler=not args.no_compile,
                                    compile_timeout=args.compile_timeout, compile_memory=args.compile_memory):
        for diagnostic in diagnostics:
            print(diagnostic.format())
        sys.stdout.flush()
        internal += sum(d.code == INTERNAL_CODE for d in diagnostics)
        errors += sum(d.is_error and d.code != INTERNAL_CODE for d in diagnostics)
        warnings += sum(not d.is_error for d in diagnostics)
        with_findings += bool(diagnostics)
    if not args.quiet:
        print(_summary(len(files), with_findings, errors, warnings, internal))
        if files and not args.no_schema and not schema.available():
            print(f"note: the Vega-Lite schema check was skipped: {compiler.install_hint('vega')} "
                  f"(or set {schema.SCHEMA_ENV}) to run it", file=sys.stderr)
        if files and not args.no_compile and not compiler.available():
            print(f"note: templates were not compiled: {compiler.INSTALL_HINT}, to run the compilers", file=sys.stderr)
    return EXIT_INTERNAL if internal else EXIT_ERRORS if errors else EXIT_OK


def _preview(args: argparse.Namespace) -> int:
    from analytics_provider.aml.preview import FORMATS, PreviewError, preview
    from analytics_provider.aml.sample import DataError

    if args.out and Path(args.out).suffix.lstrip(".").lower() not in FORMATS:
        print(f"error: --out must end in .png or .svg, got {args.out!r}", file=sys.stderr)
        return EXIT_USAGE
    try:
        drawn = preview(args.path, out=args.out, data=args.data, chart=args.chart, scale=args.scale,
                        compile_timeout=args.compile_timeout, compile_memory=args.compile_memory)
    except PreviewError as exc:
        for diagnostic in exc.diagnostics:
            print(diagnostic.format())
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERRORS
    except (DataError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except compiler.CompilerCrashed as exc:
        print(f"error: internal error: the compiler crashed drawing {args.path} ({exc.message}); please report it "
              "with the file", file=sys.stderr)
        return EXIT_INTERNAL
    print(f"wrote {drawn.path} ({drawn.chart_name}, drawn by {drawn.judge})")
    if drawn.left_out:
        print(f"note: drawn without the service's {', '.join(drawn.left_out)} transform, which only the service "
              "has: what it lays out is missing from the picture", file=sys.stderr)
    return EXIT_OK


def _summary(files: int, with_findings: int, errors: int, warnings: int, internal: int = 0) -> str:
    if files == 0:
        return "No custom chart files found."
    checked = f"{files} file{'s' if files != 1 else ''} checked"
    failed = f"; {internal} internal error{'s' if internal != 1 else ''} (exit status {EXIT_INTERNAL})" \
        if internal else ""
    if not errors and not warnings and not internal:
        return f"{checked}: no problems found."
    return (f"{checked}: {errors} error{'s' if errors != 1 else ''}, {warnings} warning"
            f"{'s' if warnings != 1 else ''} in {with_findings} file{'s' if with_findings != 1 else ''}{failed}.")
