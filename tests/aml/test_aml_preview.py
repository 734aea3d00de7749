"""``preview``: a definition drawn with sample rows or a csv file's, by the compilers the lint uses."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from analytics_provider.aml import compiler
from analytics_provider.aml.model import DefInfo, Slot
from analytics_provider.aml.preview import preview
from analytics_provider.aml.sample import DataError, read_rows, sample_rows

from .helpers import CORPUS
from .test_aml_cli import run

needs_compiler = pytest.mark.skipif(
    not compiler.available(), reason="vl-convert-python is not installed (the 'charts' extra)"
)
CHARTS = sorted(p for p in (CORPUS / "valid").rglob("*.chart.aml"))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@needs_compiler
@pytest.mark.parametrize("chart", CHARTS, ids=lambda p: p.name)
def test_every_valid_chart_is_drawn(chart: Path, tmp_path: Path) -> None:
    drawn = preview(chart, out=tmp_path / "chart.png")
    width, height = png_size(drawn.path.read_bytes())
    assert width > 100 and height > 50
    assert drawn.judge.startswith(("Vega-Lite 5.", "Vega-Lite 6.", "Vega"))


@needs_compiler
def test_the_command_writes_svg_from_a_csv_named_after_the_slots(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("dimension,measure\nZanzibar,12.5\nYukon,30\n", encoding="utf-8")
    out = tmp_path / "pics" / "bars.svg"
    chart = CORPUS / "valid" / "dashboard_project" / "revenue_bars.chart.aml"
    result = run("preview", str(chart), "--data", str(rows), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out} (revenue_bars, drawn by Vega-Lite 5.")
    svg = out.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "Zanzibar" in svg and "Yukon" in svg
    assert [p.name for p in out.parent.iterdir()] == ["bars.svg"]  # no temporary file left


@needs_compiler
def test_a_chart_that_cannot_render_says_where_and_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "broken.png"
    result = run("preview", "tests/aml/corpus/invalid/cannot_render.chart.aml", "--out", str(out))
    assert result.returncode == 1
    assert "tests/aml/corpus/invalid/cannot_render.chart.aml:10:33: CC421" in result.stdout
    assert "Unexpected token" in result.stdout
    assert not out.exists() and list(tmp_path.iterdir()) == []


@needs_compiler
def test_a_definition_with_errors_is_not_drawn(tmp_path: Path) -> None:
    result = run("preview", "tests/aml/corpus/invalid/default_mismatch.chart.aml", "--out", str(tmp_path / "x.png"))
    assert result.returncode == 1
    assert result.stdout.count(": CC304 ") == 8
    assert "fix them first" in result.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    chart = str(CORPUS / "valid" / "dashboard_project" / "revenue_bars.chart.aml")
    assert run("preview", chart, "--out", str(tmp_path / "x.jpeg")).returncode == 2
    bad = tmp_path / "rows.csv"
    bad.write_text("dimension,amount\nA,1\n", encoding="utf-8")
    result = run("preview", chart, "--data", str(bad), "--out", str(tmp_path / "x.png"))
    if compiler.available():
        assert result.returncode == 2
        assert "missing: measure" in result.stderr and "not slots: amount" in result.stderr
    else:
        assert result.returncode == 1 and "charts" in result.stderr


def test_without_the_compiler_preview_says_which_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from analytics_provider.aml.preview import PreviewError

    monkeypatch.setattr(compiler, "available", lambda: False)
    with pytest.raises(PreviewError, match=r"'charts' extra; .* pip install .* \"\.\[charts\]\" -c constraints/"):
        preview(CORPUS / "valid" / "simple_bar.chart.aml", out=tmp_path / "x.png")


def test_sample_rows_hold_one_row_per_combination_of_dimensions() -> None:
    info = DefInfo(slots={"day": Slot("day", 0, "dimension", "date"), "shop": Slot("shop", 0, "dimension"),
                          "size": Slot("size", 0, "dimension", "number"), "sales": Slot("sales", 0, "measure")})
    rows = sample_rows(info, limit=1000)
    keys = [(r["day"], r["shop"], r["size"]) for r in rows]
    assert len(keys) == len(set(keys)) == 6 * 3 * 8
    assert all(isinstance(r["sales"], int) and isinstance(r["size"], int) for r in rows)
    assert len({r["day"] for r in rows}) == 6 and all(len(r["day"]) == 10 for r in rows)
    assert len(sample_rows(info)) == 60


def test_csv_rows_read_numbers_as_numbers(tmp_path: Path) -> None:
    info = DefInfo(slots={"a": Slot("a", 0, "dimension"), "b": Slot("b", 0, "measure")})
    path = tmp_path / "r.csv"
    path.write_text("a,b\nx,1\ny,2.5\nz,\n", encoding="utf-8")
    assert read_rows(path, info) == [{"a": "x", "b": 1}, {"a": "y", "b": 2.5}, {"a": "z", "b": None}]
    path.write_text("a\nx\n", encoding="utf-8")
    with pytest.raises(DataError, match="missing: b"):
        read_rows(path, info)


@pytest.mark.parametrize("scale", ["0", "-1", "nan", "inf", "200", "10.5", "0.05", "lots"])
def test_a_scale_out_of_range_is_a_usage_error_naming_the_range(scale: str, tmp_path: Path) -> None:
    chart = str(CORPUS / "valid" / "dashboard_project" / "revenue_bars.chart.aml")
    result = run("preview", chart, "--out", str(tmp_path / "x.png"), f"--scale={scale}")
    assert result.returncode == 2, result.stdout  # --scale=200 drew 6.1 GiB; 0, -1, nan and inf were taken
    assert f"argument --scale: a number from 0.1 to 10, got '{scale}'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_preview_function_refuses_a_scale_out_of_range_too(tmp_path: Path) -> None:
    from analytics_provider.aml.preview import PreviewError

    for scale in (0, float("nan"), 11, True):
        with pytest.raises(PreviewError, match=r"^--scale must be a number from 0.1 to 10, got "):
            preview(CORPUS / "valid" / "simple_bar.chart.aml", out=tmp_path / "x.png", scale=scale)


@needs_compiler
def test_a_picture_past_the_pixel_bound_is_refused_before_it_is_painted(tmp_path: Path) -> None:
    """A template of 4,000 x 2,000 at scale 2: 8,0xx x 4,0xx pixels, past 25 million (the bound)."""
    chart = tmp_path / "wide.chart.aml"
    source = (CORPUS / "valid" / "dashboard_project" / "revenue_bars.chart.aml").read_text(encoding="utf-8")
    chart.write_text(source.replace('"data": {"values": @{values}},',
                                    '"width": 4000, "height": 2000, "data": {"values": @{values}},'), encoding="utf-8")
    out = tmp_path / "wide.png"
    result = run("preview", str(chart), "--out", str(out), "--scale=2")
    assert result.returncode == 1, result.stdout
    assert f"error: {chart}: the picture would be " in result.stderr
    assert "pixels at scale 2, past the 25,000,000 a preview may have; nothing was drawn" in result.stderr
    assert not out.exists()
    drawn = preview(chart, out=out, scale=1)  # 4,0xx x 2,0xx: within the bound
    assert png_size(out.read_bytes())[0] > 4000 and drawn.chart_name == "revenue_bars"


@pytest.mark.parametrize("scale", [10**400, "\u0663", "1_0", "\u0661\u0660", -(10**400), "1e400"])
def test_a_scale_of_other_digits_or_past_a_float_is_refused_by_name(scale) -> None:
    """Arabic-Indic three, 1_0 (float() takes both) and 10**400 (bare OverflowError) were not refused by name."""
    from analytics_provider.aml.preview import check_scale

    with pytest.raises(ValueError, match=r"^--scale must be a number from 0.1 to 10, got ") as refused:
        check_scale(scale)
    assert len(str(refused.value)) < 120
    assert check_scale(" 2.5 ") == 2.5 and check_scale(".5") == 0.5 and check_scale("1e0") == 1.0
