"""Delivery files are read strictly (issue 32): what YAML would drop, expand or refuse with a
traceback is a finding at its file and line; a file is bounded in size; a suffix in capitals is read."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
    assert findings(tmp_path, tagged) == ["3:16: DL106 the tag !env is not read: plain values only"]


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
