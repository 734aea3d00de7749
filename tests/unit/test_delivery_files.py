"""Delivery files are read strictly (issue 32): what YAML would drop, expand or refuse with a
traceback is a finding at its file and line; a file is bounded in size; a suffix in capitals is read."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from analytics_provider import manage
from analytics_provider.deliveries.check import check
from analytics_provider.deliveries.files import MAX_FILE_BYTES, load

ONE = """\
  - key: {key}
    dashboard: 1
    repeat: "0 8 * * 1"
    dest: {{type: EmailDest, recipients: [ann@example.com]}}
"""


def findings(folder: Path, text: str, name: str = "sales.yml") -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return [d.format().removeprefix(f"{path}:") for d in check(load(folder))[1]]


def test_a_section_given_twice_is_a_finding_at_the_second(tmp_path) -> None:
    text = "schedules:\n" + ONE.format(key="a") + "alerts: []\nschedules:\n" + ONE.format(key="b")
    assert findings(tmp_path, text) == ["7:1: DL103 'schedules' is given twice in one mapping: at line 1 and here"]


def test_a_field_given_twice_in_one_object_is_a_finding(tmp_path) -> None:
    text = "schedules:\n" + ONE.format(key="a") + "    key: b\n    dest: {type: EmailDest, recipients: [b@x.org]}\n"
    assert findings(tmp_path, text) == [
        "6:5: DL103 'key' is given twice in one mapping: at line 2 and here",
        "7:5: DL103 'dest' is given twice in one mapping: at line 5 and here",
    ]


def test_anchors_and_aliases_are_findings_never_expanded(tmp_path) -> None:
    laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    # each level nine aliases of the one before: 9**4 strings once expanded (the file had more levels)
    laughs += [f"{c}: &{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abc", "bcd", strict=True)]
    found = findings(tmp_path, "\n".join(laughs) + "\nschedules: *d\n")
    assert found[:2] == ["1:4: DL104 anchors and aliases are not read (&a): write the values out",
                         "2:4: DL104 anchors and aliases are not read (&b): write the values out"]
    assert len(found) == 4 + 3 * 9 + 1 and all("DL104" in f for f in found)  # each anchor and alias, once
    assert findings(tmp_path, "schedules: &a [*a]\n") == [
        "1:12: DL104 anchors and aliases are not read (&a): write the values out",
        "1:16: DL104 anchors and aliases are not read (*a): write the values out",
    ]


def test_merge_keys_and_custom_tags_are_findings_not_tracebacks(tmp_path) -> None:
    merged = "schedules:\n  - <<: {repeat: '0 8 * * 1'}\n" + ONE.format(key="a").replace("  - key", "    key")
    assert findings(tmp_path, merged) == ["2:5: DL105 merge keys (<<) are not read: write the fields out"]
    tagged = "schedules:\n" + ONE.format(key="a").replace("dashboard: 1", "dashboard: !env DASHBOARD")
    assert findings(tmp_path, tagged) == [
        "3:16: DL106 schedules[0].dashboard: the tag !env is not read: plain values only"]


def test_a_file_beyond_the_size_bound_is_a_finding_and_is_not_parsed(tmp_path) -> None:
    text = "schedules: []\n# " + "x" * MAX_FILE_BYTES + "\n"
    assert findings(tmp_path, text) == [f"1:1: DL107 the file is larger than {MAX_FILE_BYTES:,} bytes: not read"]


def test_a_suffix_in_capitals_is_read(tmp_path) -> None:
    (tmp_path / "sales.YML").write_text("schedules:\n" + ONE.format(key="a"), encoding="utf-8")
    (tmp_path / "ops.Yaml").write_text("schedules:\n" + ONE.format(key="b"), encoding="utf-8")
    declared, found = check(load(tmp_path))
    assert sorted(d.key for d in declared) == ["a", "b"] and found == []


def test_a_file_that_is_not_utf8_is_a_finding(tmp_path) -> None:
    (tmp_path / "sales.yml").write_bytes(b"schedules: []\n# caf\xe9\n")
    (found,) = check(load(tmp_path))[1]
    assert found.code == "DL100" and "not UTF-8" in found.message


NOT_PLAIN = [  # (the line as written, its finding) for values YAML reads as something JSON has not
    ("title: !!python/name:os.system", "3:12: DL106 schedules[0].title: the tag !!python/name:os.system is not read"),
    ("dashboard: !!int abc", "3:16: DL109 schedules[0].dashboard: abc is not an integer as JSON writes one"),
    ("title: 2024-02-30", "3:12: DL109 schedules[0].title: 2024-02-30 is a date to YAML, not a plain value"),
    ("title: 2024-01-01", "3:12: DL109 schedules[0].title: 2024-01-01 is a date to YAML, not a plain value"),
    ("title: !!timestamp 2024-99-99", "3:12: DL109 schedules[0].title: 2024-99-99 is a date to YAML"),
    ('title: !!binary "aGk="', "3:12: DL106 schedules[0].title: the tag !!binary is not read"),
    ("title: !!binary not base64!", "3:12: DL106 schedules[0].title: the tag !!binary is not read"),
    ("title: !!set {a, b}", "3:12: DL106 schedules[0].title: the tag !!set is not read"),
    ("paused: yes", "3:13: DL109 schedules[0].paused: yes is a boolean to YAML 1.1: write true or false"),
    ("dashboard: 010", "3:16: DL109 schedules[0].dashboard: 010 is not an integer as JSON writes one"),
    ("dashboard: 1:30", "3:16: DL109 schedules[0].dashboard: 1:30 is not an integer as JSON writes one"),
    ("dashboard: 0x1F", "3:16: DL109 schedules[0].dashboard: 0x1F is not an integer"),
    ("dashboard: 1_000", "3:16: DL109 schedules[0].dashboard: 1_000 is not an integer"),
    ("dashboard: .nan", "3:16: DL109 schedules[0].dashboard: .nan is not a finite number as JSON writes one"),
    ("dashboard: -.inf", "3:16: DL109 schedules[0].dashboard: -.inf is not a finite number"),
    ("2024-01-01: 1", "3:5: DL109 schedules[0]: 2024-01-01 is a date to YAML"),
]


@pytest.mark.parametrize(("line", "finding"), NOT_PLAIN, ids=[line for line, _ in NOT_PLAIN])
def test_a_value_json_has_not_is_one_finding_at_its_line_naming_its_field(tmp_path, line, finding) -> None:
    """Each was a traceback (a tag, ``!!int abc``, an invalid date) or passed the check and was sent
    as something else (a date, bytes, NaN, ``yes`` as true, ``010`` as 8, ``1:30`` as 90)."""
    field = line.split(":")[0]
    rest = ("dashboard: 1", 'repeat: "0 8 * * 1"', "dest: {type: EmailDest, recipients: [a@x.org]}")
    text = "schedules:\n  - key: a\n    " + line + "\n" + "".join(
        f"    {row}\n" for row in rest if not row.startswith(field + ":"))
    (found,) = findings(tmp_path, text)  # the file is read no further: one finding
    assert found.startswith(finding) and found.endswith(("quote it for text", "plain values only")), found


def test_plain_values_are_read_as_json_has_them(tmp_path) -> None:
    text = """\
    schedules:
      - key: a
        title: "2024-01-01"
        dashboard: !!int 7
        repeat: !!str 0 8 * * 1
        paused: False
        dest: {type: EmailDest, recipients: [a@x.org], options: {include_header: TRUE, attachment_formats: ~}}
    """
    (found,) = load(write_to(tmp_path, text))
    assert found.problems == []
    (item,) = found.data["schedules"]
    assert item == {"key": "a", "title": "2024-01-01", "dashboard": 7, "repeat": "0 8 * * 1", "paused": False,
                    "dest": {"type": "EmailDest", "recipients": ["a@x.org"],
                             "options": {"include_header": True, "attachment_formats": None}}}
    (number,) = load(write_to(tmp_path, "x: [-1.5, 2.0e+3, -0, +3, 2.0e3]\n"))
    assert number.data == {"x": [-1.5, 2000.0, 0, 3, "2.0e3"]}  # YAML 1.1's float needs the exponent's sign


def test_the_cli_reports_a_value_json_has_not_as_a_finding_not_a_traceback(tmp_path, capsys) -> None:
    folder = tmp_path / "deliveries"
    findings(folder, "schedules:\n" + ONE.format(key="a").replace("dashboard: 1", "dashboard: !!int abc"))
    assert manage.main(["check", str(folder)]) == 1  # findings, as every other finding of a file
    said = capsys.readouterr().out
    assert f"{folder / 'sales.yml'}:3:16: DL109 schedules[0].dashboard: abc is not an integer" in said


def test_a_pipe_named_as_a_delivery_file_is_not_read(tmp_path) -> None:
    os.mkfifo(tmp_path / "sales.yml")  # no writer: an open that waited would hang the test
    (found,) = load(tmp_path / "sales.yml")
    assert found.problems == [(1, 1, "DL107", "not a regular file: not read")] and found.data is None


def write_to(folder: Path, text: str) -> Path:
    path = folder / "sales.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path
