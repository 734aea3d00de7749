"""Reading the delivery files: YAML, with the line and column of every value kept for messages.

The files are read as they are: nothing renders them (Airflow's Jinja never sees them), so the
service's own placeholders (``{{$today}}`` in a title) reach the service literally. They are read
strictly, since they are read when a DAG is parsed and what YAML would do silently decides what
is deleted: a key given twice in one mapping (YAML keeps the last), anchors and aliases (whose
expansion can be exponential, or recursive), merge keys and tags are findings at their line, and
a file larger than :data:`MAX_FILE_BYTES`, or nested deeper than :data:`MAX_DEPTH`, is not built.
Only what JSON has is read (:func:`_scalar`): strings, integers and finite numbers as JSON writes
them, ``true``/``false`` and ``null``; a value YAML would make something else (a date, bytes, a
set, ``.nan``, ``yes``, ``0o17``, ``1:30``) is a finding (DL109) at its line, naming its field,
and the file is not read further; so is a tag (DL106).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SUFFIXES = (".yml", ".yaml")
"""Compared without case: ``sales.YML`` is read."""
MAX_FILE_BYTES = 1_000_000
"""A delivery file larger than this is a finding (DL107), never parsed."""
MAX_DEPTH = 32
"""How deep a delivery file's mappings and lists may nest (a schedule's deepest field is about 6
levels); deeper is a finding (DL108), never built (building recurses)."""
STANDARD_TAG = "tag:yaml.org,2002:"
MERGE_TAG = STANDARD_TAG + "merge"
PLAIN_TAGS = frozenset(STANDARD_TAG + name for name in ("str", "int", "float", "bool", "null", "map", "seq"))
"""The tags a file may write (``!!str``...): JSON's kinds of value. Any other (``!!binary``,
``!!timestamp``, ``!!set``, ``!!python/name:...``) is a finding (DL106)."""
IMPLICIT_TAGS = frozenset(STANDARD_TAG + name for name in ("timestamp", "value"))
"""What YAML 1.1 makes of some plain scalars without a tag (``2024-01-01``, ``=``): a finding (DL109)."""
INTEGER = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
NUMBER = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?\Z")
"""Integers and numbers as JSON writes them (a sign, no leading zero, no ``_``, no base)."""
Problem = tuple[int, int, str, str]
"""A finding of the reading: line, column, code, message."""
Where = tuple[Any, ...]
"""The path of a value in a file: ``("schedules", 0, "dest", "type")``; ending in :data:`KEY`,
the path of the key itself (``("schedules", 0, "dest", KEY)`` is where ``dest:`` is written)."""
KEY = "<key>"


@dataclass
class DeliveryFile:
    """One file: its data, and where each value of it stands (1-based line and column)."""

    path: str
    data: Any
    positions: dict[Where, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    """What reading found wrong (not YAML, a key given twice, an alias...); with some, ``data``
    is None: the file was not read further."""

    def position(self, where: Where) -> tuple[int, int]:
        """The position of ``where``, or of its closest parent that has one."""
        while where not in self.positions and where:
            where = where[:-1]
        return self.positions.get(where, (1, 1))


def files_under(path: str | Path) -> list[Path]:
    """The delivery files a path names: the file itself, or a folder's ``*.yml``/``*.yaml`` files
    (sub-folders included), sorted."""
    root = Path(path)
    if root.is_dir():
        return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    return [root]


def load(path: str | Path) -> list[DeliveryFile]:
    """Every delivery file under ``path``, parsed (a file that does not parse carries its error)."""
    return [load_file(p) for p in files_under(path)]


def load_file(path: Path) -> DeliveryFile:
    found = DeliveryFile(str(path), None)
    if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe would be waited on, a device read without end
        found.problems.append((1, 1, "DL107", "not a regular file: not read"))
        return found
    with path.open("rb") as stream:
        raw = stream.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        found.problems.append((1, 1, "DL107", f"the file is larger than {MAX_FILE_BYTES:,} bytes: not read"))
        return found
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        found.problems.append((line, 1, "DL100", f"not YAML: not UTF-8 ({exc.reason} at byte {exc.start})"))
        return found
    try:
        found.problems += _unread_constructs(text)
        node = None if found.problems else yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        found.problems.append((line, column, "DL100", f"not YAML: {exc.problem or exc}"))
        return found
    if node is None:
        return found
    data = _plain(node, (), found)
    found.data = None if any(code in ("DL106", "DL109") for _, _, code, _ in found.problems) else data
    return found


def _unread_constructs(text: str) -> list[Problem]:
    """Anchors, aliases and nesting, found in the parser's events (nothing is built, nothing expanded)."""
    problems: list[Problem] = []
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line, column = event.start_mark.line + 1, event.start_mark.column + 1
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                return [*problems, (line, column, "DL108", f"nested deeper than {MAX_DEPTH} levels: not read")]
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
            problems.append((line, column, "DL104",
                             f"anchors and aliases are not read ({sign}{anchor}): write the values out"))
    return problems


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(node: yaml.Node, where: Where, file: DeliveryFile) -> Any:
    positions = file.positions
    positions[where] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if node.tag not in PLAIN_TAGS and node.tag not in IMPLICIT_TAGS:
        shown = "!!" + node.tag.removeprefix(STANDARD_TAG) if node.tag.startswith(STANDARD_TAG) else node.tag
        file.problems.append((node.start_mark.line + 1, node.start_mark.column + 1, "DL106",
                              f"{dotted(where)}: the tag {_short(shown)} is not read: plain values only"))
        return None
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            if key_node.tag == MERGE_TAG:
                file.problems.append((line, column, "DL105", "merge keys (<<) are not read: write the fields out"))
                continue
            key = _scalar(key_node, (*where, KEY), file) if isinstance(key_node, yaml.ScalarNode) \
                else f"<{key_node.tag}>"
            if key in mapping:
                first = positions[(*where, key, KEY)][0]
                file.problems.append((line, column, "DL103",
                                      f"{key!r} is given twice in one mapping: at line {first} and here"))
                continue
            mapping[key] = _plain(value_node, (*where, key), file)
            positions[(*where, key, KEY)] = (line, column)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, (*where, i), file) for i, item in enumerate(node.value)]
    return _scalar(node, where, file)


def _scalar(node: yaml.Node, where: Where, file: DeliveryFile) -> Any:
    """The JSON value a scalar stands for (its tag as YAML resolved it, or as written); a finding
    (DL109), and None, for any other: YAML 1.1 reads ``2024-01-01`` as a date, ``yes`` as true,
    ``010`` as 8 and ``1:30`` as 90, and ``!!int abc`` ends in a traceback."""
    text, tag = str(node.value), node.tag.removeprefix(STANDARD_TAG)
    if tag == "str":
        return text
    if tag == "null" and text in ("", "~", "null", "Null", "NULL"):
        return None
    if tag == "bool" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if tag == "int" and INTEGER.match(text):
        return int(text)
    if tag == "float" and NUMBER.match(text) and math.isfinite(float(text)):
        return float(text)
    if tag == "bool":
        why = "a boolean to YAML 1.1: write true or false, or quote it for text"
    elif tag in ("int", "float"):
        kind = "an integer" if tag == "int" else "a finite number"
        why = (f"not {kind} as JSON writes one (no leading zero, base, '_' or ':'; no .nan or .inf): write it so, "
               "or quote it for text")
    else:
        why = f"{'a date' if tag == 'timestamp' else _short(tag)} to YAML, not a plain value: quote it for text"
    file.problems.append((node.start_mark.line + 1, node.start_mark.column + 1, "DL109",
                          f"{dotted(where)}: {_short(text)} is {why}"))
    return None


def dotted(where: Where) -> str:
    """A value's path as messages name it: ``schedules[0].dest.type``."""
    text = ""
    for part in where:
        if part != KEY:
            text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(the file)"


def walk(data: Any, where: Where = ()) -> Iterator[tuple[Where, Any]]:
    """Every value of ``data`` with its path, parents first."""
    yield where, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from walk(value, (*where, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from walk(value, (*where, index))
