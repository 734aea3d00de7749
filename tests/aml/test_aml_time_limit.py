"""Issue 46, item 3: the linter ends on time. A valid chart whose data and transforms take minutes to
run (a generated sequence of 30,000 rows, flattened, smoothed by a loess of bandwidth 1: it had not
finished after 60 s) is a finding at its file within the limit; the child is replaced, and the other
files of the folder are still linted. ``preview`` keeps the same limit. Likewise for memory: a chart
whose strings grow the compiler's process to 1.5 GB (fifth attack) is a finding at its own limit."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from analytics_provider.aml import compiler, compiler_process
from analytics_provider.aml.lint import lint_paths
from analytics_provider.aml.preview import PreviewError, preview

from .helpers import CORPUS

needs_compiler = pytest.mark.skipif(not compiler.available(), reason="vl-convert-python is not installed")
REPO = CORPUS.parents[2]
LIMIT = 2.0

SLOW = """CustomChartDef slow_trend {
  label: 'Smoothed trend'
  fields {
    field x { label: 'X' type: 'dimension' data_type: 'number' }
    field y { label: 'Y' type: 'measure' }
  }
  template: @vgl {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "data": {"values": @{values}},
    "layer": [
      {"mark": "point", "encoding": {"x": {"field": "@{fields.x.name}", "type": "quantitative"},
                                      "y": {"field": "@{fields.y.name}", "type": "quantitative"}}},
      {"data": {"sequence": {"start": 0, "stop": 30000, "as": "i"}},
       "transform": [{"calculate": "[datum.i, datum.i * 2]", "as": "pair"}, {"flatten": ["pair"]},
                     {"calculate": "sin(datum.pair)", "as": "v"},
                     {"loess": "v", "on": "pair", "bandwidth": 1}],
       "mark": "line", "encoding": {"x": {"field": "pair", "type": "quantitative"},
                                    "y": {"field": "v", "type": "quantitative"}}}
    ]
  };;
}
"""


def folder(tmp_path: Path) -> Path:
    """The slow chart between a good one and a broken one (files are linted in name order)."""
    (tmp_path / "b_slow.chart.aml").write_text(SLOW)
    for name, source in (("a_good", "valid/simple_bar.chart.aml"), ("c_broken", "invalid/cannot_render.chart.aml")):
        (tmp_path / f"{name}.chart.aml").write_text((CORPUS / source).read_text())
    return tmp_path


@needs_compiler
def test_a_slow_chart_is_a_finding_within_the_limit_and_the_others_are_linted(tmp_path: Path) -> None:
    paths = folder(tmp_path)
    compiler_process.start()  # loaded before the clock starts, as a run's rules give it time to
    compiler_process.call("versions")
    started = time.monotonic()
    found = lint_paths([paths], schema=False, compile_timeout=LIMIT)
    took = time.monotonic() - started
    slow = [d for d in found if d.path.endswith("b_slow.chart.aml")]
    assert [(d.code, d.message.split(":")[0]) for d in slow] == [("CC422", "compile took longer than 2 s")]
    assert slow[0].line == 7  # at the template
    others = {Path(d.path).name: d.code for d in found if d not in slow}
    assert others == {"c_broken.chart.aml": "CC421"}  # linted by a new child; the good file has nothing
    assert took < LIMIT + 40, took  # unbounded, the slow chart alone runs for minutes


@needs_compiler
def test_the_command_line_takes_the_limit(tmp_path: Path) -> None:
    paths = folder(tmp_path)
    result = subprocess.run([sys.executable, "-m", "analytics_provider.aml", "lint", "--no-schema",
                             "--compile-timeout", "2", str(paths)], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result
    assert lines[0].startswith(f"{paths / 'b_slow.chart.aml'}:7:") and " CC422 compile took longer than 2 s" in lines[0]
    assert " CC421 " in lines[1] and lines[2] == "3 files checked: 2 errors, 0 warnings in 2 files."


@needs_compiler
def test_preview_keeps_the_same_limit(tmp_path: Path) -> None:
    (tmp_path / "slow.chart.aml").write_text(SLOW)
    with pytest.raises(PreviewError, match="compile took longer than 2 s") as refused:
        preview(tmp_path / "slow.chart.aml", out=tmp_path / "slow.png", compile_timeout=LIMIT)
    assert [d.code for d in refused.value.diagnostics] == ["CC422"]
    assert not (tmp_path / "slow.png").exists()
    drawn = preview(CORPUS / "valid/simple_bar.chart.aml", out=tmp_path / "bar.png", compile_timeout=LIMIT * 10)
    assert drawn.path.read_bytes().startswith(b"\x89PNG")  # the next call has a child again


@pytest.mark.parametrize("bad", [0, -1, float("inf"), "5", True, 1e10, 1e308])  # past an hour: no wait counts it
def test_a_bad_limit_is_refused_by_name(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="compile_timeout must be a positive number of seconds"):
        lint_paths([CORPUS / "valid/simple_bar.chart.aml"], compile_timeout=bad)  # type: ignore[arg-type]


def test_a_limit_past_an_hour_is_a_usage_error_and_a_failed_wait_leaves_no_answer_behind(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    """A wait that fails (here as a limit the OS cannot count failed it) ends the child: its answer,
    read by nobody, must not be taken for the next chart's (a broken chart would lint clean)."""
    from analytics_provider.aml import compiler_process

    bad = CORPUS / "invalid/cannot_render.chart.aml"
    assert subprocess.run([sys.executable, "-m", "analytics_provider.aml", "lint", "--compile-timeout", "1e10",
                           str(bad)], capture_output=True, text=True, timeout=120).returncode == 2
    failing = {"now": True}
    answers_within = compiler_process._Child._answers_within

    def overflowing(self: Any, seconds: float, memory: int | None) -> str:
        if failing.pop("now", False):
            raise OverflowError("timestamp out of range for platform time_t")
        return answers_within(self, seconds, memory)

    monkeypatch.setattr(compiler_process._Child, "_answers_within", overflowing)
    first = lint_paths([CORPUS / "valid/simple_bar.chart.aml"], compile_timeout=LIMIT * 10)
    assert [d.code for d in first] == ["CC000"]  # the failed wait: an internal error of that chart
    assert [d.code for d in lint_paths([bad], compile_timeout=LIMIT * 10)] == ["CC421"]  # its own answer


HUNGRY = SLOW.replace("slow_trend", "hungry_labels").replace(
    '{"data": {"sequence": {"start": 0, "stop": 30000, "as": "i"}},',
    '{"data": {"sequence": {"start": 0, "stop": 3000, "as": "i"}},').replace(
    '"transform": [{"calculate": "[datum.i, datum.i * 2]", "as": "pair"}, {"flatten": ["pair"]},',
    '"transform": [{"calculate": "pad(\'x\', 100000, \'y\')", "as": "label"}, {"calculate": "datum.i", "as": "pair"},')
MEMORY = 256 * 1_048_576


class PeakOfTheChild:
    """The running compiler child's peak resident memory until it ends, read every 20 ms from another
    thread (its pid read first: a call holds the child's lock)."""

    def __init__(self) -> None:
        self.peak, self._done, self.pid = 0, threading.Event(), compiler_process.child_pid()
        assert self.pid is not None
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, compiler_process._resident(self.pid or 0))

    def __enter__(self) -> PeakOfTheChild:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


@needs_compiler
def test_a_chart_that_takes_too_much_memory_is_a_finding_and_the_others_are_linted(tmp_path: Path) -> None:
    """Before: no bound; this chart's compile grew the child past 1.4 GB within 30 s."""
    (tmp_path / "b_slow.chart.aml").write_text(HUNGRY)
    for name, source in (("a_good", "valid/simple_bar.chart.aml"), ("c_broken", "invalid/cannot_render.chart.aml")):
        (tmp_path / f"{name}.chart.aml").write_text((CORPUS / source).read_text())
    compiler_process.start()
    compiler_process.call("versions")
    with PeakOfTheChild() as child:
        found = lint_paths([tmp_path], schema=False, compile_timeout=600, compile_memory=MEMORY)
    hungry = [d for d in found if d.path.endswith("b_slow.chart.aml")]
    said = [(d.code, d.message.split(":")[0]) for d in hungry]
    assert said == [("CC423", "compile took more than 256 MiB of memory")]
    assert {Path(d.path).name: d.code for d in found if d not in hungry} == {"c_broken.chart.aml": "CC421"}
    assert MEMORY < child.peak < 2 * MEMORY, child.peak  # stopped near its limit (a read every 0.1 s)


@needs_compiler
def test_the_command_line_and_preview_take_the_memory_limit(tmp_path: Path) -> None:
    (tmp_path / "hungry.chart.aml").write_text(HUNGRY)
    result = subprocess.run([sys.executable, "-m", "analytics_provider.aml", "lint", "--no-schema",
                             "--compile-memory", "256", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1 and " CC423 compile took more than 256 MiB of memory" in result.stdout, result
    for bad in ("100", "lots", "-5"):
        refused = subprocess.run([sys.executable, "-m", "analytics_provider.aml", "lint", "--compile-memory", bad,
                                  str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2 and "a whole number of MiB of at least 256" in refused.stderr, refused
    with pytest.raises(PreviewError, match="compile took more than 256 MiB of memory") as stopped:
        preview(tmp_path / "hungry.chart.aml", out=tmp_path / "hungry.png", compile_memory=MEMORY)
    assert [d.code for d in stopped.value.diagnostics] == ["CC423"] and not (tmp_path / "hungry.png").exists()
