"""A real Office Open XML workbook, written by hand with zipfile (inline strings, one sheet)."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
CT = "application/vnd.openxmlformats-officedocument"
HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")

CONTENT_TYPES = HEAD + (
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    f'<Override PartName="/xl/workbook.xml" ContentType="{CT}.spreadsheetml.sheet.main+xml"/>'
    f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{CT}.spreadsheetml.worksheet+xml"/>'
    f'<Override PartName="/xl/styles.xml" ContentType="{CT}.spreadsheetml.styles+xml"/>'
    '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>'
    f'<Override PartName="/docProps/app.xml" ContentType="{CT}.extended-properties+xml"/>'
    "</Types>"
)
ROOT_RELS = HEAD + (
    f'<Relationships xmlns="{PKG_REL}">'
    f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/>'
    f'<Relationship Id="rId2" Type="{PKG_REL}/metadata/core-properties" Target="docProps/core.xml"/>'
    f'<Relationship Id="rId3" Type="{REL}/extended-properties" Target="docProps/app.xml"/>'
    "</Relationships>"
)
WORKBOOK_RELS = HEAD + (
    f'<Relationships xmlns="{PKG_REL}">'
    f'<Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/>'
    f'<Relationship Id="rId2" Type="{REL}/styles" Target="styles.xml"/>'
    "</Relationships>"
)
STYLES = HEAD + (
    f'<styleSheet xmlns="{MAIN}">'
    '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)
APP = HEAD + (
    '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
    "<Application>Analytics emulator</Application></Properties>"
)


def column_letter(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _text(value: Any) -> str:
    return escape(_ILLEGAL.sub("", str(value)))


def _cell(ref: str, value: Any, style: int = 0) -> str:
    s = f' s="{style}"' if style else ""
    if value is None:
        return ""
    if isinstance(value, bool):
        return f'<c r="{ref}" t="b"{s}><v>{int(value)}</v></c>'
    if isinstance(value, (int, float)):
        return f'<c r="{ref}"{s}><v>{value!r}</v></c>'
    return f'<c r="{ref}" t="inlineStr"{s}><is><t xml:space="preserve">{_text(value)}</t></is></c>'


def _sheet(columns: Sequence[str], rows: Iterable[Sequence[Any]], count: int) -> Iterator[str]:
    last = f"{column_letter(max(len(columns), 1) - 1)}{count + 1}"
    yield HEAD + f'<worksheet xmlns="{MAIN}"><dimension ref="A1:{last}"/>'
    yield '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" state="frozen"/></sheetView>'
    yield "</sheetViews><sheetData>"
    letters = [column_letter(i) for i in range(len(columns))]
    yield '<row r="1">' + "".join(_cell(f"{c}1", name, 1) for c, name in zip(letters, columns, strict=True)) + "</row>"
    for number, row in enumerate(rows, start=2):
        cells = "".join(_cell(f"{c}{number}", v) for c, v in zip(letters, row, strict=False))
        yield f'<row r="{number}">{cells}</row>'
    yield "</sheetData></worksheet>"


def write_xlsx(path: Path, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write a one-sheet workbook: a bold header row, then the rows (numbers stay numbers)."""
    sheet_name = re.sub(r"[\[\]:*?/\\]", " ", title)[:31] or "Export"
    workbook = HEAD + (
        f'<workbook xmlns="{MAIN}" xmlns:r="{REL}"><sheets>'
        f'<sheet name={quoteattr(sheet_name)} sheetId="1" r:id="rId1"/></sheets></workbook>'
    )
    core = HEAD + (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{_text(title)}</dc:title><dc:creator>Analytics emulator</dc:creator></cp:coreProperties>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr("_rels/.rels", ROOT_RELS)
        archive.writestr("docProps/core.xml", core)
        archive.writestr("docProps/app.xml", APP)
        archive.writestr("xl/workbook.xml", workbook)
        archive.writestr("xl/_rels/workbook.xml.rels", WORKBOOK_RELS)
        archive.writestr("xl/styles.xml", STYLES)
        with archive.open("xl/worksheets/sheet1.xml", "w") as sheet:
            for part in _sheet(columns, rows, len(rows)):
                sheet.write(part.encode("utf-8"))
