"""Reading the delivery files: YAML, with the line and column of every value kept for messages.

The files are read as they are: nothing renders them (Airflow's Jinja never sees them), so the
service's own placeholders (``{{$today}}`` in a title) reach the service literally.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SUFFIXES = (".yml", ".yaml")
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
    error: tuple[int, int, str] | None = None
    """A file that is not YAML: where, and what the parser said."""

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
        return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    return [root]


def load(path: str | Path) -> list[DeliveryFile]:
    """Every delivery file under ``path``, parsed (a file that does not parse carries its error)."""
    return [load_file(p) for p in files_under(path)]


def load_file(path: Path) -> DeliveryFile:
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return DeliveryFile(str(path), None, error=(line, column, str(exc.problem or exc)))
    found = DeliveryFile(str(path), None)
    loader = yaml.SafeLoader("")  # turns each scalar into what YAML means (true a bool, 1 an int)
    try:
        found.data = _plain(node, (), found.positions, loader) if node is not None else None
    finally:
        loader.dispose()
    return found


def _plain(node: yaml.Node, where: Where, positions: dict[Where, tuple[int, int]], loader: yaml.SafeLoader) -> Any:
    positions[where] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.tag}>"
            mapping[key] = _plain(value_node, (*where, key), positions, loader)
            positions[(*where, key, KEY)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, (*where, i), positions, loader) for i, item in enumerate(node.value)]
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
