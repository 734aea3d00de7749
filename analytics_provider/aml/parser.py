"""A recursive-descent parser for the AML subset custom charts are written in.

It reads any body of ``key: value`` / ``key name { ... }`` entries, values (strings, numbers,
booleans, lists, names, calls, typed blocks, heredocs, operator expressions), and keeps offsets.
:func:`scan_objects` finds ``CustomChart``/``CustomChartDef`` blocks in files the full parser
cannot read (AML it does not model, such as functions), so those files can still be linted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from analytics_provider.aml.diagnostics import Source
from analytics_provider.aml.lexer import AmlSyntaxError, Token, tokens
from analytics_provider.aml.limits import LIMIT_CODE, MAX_DEPTH, MAX_TERMS, depth_message, read_number
from analytics_provider.aml.nodes import (
    Body,
    Bool,
    Call,
    Entry,
    Expr,
    Heredoc,
    ListV,
    Null,
    Num,
    Obj,
    Ref,
    Str,
    Value,
    locate,
)

_BINARY = {"+", "-", "*", "/", "%", "|", "&", "==", "!=", "<", ">", "<=", ">=", "&&", "||"}
_SEPARATORS = {";", ","}
CHART_TYPES = ("CustomChartDef", "CustomChart")


def describe_token(tok: Token) -> str:
    """How a token is named in messages."""
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "string":
        return "a string"
    if tok.kind == "number":
        return f"number {tok.value}"
    if tok.kind == "heredoc":
        return f"@{tok.value} block"
    return f"'{tok.value}'"


class Parser:
    """Parses from an offset of a text; raises :class:`AmlSyntaxError` (code CC005 past a limit of
    :mod:`~analytics_provider.aml.limits`)."""

    def __init__(self, text: str, start: int = 0) -> None:
        self.text = text
        self._tokens: Iterator[Token] = tokens(text, start)
        self._buffer: list[Token] = []
        self.end = start
        """Offset after the last token consumed."""
        self._depth = 0

    def _open(self, tok: Token) -> None:
        """Enter the level ``tok`` (a bracket) opens; :meth:`_close` leaves it."""
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise AmlSyntaxError(tok.offset, depth_message("AML"), LIMIT_CODE)

    def _close(self) -> None:
        self._depth -= 1

    # -- token access
    def peek(self, ahead: int = 0) -> Token:
        """The token ``ahead`` positions on, without consuming it."""
        while len(self._buffer) <= ahead:
            self._buffer.append(next(self._tokens))
        return self._buffer[ahead]

    def take(self) -> Token:
        """Consume and return the next token."""
        tok = self.peek()
        if tok.kind != "eof":
            self._buffer.pop(0)
            self.end = tok.end
        return tok

    def at(self, value: str, ahead: int = 0) -> bool:
        """Whether the token ``ahead`` positions on is this punctuation."""
        tok = self.peek(ahead)
        return tok.kind == "punct" and tok.value == value

    def expect(self, value: str, context: str) -> Token:
        """Consume punctuation ``value`` or fail with a message naming ``context``."""
        tok = self.peek()
        if tok.kind != "punct" or tok.value != value:
            raise AmlSyntaxError(tok.offset, f"expected '{value}' {context}, found {describe_token(tok)}")
        return self.take()

    # -- structure
    def parse_file(self) -> Body:
        """The whole text as a body of top-level entries."""
        body = Body(self.peek().offset)
        body.entries = self._entries(closing=None)
        body.end = self.peek().offset
        return body

    def parse_block(self) -> Body:
        """``{ entries }``."""
        open_tok = self.expect("{", "to open a block")
        self._open(open_tok)
        body = Body(open_tok.offset)
        body.entries = self._entries(closing=open_tok)
        body.end = self.take().end
        self._close()
        return body

    def _entries(self, closing: Token | None) -> list[Entry]:
        entries: list[Entry] = []
        while True:
            tok = self.peek()
            if tok.kind == "punct" and tok.value in _SEPARATORS:
                self.take()
            elif tok.kind == "eof":
                if closing is not None:
                    raise AmlSyntaxError(closing.offset, "this '{' is never closed: add the matching '}'")
                return entries
            elif closing is not None and self.at("}"):
                return entries
            else:
                entries.append(self._entry())

    def _entry(self) -> Entry:
        key = self.take()
        if key.kind != "name":
            raise AmlSyntaxError(key.offset, f"expected a property name, found {describe_token(key)}")
        name: str | None = None
        name_offset = key.offset
        if self.peek().kind == "name":
            name_tok = self.take()
            name, name_offset = name_tok.value, name_tok.offset
        if self.at("("):
            self._skip_parens()
        tok = self.peek()
        if tok.kind == "punct" and tok.value in (":", "="):
            self.take()
            return Entry(key.offset, key.value, name, name_offset, self.parse_value())
        if tok.kind == "punct" and tok.value == "{":
            body = self.parse_block()
            block = Obj(body.offset, None, None, body.offset, body)
            return Entry(key.offset, key.value, name, name_offset, block, True)
        what = f"'{key.value} {name}'" if name else f"'{key.value}'"
        raise AmlSyntaxError(tok.offset, f"expected ':' or '{{' after {what}, found {describe_token(tok)}")

    def _skip_parens(self) -> None:
        open_tok, depth = self.take(), 0
        while True:
            tok = self.take()
            if tok.kind == "eof":
                raise AmlSyntaxError(open_tok.offset, "this '(' is never closed: add the matching ')'")
            if tok.kind == "punct" and tok.value == "(":
                depth += 1
            elif tok.kind == "punct" and tok.value == ")":
                if depth == 0:
                    return
                depth -= 1

    # -- values
    def parse_value(self) -> Value:
        """A value, with any binary operators (at most :data:`MAX_TERMS` terms)."""
        left = self._unary()
        terms = 1
        while self.peek().kind == "punct" and self.peek().value in _BINARY:
            op = self.take().value
            terms += 1
            if terms > MAX_TERMS:
                raise AmlSyntaxError(self.peek().offset, f"an expression of more than {MAX_TERMS} terms: the "
                                                         f"linter reads at most {MAX_TERMS}; split it", LIMIT_CODE)
            left = Expr(_offset(left), op, left, self._unary())
        return left

    def _unary(self) -> Value:
        ops: list[Token] = []
        while self.at("-") or self.at("!"):
            ops.append(self.take())
        value = self._primary()
        for op in reversed(ops):
            if op.value == "-" and isinstance(value, Num):
                value = Num(op.offset, -value.value)
            else:
                value = Expr(op.offset, op.value, value, None)
        return value

    def _primary(self) -> Value:
        tok = self.peek()
        if tok.kind == "string":
            self.take()
            return Str(tok.offset, tok.value)
        if tok.kind == "number":
            self.take()
            number, problem = read_number(tok.value)
            if number is None:
                raise AmlSyntaxError(tok.offset, problem, LIMIT_CODE)
            return Num(tok.offset, number)
        if tok.kind == "heredoc":
            self.take()
            return Heredoc(tok.offset, tok.value, tok.body, tok.text_offset)
        if self.at("["):
            return self._list()
        if self.at("{"):
            body = self.parse_block()
            return Obj(body.offset, None, None, body.offset, body)
        if self.at("("):
            self._open(self.take())
            inner = self.parse_value()
            self.expect(")", "to close the parenthesis")
            self._close()
            return inner
        if tok.kind == "name":
            return self._named()
        raise AmlSyntaxError(tok.offset, f"expected a value, found {describe_token(tok)}")

    def _list(self) -> ListV:
        open_tok = self.take()
        self._open(open_tok)
        items: list[Value] = []
        while not self.at("]"):
            if self.peek().kind == "eof":
                raise AmlSyntaxError(open_tok.offset, "this '[' is never closed: add the matching ']'")
            items.append(self.parse_value())
            if not self.at("]"):
                self.expect(",", "between list items")
        self.take()
        self._close()
        return ListV(open_tok.offset, items)

    def _named(self) -> Value:
        tok = self.take()
        if tok.value in ("true", "false"):
            return Bool(tok.offset, tok.value == "true")
        if tok.value == "null":
            return Null(tok.offset)
        name = tok.value
        while self.at(".") and self.peek(1).kind == "name":
            self.take()
            name += "." + self.take().value
        if self.at("("):
            return self._call(tok.offset, name)
        if name[0].isupper() and "." not in name:
            if self.at("{"):
                body = self.parse_block()
                return Obj(tok.offset, name, None, tok.offset, body)
            after = self.peek()
            if after.kind == "name" and self.at("{", 1) and "\n" not in self.text[tok.end:self.peek(1).offset]:
                self.take()
                body = self.parse_block()
                return Obj(tok.offset, name, after.value, after.offset, body)
        return Ref(tok.offset, name)

    def _call(self, offset: int, name: str) -> Call:
        open_tok = self.take()
        self._open(open_tok)
        args: list[Value] = []
        while not self.at(")"):
            if self.peek().kind == "eof":
                raise AmlSyntaxError(open_tok.offset, "this '(' is never closed: add the matching ')'")
            if self.peek().kind == "name" and self.at(":", 1):
                self.take()
                self.take()
            args.append(self.parse_value())
            if not self.at(")"):
                self.expect(",", "between arguments")
        self.take()
        self._close()
        return Call(offset, name, args)


def _offset(value: Value) -> int:
    return value.offset


def parse(text: str) -> Body:
    """Parse a whole file, every node located; raises :class:`AmlSyntaxError`."""
    body = Parser(text).parse_file()
    locate(body, Source(text, ""))
    return body


_CHART_WORD = re.compile(r"\b(CustomChartDef|CustomChart)\b")


def scan_objects(text: str) -> Iterator[Obj | AmlSyntaxError]:
    """Each ``CustomChart { ... }`` / ``CustomChartDef [name] { ... }`` block found by its keyword.

    A block that fails to parse is yielded as its :class:`AmlSyntaxError`; a keyword not
    followed by a block (in prose or comments) is skipped.
    """
    pos, source = 0, Source(text, "")
    while True:
        match = _CHART_WORD.search(text, pos)
        if match is None:
            return
        pos = match.end()
        parser = Parser(text, match.start())
        try:
            opens = parser.at("{", 1) or (parser.peek(1).kind == "name" and parser.at("{", 2))
        except AmlSyntaxError:
            continue
        if not opens:
            continue
        try:
            value = parser.parse_value()
        except AmlSyntaxError as exc:
            yield exc
            continue
        if isinstance(value, Obj):
            locate(value, source)
            yield value
            pos = parser.end
