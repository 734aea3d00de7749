"""Reading the corpus: its units and the diagnostics each must raise.

A unit is a file, or a folder linted together as one project, under corpus/valid or
corpus/invalid. Each diagnostic a file must raise is a line at its end::

    // expect: CC202 7:13
    // expect: CC420 5:3 [schema]

``[schema]`` marks a diagnostic expected only when the Vega-Lite schema is installed, ``[compile]``
one expected only when the compilers (vl-convert) are.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from analytics_provider.aml import compiler, schema

CORPUS = Path(__file__).parent / "corpus"
EXPECT = re.compile(r"^// expect: (CC\d{3}) (\d+):(\d+)(?: \[(schema|compile)\])?$", re.MULTILINE)


def units(kind: str) -> list[Path]:
    """The units of corpus/valid or corpus/invalid."""
    return sorted((CORPUS / kind).iterdir())


def files_of(unit: Path) -> list[Path]:
    """The AML files of a unit."""
    return sorted(unit.rglob("*.aml")) if unit.is_dir() else [unit]


def expected(unit: Path, *, schema_on: bool | None = None,
             compile_on: bool | None = None) -> Counter[tuple[str, str, int, int]]:
    """(path, code, line, column) of every diagnostic the unit must raise, with multiplicity."""
    schema_on = schema.available() if schema_on is None else schema_on
    compile_on = compiler.available() if compile_on is None else compile_on
    found: Counter[tuple[str, str, int, int]] = Counter()
    for file in files_of(unit):
        for m in EXPECT.finditer(file.read_text(encoding="utf-8")):
            if (m.group(4) == "schema" and not schema_on) or (m.group(4) == "compile" and not compile_on):
                continue
            found[(str(file), m.group(1), int(m.group(2)), int(m.group(3)))] += 1
    return found


def expected_codes() -> set[str]:
    """Every code some invalid unit expects, schema ones included."""
    codes: set[str] = set()
    for unit in units("invalid"):
        for file in files_of(unit):
            codes.update(m.group(1) for m in EXPECT.finditer(file.read_text(encoding="utf-8")))
    return codes
