"""The body of a ``@vgl``/``@vg`` template: JSON with ``@{...}`` placeholders and comments.

:func:`parse_template` builds a tree that keeps the file offset of every value and key, accepts
``//`` and ``/* */`` comments and trailing commas (both appear in the vendor's own examples) and
is otherwise strict JSON. A placeholder standing alone is a value of its own; one inside a string
stays in the string's text and is listed in :attr:`Template.placeholders` too. Nodes keep their
file offset, and their line and column when the file's source is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from analytics_provider.aml.diagnostics import Source
from analytics_provider.aml.limits import LIMIT_CODE, MAX_DEPTH, depth_message, read_number
from analytics_provider.aml.nodes import Node, locate

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_FIELD = re.compile(r"fields\.([A-Za-z_][A-Za-z0-9_]*)\.(name|type|format)")
_OPTION = re.compile(r"options\.([A-Za-z_][A-Za-z0-9_]*)\.value")
_SCHEMA_URL = re.compile(r"/schema/(vega-lite|vega)/v([0-9]{1,9})(?:\.([0-9]{1,9}))?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class TemplateSyntaxError(Exception):
    """Invalid JSON at a file offset; ``code`` is CC402, or CC005 for a limit of the linter (a number
    it cannot read, nesting too deep)."""

    def __init__(self, offset: int, message: str, code: str = "CC402") -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message
        self.code = code


@dataclass
class Placeholder(Node):
    """One ``@{...}``; ``kind`` is values, field, option or invalid."""

    offset: int
    text: str
    kind: str
    name: str = ""
    attr: str = ""


def read_placeholder(offset: int, inner: str) -> Placeholder:
    """Classify the text between ``@{`` and ``}``."""
    text = inner.strip()
    if text == "values":
        return Placeholder(offset, inner, "values")
    m = _FIELD.fullmatch(text)
    if m:
        return Placeholder(offset, inner, "field", m.group(1), m.group(2))
    m = _OPTION.fullmatch(text)
    if m:
        return Placeholder(offset, inner, "option", m.group(1), "value")
    return Placeholder(offset, inner, "invalid")


@dataclass
class JString(Node):
    """A string; ``value`` keeps any placeholders in it as written."""

    offset: int
    value: str


@dataclass
class JScalar(Node):
    """A number, boolean or null."""

    offset: int
    value: int | float | bool | None


@dataclass
class JPlaceholder(Node):
    """A placeholder standing alone as a value."""

    offset: int
    ref: Placeholder


@dataclass
class JArray(Node):
    """An array."""

    offset: int
    items: list[JNode] = field(default_factory=list)


@dataclass
class JObject(Node):
    """An object; ``keys`` and ``values`` are parallel lists (duplicates kept)."""

    offset: int
    keys: list[JString] = field(default_factory=list)
    values: list[JNode] = field(default_factory=list)

    def get(self, key: str) -> JNode | None:
        """The value of the last property named ``key``, or None."""
        for k, v in zip(reversed(self.keys), reversed(self.values), strict=True):
            if k.value == key:
                return v
        return None

    def key_node(self, key: str) -> JString | None:
        """The key node of the last property named ``key``, or None."""
        return next((k for k in reversed(self.keys) if k.value == key), None)


JNode = JString | JScalar | JPlaceholder | JArray | JObject


@dataclass(frozen=True)
class Engine:
    """What judges a template: ``kind`` is 'vega-lite' or 'vega'; ``version`` the (major, minor) its
    ``$schema`` declares (minor None when only the major is given), None when it declares none."""

    kind: str
    version: tuple[int, int | None] | None = None

    @property
    def name(self) -> str:
        """'Vega-Lite' or 'Vega'."""
        return "Vega-Lite" if self.kind == "vega-lite" else "Vega"


@dataclass
class Template:
    """A parsed template: its engine tag, root value and every placeholder in order."""

    tag: str
    root: JNode
    placeholders: list[Placeholder]

    @property
    def schema_node(self) -> JString | None:
        """The ``$schema`` string, when the template has one."""
        node = self.root.get("$schema") if isinstance(self.root, JObject) else None
        return node if isinstance(node, JString) else None

    @property
    def engine(self) -> Engine:
        """The engine the ``$schema`` names (the service reads it: a Vega spec in a @vgl block renders
        as Vega), else the one the tag names."""
        node = self.schema_node
        m = _SCHEMA_URL.search(node.value) if node is not None else None
        if m is None:
            return Engine("vega-lite" if self.tag == "vgl" else "vega")
        minor = int(m.group(3)) if m.group(3) else None
        return Engine(m.group(1), (int(m.group(2)), minor))


def parse_template(tag: str, text: str, base: int, source: Source | None = None) -> Template:
    """Parse heredoc ``text`` whose first character is at file offset ``base``; with the file's
    ``source``, every node and placeholder gets its line and column too."""
    reader = _Reader(text, base)
    root = reader.value()
    reader.skip()
    if reader.i < len(text):
        raise reader.error("unexpected text after the template's closing brace")
    if source is not None:
        locate([root, reader.placeholders], source)
    return Template(tag, root, reader.placeholders)


class _Reader:
    def __init__(self, text: str, base: int) -> None:
        self.text, self.base, self.i = text, base, 0
        self.placeholders: list[Placeholder] = []
        self.depth = 0

    def error(self, message: str, at: int | None = None) -> TemplateSyntaxError:
        return TemplateSyntaxError(self.base + (self.i if at is None else at), message)

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.i < n:
            if text[self.i].isspace():
                self.i += 1
            elif text.startswith("//", self.i):
                nl = text.find("\n", self.i)
                self.i = n if nl < 0 else nl + 1
            elif text.startswith("/*", self.i):
                close = text.find("*/", self.i + 2)
                if close < 0:
                    raise self.error("comment is not closed: end it with */")
                self.i = close + 2
            else:
                return

    def value(self) -> JNode:
        self.skip()
        if self.i >= len(self.text):
            raise self.error("expected a value, found the end of the template")
        ch, start = self.text[self.i], self.i
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.array()
        if ch == '"':
            return self.string()
        if ch == "'":
            raise self.error("strings must use double quotes in JSON")
        if self.text.startswith("@{", self.i):
            return JPlaceholder(self.base + start, self.placeholder())
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.i) and not self._word_continues(len(word)):
                self.i += len(word)
                return JScalar(self.base + start, val)
        m = _NUMBER.match(self.text, self.i)
        if m and not self._word_continues(m.end() - self.i):
            number, problem = read_number(m.group())
            if number is None:
                raise TemplateSyntaxError(self.base + start, problem, LIMIT_CODE)
            self.i = m.end()
            return JScalar(self.base + start, number)
        found = re.match(r"[^\s,:\]\}]+", self.text[self.i:])
        shown = found.group() if found else ch
        raise self.error(f"'{shown[:30]}' is not a JSON value (strings need double quotes)")

    def _word_continues(self, length: int) -> bool:
        j = self.i + length
        return j < len(self.text) and (self.text[j].isalnum() or self.text[j] in "_.$")

    def placeholder(self) -> Placeholder:
        start = self.i
        close = self.text.find("}", start + 2)
        if close < 0 or "\n" in self.text[start:close]:
            raise self.error("placeholder is not closed: end it with }")
        ref = read_placeholder(self.base + start, self.text[start + 2:close])
        self.placeholders.append(ref)
        self.i = close + 1
        return ref

    def string(self) -> JString:
        start = self.i
        out: list[str] = []
        self.i += 1
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                return JString(self.base + start, "".join(out))
            if ch == "\n":
                break
            if ord(ch) < 0x20:
                raise self.error(f"control character U+{ord(ch):04X} in a string: write it as an escape such as "
                                 "\\t, or remove it")
            if "\ud800" <= ch <= "\udfff":
                raise self.error(f"{_surrogate(ch)}: the file is not valid text here")
            if ch == "\\":
                out.append(self._escape())
                continue
            if text.startswith("@{", self.i):
                close = text.find("}", self.i + 2)
                if close >= 0 and '"' not in text[self.i:close]:
                    self.placeholders.append(read_placeholder(self.base + self.i, text[self.i + 2:close]))
            out.append(ch)
            self.i += 1
        raise self.error("string is not closed on its line: end it with \"", start)

    def _escape(self) -> str:
        nxt = self.text[self.i + 1:self.i + 2]
        if nxt in _ESCAPES:
            self.i += 2
            return _ESCAPES[nxt]
        code = self._hex(self.i)
        if nxt == "u" and code is not None:
            if 0xD800 <= code <= 0xDBFF and self.text.startswith("\\u", self.i + 6):
                low = self._hex(self.i + 6)
                if low is not None and 0xDC00 <= low <= 0xDFFF:  # a pair written as two escapes
                    self.i += 12
                    return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
            if 0xD800 <= code <= 0xDFFF:
                raise self.error(f"{_surrogate(chr(code))}: write the character itself, or both halves of the "
                                 "pair (\\ud83d\\ude00)")
            self.i += 6
            return chr(code)
        raise self.error(f"invalid escape '\\{nxt}' in string")

    def _hex(self, at: int) -> int | None:
        """The code of a ``\\uXXXX`` escape at ``at``; None when it is not one."""
        digits = self.text[at + 2:at + 6]
        if self.text.startswith("\\u", at) and re.fullmatch(r"[0-9a-fA-F]{4}", digits):
            return int(digits, 16)
        return None

    def _items(self, close: str, what: str, read: Callable[[], None]) -> None:
        self.i += 1
        self.skip()
        if self.text.startswith(close, self.i):
            self.i += 1
            return
        while True:
            read()
            self.skip()
            if self.text.startswith(close, self.i):
                self.i += 1
                return
            if not self.text.startswith(",", self.i):
                found = self.text[self.i:self.i + 1] or "the end of the template"
                raise self.error(f"expected ',' or '{close}' after {what}, found {found!r}")
            self.i += 1
            self.skip()
            if self.text.startswith(close, self.i):  # trailing comma
                self.i += 1
                return

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TemplateSyntaxError(self.base + self.i, depth_message("the template"), LIMIT_CODE)

    def array(self) -> JArray:
        node = JArray(self.base + self.i)
        self._enter()
        self._items("]", "an array item", lambda: node.items.append(self.value()))
        self.depth -= 1
        return node

    def obj(self) -> JObject:
        node = JObject(self.base + self.i)

        def member() -> None:
            self.skip()
            if self.text.startswith("@{", self.i):
                raise self.error("a placeholder used as a property name must be inside double quotes")
            if not self.text.startswith('"', self.i):
                raise self.error("property names must be double-quoted strings")
            node.keys.append(self.string())
            self.skip()
            if not self.text.startswith(":", self.i):
                raise self.error(f"expected ':' after property name \"{node.keys[-1].value}\"")
            self.i += 1
            node.values.append(self.value())

        self._enter()
        self._items("}", "a property", member)
        self.depth -= 1
        return node


def _surrogate(ch: str) -> str:
    return f"U+{ord(ch):04X} is half of a surrogate pair, not a character"


def walk(node: JNode) -> Iterator[JNode]:
    """Every node of a tree, depth first, the root included."""
    yield node
    if isinstance(node, JObject):
        for value in node.values:
            yield from walk(value)
    elif isinstance(node, JArray):
        for item in node.items:
            yield from walk(item)


def to_python(node: JNode, fill: Callable[[Placeholder], Any]) -> Any:
    """Plain JSON data, each standalone placeholder replaced by ``fill(placeholder)``."""
    if isinstance(node, JObject):
        return {k.value: to_python(v, fill) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, JArray):
        return [to_python(item, fill) for item in node.items]
    if isinstance(node, JPlaceholder):
        return fill(node.ref)
    return node.value
