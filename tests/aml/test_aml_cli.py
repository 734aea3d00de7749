"""``python -m analytics_provider.aml lint``, run as a subprocess the way pre-commit and CI run it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from analytics_provider.aml import CODES

from .helpers import CORPUS, expected, units

REPO = CORPUS.parents[2]


def run(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None,
        flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The command with ``args``; ``flags`` are the interpreter's (such as ``-O``)."""
    return subprocess.run(
        # the same interpreter with the same site setting, so the command sees the same packages
        [sys.executable, *(["-S"] if sys.flags.no_site else []), *flags, "-m", "analytics_provider.aml", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )


def corpus_lines() -> list[str]:
    """What the command must print for the whole corpus, paths relative to the repository."""
    want: Counter[tuple[str, str, int, int]] = Counter()
    for kind in ("valid", "invalid"):
        for unit in units(kind):
            want.update(expected(unit))
    return sorted(f"{Path(p).relative_to(REPO)}:{line}:{col}: {code}" for p, code, line, col in want.elements())


def test_folder_with_valid_and_invalid_files_exits_1_and_prints_each_diagnostic() -> None:
    result = run("lint", "tests/aml/corpus")
    assert result.returncode == 1, result.stderr
    *lines, summary = result.stdout.splitlines()
    assert sorted(" ".join(line.split(" ")[:2]) for line in lines) == corpus_lines()
    for line in lines:
        location, code, message = line.split(" ", 2)
        path, row, col, empty = location.split(":")
        assert path.startswith("tests/aml/corpus/") and row.isdigit() and col.isdigit() and not empty
        assert code in CODES and message
    errors = sum(CODES[line.split(" ")[1]].severity == "error" for line in lines)
    warnings = len(lines) - errors
    checked = sum(1 for _ in CORPUS.rglob("*.aml"))
    with_findings = len({line.split(":")[0] for line in lines})
    assert summary == f"{checked} files checked: {errors} errors, {warnings} warnings in {with_findings} files."


def test_clean_folder_exits_0() -> None:
    result = run("lint", "tests/aml/corpus/valid")
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[-1].endswith("files checked: no problems found.")


def test_warnings_only_exit_0() -> None:
    result = run("lint", "tests/aml/corpus/invalid/unused_slot_and_option.chart.aml",
                 "tests/aml/corpus/invalid/empty_fields.chart.aml")
    assert result.returncode == 0
    codes = sorted(line.split(" ")[1] for line in result.stdout.splitlines()[:-1])
    assert codes == ["CC208", "CC413", "CC414"]
    assert result.stdout.splitlines()[-1] == "2 files checked: 0 errors, 3 warnings in 2 files."


def test_quiet_prints_only_diagnostics() -> None:
    result = run("lint", "-q", "tests/aml/corpus/invalid/field_bad_type.chart.aml")
    assert result.returncode == 1
    assert [line.split(" ")[1] for line in result.stdout.splitlines()] == ["CC202", "CC202"]


def test_syntax_error_is_a_diagnostic_not_a_traceback() -> None:
    result = run("lint", "tests/aml/corpus/invalid/syntax_unclosed_template.chart.aml")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stdout.startswith("tests/aml/corpus/invalid/syntax_unclosed_template.chart.aml:5:13: CC001 ")


def test_missing_path_is_a_usage_error() -> None:
    result = run("lint", "tests/aml/corpus/valid", "no/such/place")
    assert result.returncode == 2
    assert "no such file or directory: no/such/place" in result.stderr
    assert result.stdout == ""


def test_no_path_and_unknown_command_are_usage_errors() -> None:
    assert run("lint").returncode == 2
    assert run("check", "x").returncode == 2
    assert run().returncode == 2


def test_help_exits_0() -> None:
    result = run("lint", "--help")
    assert result.returncode == 0
    assert "PATH" in result.stdout


def test_folder_lints_chart_files_and_aml_files_with_a_custom_chart(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "a.chart.aml").write_text("Dataset only { label: 'x' }\n")
    (tmp_path / "model.aml").write_text("Model orders { label: 'Orders' }\n")
    (tmp_path / "page.aml").write_text("Dashboard d { block b: VizBlock { viz: CustomChart { dataset: e } } }\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "b.chart.aml").write_text("broken {\n")
    (tmp_path / "notes.txt").write_text("CustomChart {\n")
    result = run("lint", str(tmp_path))
    lines = result.stdout.splitlines()
    assert [line.split(" ")[1] for line in lines[:-1]] == ["CC003", "CC501"]
    assert lines[-1] == "2 files checked: 1 error, 1 warning in 2 files."
    assert result.returncode == 1


def test_missing_schema_package_is_skipped_with_one_note() -> None:
    result = run("lint", "--no-compile", "tests/aml/corpus/invalid/schema_typos.chart.aml",
                 env={"AML_VEGA_LITE_SCHEMA": str(REPO / "no-such-schema.json")})
    assert result.returncode == 0
    assert "CC420" not in result.stdout
    assert result.stderr.count("note:") == 1
    assert "schema check was skipped" in result.stderr


def test_empty_folder(tmp_path: Path) -> None:
    result = run("lint", str(tmp_path))
    assert result.returncode == 0
    assert result.stdout.strip() == "No custom chart files found."
