"""AML tokens: names, strings, numbers, punctuation and ``@tag ... ;;`` heredocs.

The lexer is lazy, so a parser can stop at the end of a block without reading the rest of a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_DIGITS = "0123456789"
_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "=>")
_PUNCT = set("{}[]():,;=.|+-*/<>!&?%")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
JSON_TAGS = ("vgl", "vg")
"""Heredoc tags whose body is JSON: their end ``;;`` is searched outside strings and comments."""


class AmlSyntaxError(Exception):
    """A syntax error at a character offset; ``code`` is CC001, or CC005 for a limit of the linter."""

    def __init__(self, offset: int, message: str, code: str = "CC001") -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Token:
    """One token. ``kind`` is name, string, number, punct, heredoc or eof."""

    kind: str
    value: str
    offset: int
    end: int
    text_offset: int = 0
    """For heredocs: where the body text starts."""
    body: str = ""
    """For heredocs: the body text."""


def tokens(text: str, start: int = 0) -> Iterator[Token]:
    """Yield the tokens of ``text`` from ``start`` on, ending with one eof token."""
    i, n = start, len(text)
    while True:
        i = _skip_space(text, i)
        if i >= n:
            yield Token("eof", "", n, n)
            return
        tok = _token(text, i)
        yield tok
        i = tok.end


def _token(text: str, i: int) -> Token:
    ch = text[i]
    if ch in "'\"":
        value, end = _string(text, i)
        return Token("string", value, i, end)
    m = _NUMBER.match(text, i) or _NAME.match(text, i)
    if m is not None:
        return Token("number" if ch in _DIGITS else "name", m.group(), i, m.end())
    if ch == "@":
        return _heredoc(text, i)
    if text.startswith(_OPERATORS, i):
        return Token("punct", text[i:i + 2], i, i + 2)
    if ch in _PUNCT:
        return Token("punct", ch, i, i + 1)
    if ch.isalnum():
        raise AmlSyntaxError(i, f"unexpected character {ch!r}: names and numbers are written in ASCII letters, "
                                "digits and _ (write other text in a string)")
    raise AmlSyntaxError(i, f"unexpected character {ch!r}")


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl + 1
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                raise AmlSyntaxError(i, "comment is not closed: end it with */")
            i = close + 2
        else:
            break
    return i


def _string(text: str, start: int) -> tuple[str, int]:
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\n":
            break
        if ch == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        out.append(ch)
        i += 1
    raise AmlSyntaxError(start, f"string is not closed: end it with {quote} on the same line")


def _heredoc(text: str, start: int) -> Token:
    m = _NAME.match(text, start + 1)
    if m is None:
        raise AmlSyntaxError(start, "'@' must start a heredoc such as @vgl { ... };;")
    tag, body_start = m.group(), m.end()
    close = _json_end(text, body_start) if tag in JSON_TAGS else text.find(";;", body_start)
    if close < 0:
        raise AmlSyntaxError(start, f"@{tag} block is not closed: end it with ;;")
    return Token("heredoc", tag, start, close + 2, body_start, text[body_start:close])


def _json_end(text: str, i: int) -> int:
    """Offset of the ``;;`` that ends a JSON heredoc, skipping strings and comments; -1 if none."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < n and text[i] not in '"\n':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl + 1
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
        elif text.startswith(";;", i):
            return i
        else:
            i += 1
    return -1
