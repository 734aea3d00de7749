"""The AML syntax tree. Every node keeps the character offset it starts at, and its 1-based line and
column once :func:`locate` has run (the parser runs it on what it returns).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol


class _Positions(Protocol):
    def position(self, offset: int) -> tuple[int, int]: ...


@dataclass
class Node:
    """Base of every tree node: ``line`` and ``column`` are filled in by :func:`locate`."""

    line: int = field(default=0, init=False, compare=False, repr=False)
    column: int = field(default=0, init=False, compare=False, repr=False)


def locate(tree: Any, source: _Positions) -> None:
    """Set ``line`` and ``column`` of every node in ``tree`` from its ``offset``."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, Node):
            offset = getattr(item, "offset", None)
            if isinstance(offset, int):
                item.line, item.column = source.position(offset)
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item) if f.init)


@dataclass
class Str(Node):
    """A string literal, single- or double-quoted."""

    offset: int
    value: str


@dataclass
class Num(Node):
    """A number literal."""

    offset: int
    value: int | float


@dataclass
class Bool(Node):
    """``true`` or ``false``."""

    offset: int
    value: bool


@dataclass
class Null(Node):
    """``null``."""

    offset: int


@dataclass
class Ref(Node):
    """A name or dotted name, such as ``ecommerce`` or ``orders.id``."""

    offset: int
    name: str


@dataclass
class Call(Node):
    """A function call such as ``r(orders.id)``."""

    offset: int
    name: str
    args: list[Value]


@dataclass
class ListV(Node):
    """A list ``[a, b, ...]``."""

    offset: int
    items: list[Value]


@dataclass
class Heredoc(Node):
    """A ``@tag ... ;;`` block; ``text`` is everything between the tag and ``;;``."""

    offset: int
    tag: str
    text: str
    text_offset: int


@dataclass
class Expr(Node):
    """An operator expression; kept whole, never evaluated."""

    offset: int
    op: str
    left: Value
    right: Value | None


@dataclass
class Body(Node):
    """The entries between ``{`` and ``}``."""

    offset: int
    entries: list[Entry] = field(default_factory=list)
    end: int = 0

    def all(self, key: str) -> list[Entry]:
        """Every entry with this key, in order."""
        return [e for e in self.entries if e.key == key]

    def first(self, key: str) -> Entry | None:
        """The first entry with this key, or None."""
        return next((e for e in self.entries if e.key == key), None)


@dataclass
class Obj(Node):
    """A block value: ``{ ... }``, ``TypeName { ... }`` or ``TypeName name { ... }``."""

    offset: int
    type_name: str | None
    name: str | None
    name_offset: int
    body: Body


@dataclass
class Entry(Node):
    """One entry of a body.

    ``key: value``, ``key name: value``, ``key = value``, ``key { ... }`` and ``key name { ... }``
    all become an Entry; the block forms carry an :class:`Obj` value and ``is_block`` set.
    """

    offset: int
    key: str
    name: str | None
    name_offset: int
    value: Value | None
    is_block: bool = False


Value = Str | Num | Bool | Null | Ref | Call | ListV | Heredoc | Expr | Obj

DYNAMIC = (Ref, Call, Expr)
"""Values only known when the project is compiled (constants, functions); checks leave them alone."""


def describe(value: Value | None) -> str:
    """A short human name of a value's kind, for messages."""
    names = {
        Str: "a string", Num: "a number", Bool: "a boolean", Null: "null", Ref: "a name",
        Call: "a function call", ListV: "a list", Heredoc: "a heredoc block", Expr: "an expression",
        Obj: "a block",
    }
    return "nothing" if value is None else names[type(value)]
