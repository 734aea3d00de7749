"""A seeded, bounded fuzzer: the corpus's files damaged and spiked with hostile text, linted as chart
files and as pages. Whatever the input, the linter returns findings at real positions and never
crashes: no exception, no internal error (CC000), and the command never dies.

The counts are printed (``pytest -s``) and recorded as test properties (``--junitxml``).
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from analytics_provider.aml import CODES, compiler, lint_text
from analytics_provider.aml.cli import EXIT_ERRORS, EXIT_OK

from .helpers import CORPUS
from .test_aml_cli import run

SEED = 33
ROUNDS = 6
"""Damaged copies of each corpus file: with the two paths each is linted as, about 900 inputs."""
COMPILE_EVERY = 40
"""One input in this many is linted with the compiler too (a few seconds in all)."""
STRUCTURE = [*"{}[]\"':,;@/*\n-.+=!()", ";;", "@vgl {", "@{values}", "\r\n", "\\"]
HOSTILE = [
    "\x00", "\x07", "\x1b", "\x0b", "\ufeff", "\ufffe", "\uffff", "\u2028", "é", "²", "٣", "ß", "\U0001f600",
    "\\u0000", "\\u0007", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\uffff", "\\x", "1e999", "-1e400", "9" * 600,
    "[" * 150, "{" * 150, "(" * 150, "]" * 150, "+1" * 1_100, "- " * 300, '"mark": "bar", "mark": "line",',
    '"title": "a\\u0007b",', "café", "CustomChartDef", "CustomChart {", "@{fields.x.name}", "@{options.", "\t",
]
TEMPLATE_SPIKES = [
    '"title": "a\\u0007b",', '"title": "\\ud800",', '"width": 1e999,', '"width": ' + "1" * 700 + ",",
    '"mark": "bar", "mark": "line",', '"usermeta": ' + "[" * 120 + "]" * 120 + ",", '"title": "x\\uffff",',
    '"title": "\\ud83d\\ude00 ok",', '"description": "tab\\tand\\nline",',
]


def damaged(text: str, rnd: random.Random) -> str:
    """``text`` with one to four edits: a cut, characters removed or put in, a hostile piece spliced
    in, or a spike right inside a template's top-level object."""
    chars = list(text)
    for _ in range(rnd.randint(1, 4)):
        pos = rnd.randrange(len(chars) + 1)
        kind = rnd.random()
        if kind < 0.1:
            del chars[pos:]
        elif kind < 0.35 and chars:
            del chars[pos:pos + rnd.randint(1, 5)]
        elif kind < 0.6:
            chars[pos:pos] = list(rnd.choice(STRUCTURE))
        elif kind < 0.85:
            chars[pos:pos] = list(rnd.choice(HOSTILE))
        else:
            current = "".join(chars)
            at = current.find("@vgl {")
            at = current.find("@vg {") if at < 0 else at
            if at >= 0:
                end = current.index("{", at) + 1
                chars = list(current[:end] + "\n    " + rnd.choice(TEMPLATE_SPIKES) + current[end:])
    return "".join(chars)


def inputs() -> list[str]:
    rnd = random.Random(SEED)
    texts = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.aml"))]
    return [damaged(text, rnd) for text in texts for _ in range(ROUNDS)]


def test_fuzzed_files_give_findings_and_never_a_crash(record_testsuite_property: Callable[[str, object], None]) -> None:
    crashes: list[str] = []
    findings: Counter[str] = Counter()
    linted = compiled = 0
    compile_on = compiler.available()
    for number, text in enumerate(inputs()):
        for path in ("fuzz.chart.aml", "fuzz.page.aml"):
            with_compiler = compile_on and path.endswith(".chart.aml") and number % COMPILE_EVERY == 0
            linted += 1
            compiled += with_compiler
            try:
                found = lint_text(text, path, schema=number % 2 == 0, compiler=with_compiler)
            except Exception as exc:  # what the test is for: count it, and show the input
                crashes.append(f"{type(exc).__name__}: {exc} on {text[:200]!r}")
                continue
            for d in found:
                assert d.code in CODES and d.line >= 1 and d.column >= 1, d
                if d.code == "CC000":
                    crashes.append(f"{d.format()} on {text[:200]!r}")
                findings[d.code] += 1
    total = sum(findings.values())
    print(f"\naml fuzz (seed {SEED}): {linted} inputs ({compiled} compiled), {total} findings, "
          f"{len(crashes)} crashes; most found: {', '.join(f'{c} {n}' for c, n in findings.most_common(8))}")
    record_testsuite_property("fuzz_inputs", linted)
    record_testsuite_property("fuzz_findings", total)
    record_testsuite_property("fuzz_crashes", len(crashes))
    assert crashes == []
    assert linted > 800 and total > linted  # the damage is found, not waved through
    assert {"CC001", "CC005", "CC402", "CC416", "CC417"} <= set(findings)


def test_the_command_survives_a_folder_of_fuzzed_files(tmp_path: Path) -> None:
    """The command, compiler and all, on fuzzed files holding what aborted it: it ends on its own
    terms (1 for the findings), with each file's diagnostics and no traceback."""
    rnd = random.Random(SEED + 1)
    texts = [p.read_text(encoding="utf-8") for p in sorted((CORPUS / "valid").glob("*.chart.aml"))]
    for i in range(24):
        text = rnd.choice(texts)
        at = text.find("@vgl {")
        if i % 2 == 0 and at >= 0:  # half are whole charts with a spike in their template, the rest damaged
            end = text.index("{", at) + 1
            text = text[:end] + "\n    " + TEMPLATE_SPIKES[i // 2 % len(TEMPLATE_SPIKES)] + text[end:]
        else:
            text = damaged(text, rnd)
        (tmp_path / f"f{i:02d}.chart.aml").write_text(text, encoding="utf-8")
    result = run("lint", str(tmp_path))
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode in (EXIT_OK, EXIT_ERRORS), (result.returncode, result.stdout[-3000:], result.stderr)
    assert result.stdout.splitlines()[-1].startswith("24 files checked")
    print(f"\naml fuzz command: 24 files, exit {result.returncode}, {len(result.stdout.splitlines()) - 1} findings",
          file=sys.stderr)
