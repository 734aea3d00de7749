"""Hostile input: the linter never dies and never hides a crash (issue 33).

Each file or text here once killed the linter (SIGABRT in the compiler), ended it with a traceback
under the exit status of a finding, or was judged wrongly. The command runs as a subprocess, the way
CI runs it, so that an abort or a traceback is seen as such.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analytics_provider.aml import lint_text
from analytics_provider.aml.cli import EXIT_ERRORS, EXIT_INTERNAL

from .test_aml_cli import REPO, run
from .test_aml_compiler import needs_compiler

CHART = """CustomChartDef c {
  label: 'c'
  fields {
    field category { type: 'dimension' }
    field amount { type: 'measure' }
  }
  template: @vgl {
    "data": {"values": @{values}},
    "mark": "bar", %s
    "encoding": {"x": {"field": @{fields.category.name}, "type": "nominal"},
                 "y": {"field": @{fields.amount.name}, "type": "quantitative"}}
  };;
}
"""
BAD_TYPE = (CHART % "").replace("'measure'", "'metric'")
"""A chart whose only finding is CC202 at 5:26, whatever is installed."""


def codes(text: str, path: str = "c.chart.aml", **kwargs: bool) -> list[str]:
    """``CODE line:column`` of every finding."""
    return [f"{d.code} {d.line}:{d.column}" for d in lint_text(text, path, **kwargs)]


# -- 1. the compiler's abort ----------------------------------------------------------------------------


@needs_compiler
@pytest.mark.parametrize("escape", ["\\u0000", "\\u0007", "\\u001b", "\\uffff"])
def test_a_control_character_in_a_template_string_is_a_finding_and_the_folder_is_still_linted(
        escape: str, tmp_path: Path) -> None:
    (tmp_path / "a_control.chart.aml").write_text(CHART % f'"title": "a{escape}b",')
    (tmp_path / "b_type.chart.aml").write_text(BAD_TYPE.replace("CustomChartDef c", "CustomChartDef d"))
    result = run("lint", str(tmp_path))
    assert result.returncode == EXIT_ERRORS, (result.returncode, result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'a_control.chart.aml'}:9:29: CC417 ")
    assert f"U+{escape[2:].upper()}" in lines[0]
    assert lines[1].startswith(f"{tmp_path / 'b_type.chart.aml'}:5:26: CC202 ")
    assert lines[2] == "2 files checked: 2 errors, 0 warnings in 2 files."


@needs_compiler
def test_preview_of_a_control_character_is_a_finding(tmp_path: Path) -> None:
    chart = tmp_path / "c.chart.aml"
    chart.write_text(CHART % '"title": "a\\u0007b",')
    result = run("preview", str(chart), "--out", str(tmp_path / "c.png"))
    assert result.returncode == EXIT_ERRORS, (result.returncode, result.stderr)
    assert result.stdout.startswith(f"{chart}:9:29: CC417 ")
    assert not (tmp_path / "c.png").exists()


@needs_compiler
def test_an_option_value_with_a_control_character_never_reaches_the_compiler() -> None:
    text = CHART.replace("  template:", "  options { option t { type: 'input' default_value: 'a\\0b' } }\n  template:")
    assert codes(text % '"title": @{options.t.value},') == ["CC417 7:53"]


@needs_compiler
def test_the_compiler_crashing_does_not_take_the_caller_down(tmp_path: Path) -> None:
    """The compiler itself still aborts on a control character; the process that asked survives it,
    and the next chart compiles."""
    script = textwrap.dedent("""
        from analytics_provider.aml import compiler
        from analytics_provider.aml.template import Engine
        spec = {"data": {"values": [{"a": "x", "b": 1}]}, "mark": "bar", "title": "a\\u0007b",
                "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}
        try:
            compiler.compile_spec(spec, Engine("vega-lite"))
        except compiler.CompilerCrashed as exc:
            print("crashed:", exc.message)
        del spec["title"]
        print("then:", compiler.compile_spec(spec, Engine("vega-lite")).vega_lite_version)
    """)
    result = run_python(script)
    assert result.returncode == 0, (result.returncode, result.stderr)
    crashed, then = result.stdout.splitlines()
    assert crashed.startswith("crashed: vl-convert stopped (SIGABRT)")
    assert then.startswith("then: 5.")


@needs_compiler
def test_a_real_compiler_crash_is_an_internal_error_of_its_file_and_the_others_are_linted(tmp_path: Path) -> None:
    """With the control-character rule switched off, the compiler's abort itself reaches the command:
    it is reported on the chart (exit 3), and the next file is compiled by a new child."""
    (tmp_path / "a_control.chart.aml").write_text(CHART % '"title": "a\\u0007b",')
    (tmp_path / "b_mark.chart.aml").write_text((CHART % "").replace("CustomChartDef c", "CustomChartDef d")
                                               .replace('"bar"', '"barr"'))
    script = textwrap.dedent(f"""
        import sys
        from analytics_provider.aml import checks_template
        from analytics_provider.aml.cli import main
        checks_template.undrawable = lambda text: -1
        sys.exit(main(["lint", "--no-schema", {str(tmp_path)!r}]))
    """)
    result = run_python(script)
    assert result.returncode == EXIT_INTERNAL, (result.returncode, result.stdout, result.stderr)
    crash, mark, summary = result.stdout.splitlines()
    assert crash.startswith(f"{tmp_path / 'a_control.chart.aml'}:7:18: CC000 internal error: the compiler crashed "
                            "on this template (vl-convert stopped (SIGABRT): ")
    assert mark.startswith(f"{tmp_path / 'b_mark.chart.aml'}:9:13: CC421 ")
    assert summary == "2 files checked: 1 error, 0 warnings in 2 files; 1 internal error (exit status 3)."


def run_python(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by the same interpreter in the repository, as the command is."""
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)


# -- 2. tracebacks under the status of a finding ----------------------------------------------------------

DEEP_AML = "CustomChartDef c { label: " + "[" * 10_000 + "]" * 10_000 + " }\n"
DEEP_TEMPLATE = CHART % ('"usermeta": ' + "[" * 10_000 + "]" * 10_000 + ",")
LONG_CHAIN_PAGE = "Dashboard d { title: " + "+".join(["1"] * 3_000) + " }\nCustomChart { dataset: e }\n"
LONG_CHAIN_USE = "Dashboard d { v: CustomChart { dataset: e, custom_chart: c, settings: " \
                 + "+".join(["1"] * 3_000) + " } }\n"
HOSTILE = {
    "non-ASCII letter in a chart name": ("c.chart.aml", "CustomChartDef café { label: 'x' }\n", "CC001 1:19"),
    "non-ASCII digit as a value": ("c.chart.aml", "CustomChartDef c { label: ²3 }\n", "CC001 1:27"),
    "non-ASCII letter in a page": ("p.page.aml", "Dashboard d { v: CustomChart { dataset: é } }\n", "CC001 1:41"),
    "a number of 5,000 digits": ("c.chart.aml", "CustomChartDef c {\n  label: " + "1" * 5_000 + "\n}\n", "CC005 2:10"),
    "a template number of 5,000 digits": ("c.chart.aml", CHART % ('"width": ' + "1" * 5_000 + ","), "CC005 9:29"),
    "10,000 levels of AML": ("c.chart.aml", DEEP_AML, "CC005 1:126"),
    "10,000 levels of a template": ("c.chart.aml", DEEP_TEMPLATE, "CC005 9:131"),
    # AML outside the chart blocks of a page is not the linter's: the page's chart is linted all the same
    "a chain of 3,000 terms in a page": ("p.page.aml", LONG_CHAIN_PAGE, "CC501 2:1"),
    "a chain of 3,000 terms in a use": ("p.page.aml", LONG_CHAIN_USE, "CC005 1:2071"),
}


@pytest.mark.parametrize(("path", "text", "finding"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_text_is_a_finding_at_its_position(path: str, text: str, finding: str) -> None:
    assert finding in codes(text, path, compiler=False)


@pytest.mark.parametrize("optimised", [False, True], ids=["python", "python -O"])
@pytest.mark.parametrize(("path", "text", "finding"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_file_exits_1_with_the_finding_and_no_traceback(
        path: str, text: str, finding: str, optimised: bool, tmp_path: Path) -> None:
    file = tmp_path / path
    file.write_text(text, encoding="utf-8")
    result = run("lint", "--no-compile", str(file), flags=("-O",) if optimised else ())
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == EXIT_ERRORS
    code, where = finding.split(" ")
    assert f"{file}:{where}: {code} " in result.stdout


def test_an_internal_error_names_its_file_exits_3_and_the_other_files_are_linted(tmp_path: Path) -> None:
    """A bug of the linter (here: a check made to fail on one file) is reported with the file, under
    its own exit status; each file's diagnostics are printed as soon as the file is done."""
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.chart.aml").write_text(BAD_TYPE.replace("CustomChartDef c", f"CustomChartDef {name}"))
    script = textwrap.dedent(f"""
        import sys
        from analytics_provider.aml import checks_template, lint
        from analytics_provider.aml.cli import main
        original = checks_template.check_template
        def check_template(entry, info, rep):
            print("checking", rep.source.path.rsplit("/", 1)[-1], flush=True)
            if rep.source.path.endswith("b.chart.aml"):
                raise RecursionError("maximum recursion depth exceeded")
            return original(entry, info, rep)
        lint.check_template = check_template
        sys.exit(main(["lint", "--no-compile", {str(tmp_path)!r}]))
    """)
    result = run_python(script)
    assert result.returncode == EXIT_INTERNAL, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "checking a.chart.aml"
    assert lines[1].startswith(f"{tmp_path / 'a.chart.aml'}:5:26: CC202 ")
    assert lines[2] == "checking b.chart.aml"
    assert lines[3].startswith(f"{tmp_path / 'b.chart.aml'}:5:26: CC202 ")
    assert lines[4].startswith(f"{tmp_path / 'b.chart.aml'}:7:13: CC000 internal error of the linter "
                               "(RecursionError: maximum recursion depth exceeded")
    assert lines[5] == "checking c.chart.aml"
    assert lines[6].startswith(f"{tmp_path / 'c.chart.aml'}:5:26: CC202 ")
    assert lines[7] == "3 files checked: 3 errors, 0 warnings in 3 files; 1 internal error (exit status 3)."


def test_exit_statuses_are_in_the_help() -> None:
    result = run("lint", "--help")
    text = " ".join(result.stdout.split())
    assert "exit status: 0" in text.lower()
    for status in ("0", "1", "2", "3"):
        assert f"{status} " in text


# -- 3. judged wrongly ---------------------------------------------------------------------------------------


def test_a_template_key_given_twice_is_a_finding_at_the_second() -> None:
    assert codes(CHART % '"mark": "line",', compiler=False) == ["CC416 9:20"]


def test_an_infinite_number_is_a_finding() -> None:
    assert codes(CHART % '"width": 1e999,', compiler=False) == ["CC005 9:29"]
    assert "CC005 2:10" in codes("CustomChartDef c {\n  label: 1e999\n}\n", compiler=False)


@needs_compiler
def test_a_lone_surrogate_is_reported_at_the_string_and_a_pair_is_a_character() -> None:
    assert codes(CHART % '"title": "ab\\ud800",') == ["CC402 9:32"]
    assert codes(CHART % '"title": "a\\ud83d\\ude00",') == []


def test_a_byte_order_mark_is_accepted_and_positions_stay(tmp_path: Path) -> None:
    expected = codes(BAD_TYPE, compiler=False)
    assert expected == ["CC202 5:26"]
    file = tmp_path / "bom.chart.aml"
    file.write_bytes(b"\xef\xbb\xbf" + BAD_TYPE.encode())
    result = run("lint", "--no-compile", str(file))
    assert result.stdout.splitlines()[0].startswith(f"{file}:5:26: CC202 ")
    assert codes("\ufeff" + BAD_TYPE, compiler=False) == expected


def test_exit_statuses_are_documented() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "custom_charts.rst").read_text(encoding="utf-8")
    section = docs[docs.index("* Exit status"):docs.index("Speed:")]
    for status in ("0", "1", "2", "3"):
        assert f"``{status}``" in section
    assert "internal error" in section and "CC000" in section


@needs_compiler
def test_preview_refuses_a_data_cell_the_compiler_would_abort_on(tmp_path: Path) -> None:
    chart = tmp_path / "c.chart.aml"
    chart.write_text(CHART % "")
    rows = tmp_path / "rows.csv"
    rows.write_text("category,amount\nNorth,3\nSo\x07uth,4\n")
    result = run("preview", str(chart), "--data", str(rows), "--out", str(tmp_path / "c.png"))
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert f"{rows}: line 3, column category: the cell holds U+0007" in result.stderr
    assert not (tmp_path / "c.png").exists()


@needs_compiler
def test_nesting_up_to_the_limit_is_linted_whole() -> None:
    """100 levels (the limit) go through every check, the schema and the compiler included."""
    deep = "{" + '"a": {' * 98 + "}" * 98 + "}"  # with the template's own braces: 100 levels
    assert codes(CHART % f'"usermeta": {deep},') == []
    assert codes(CHART % f'"usermeta": {{"b": {deep}}},') == ["CC005 9:626"]
    aml = "CustomChartDef c {\n  label: " + "[" * 99 + "]" * 99 + "\n}\n"
    assert [c.split(" ")[0] for c in codes(aml, compiler=False)] == ["CC101", "CC101", "CC105"]


def test_a_fifo_a_device_and_a_huge_file_are_findings_and_the_rest_is_linted(tmp_path: Path) -> None:
    """A FIFO named *.chart.aml stalled the linter (or ended it, exit 3, the other files unlinted),
    a link to /dev/zero and a 400 MB file were read whole (837 MB of memory): each is now a finding
    at its file (CC006), read no further than its size, and the other files are linted (issue 46)."""
    import os
    import tracemalloc

    from analytics_provider.aml import lint_paths
    from analytics_provider.aml.limits import MAX_FILE_BYTES

    (tmp_path / "bad.chart.aml").write_text("CustomChartDef { label: }\n")
    os.mkfifo(tmp_path / "pipe.chart.aml")
    (tmp_path / "zero.chart.aml").symlink_to("/dev/zero")
    with (tmp_path / "huge.chart.aml").open("wb") as huge:  # sparse: it takes no disk
        huge.truncate(4 * MAX_FILE_BYTES)
    tracemalloc.start()
    try:
        found = lint_paths([tmp_path], compiler=False, schema=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    by_file = {Path(d.path).name: d for d in found if d.code == "CC006"}
    assert sorted(by_file) == ["huge.chart.aml", "pipe.chart.aml", "zero.chart.aml"]
    assert "it is not a regular file" in by_file["pipe.chart.aml"].message
    assert "it is not a regular file" in by_file["zero.chart.aml"].message
    assert by_file["huge.chart.aml"].message == (
        "not read: it has 67,108,864 bytes; the linter reads files of at most 16,777,216 bytes (16 MiB)")
    assert any(Path(d.path).name == "bad.chart.aml" and d.code == "CC001" for d in found)  # still linted
    assert peak < 8 * 1024 * 1024  # the 64 MiB file was not read


def test_the_command_reports_a_fifo_and_goes_on(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "pipe.chart.aml")
    (tmp_path / "bad.chart.aml").write_text("CustomChartDef { label: }\n")
    done = run("lint", "--no-compile", "--no-schema", str(tmp_path))
    assert done.returncode == EXIT_ERRORS, done.stderr
    assert "pipe.chart.aml:1:1: CC006 not read: it is not a regular file" in done.stdout
    assert "bad.chart.aml" in done.stdout
