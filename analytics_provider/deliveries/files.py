"""Reading the delivery files: YAML, with the line and column of every value kept for messages.

The files are read as they are: nothing renders them (Airflow's Jinja never sees them), so the
service's own placeholders (``{{$today}}`` in a title) reach the service literally. They are read
strictly, since they are read when a DAG is parsed and what YAML would do silently decides what
is deleted: a key given twice in one mapping (YAML keeps the last), anchors and aliases (whose
expansion can be exponential, or recursive), merge keys and tags are findings at their line, and
a file larger than :data:`MAX_FILE_BYTES`, or nested deeper than :data:`MAX_DEPTH`, is not built.
"""

from __future__ import annotations

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
    loader = yaml.SafeLoader("")  # turns each scalar into what YAML means (true a bool, 1 an int)
    try:
        found.data = _plain(node, (), found, loader)
    finally:
        loader.dispose()
    return found


def _unread_constructs(text: str) -> list[Problem]:
    """Anchors, aliases and tags, found in the parser's events (nothing is built, nothing expanded)."""
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
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and not tag.startswith(STANDARD_TAG):
            problems.append((line, column, "DL106", f"the tag {tag} is not read: plain values only"))
    return problems


def _plain(node: yaml.Node, where: Where, file: DeliveryFile, loader: yaml.SafeLoader) -> Any:
    positions = file.positions
    positions[where] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            if key_node.tag == MERGE_TAG:
                file.problems.append((line, column, "DL105", "merge keys (<<) are not read: write the fields out"))
                continue
            key = loader.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.tag}>"
            if key in mapping:
                first = positions[(*where, key, KEY)][0]
                file.problems.append((line, column, "DL103",
                                      f"{key!r} is given twice in one mapping: at line {first} and here"))
                continue
            mapping[key] = _plain(value_node, (*where, key), file, loader)
            positions[(*where, key, KEY)] = (line, column)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, (*where, i), file, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def walk(data: Any, where: Where = ()) -> Iterator[tuple[Where, Any]]:
    """Every value of ``data`` with its path, parents first."""
    yield where, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from walk(value, (*where, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from walk(value, (*where, index))
