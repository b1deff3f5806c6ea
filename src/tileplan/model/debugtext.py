"""Reader for the report's text forms (Rust `Debug` style), shared by every parser.

The reference writes layouts, precisions and operations as e.g.
``Gemm { multiply: F8F143 { scale_exponent: -4 }, inner_block: 160 }``,
``FromEnd(2)``, ``[1, 2]``, ``Some(1)``, ``None``, ``true``. This module turns such
text into a small tree (`Node`, `list`, `int`, `bool`); the typed parsers in
`precision`, `layout` and `operation` read the tree. Printing is theirs too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tileplan.errors import TextSyntaxError

_TOKEN = re.compile(r"\s+|(-?\d+)|([A-Za-z_][A-Za-z0-9_]*)|([{}()\[\],:])|(.)", re.S)
#: nesting the parser follows (a real layout nests 5 deep); deeper text is refused, not recursed into
MAX_DEPTH = 64
#: digits of a number (2^64 has 20); longer numbers are refused before conversion
MAX_DIGITS = 24


@dataclass(frozen=True, slots=True)
class Node:
    """`Name`, `Name(args...)` or `Name { key: value, ... }`.

    Invariant: at most one of `args` and `fields` is not None.
    """

    name: str
    args: tuple | None = None
    fields: tuple[tuple[str, object], ...] | None = None

    def __post_init__(self) -> None:
        assert self.args is None or self.fields is None, "a node has args or fields"



def parse(text: str, what: str = "text") -> object:
    """Parse one whole text form; raise `TextSyntaxError` naming the offset."""
    tokens = _tokenize(text, what)
    parser = _Parser(tokens, text, what)
    value = parser.value()
    if parser.pos != len(tokens):
        parser.fail("end of text")
    return value


def _tokenize(text: str, what: str) -> list[tuple[str, object, int]]:
    tokens: list[tuple[str, object, int]] = []
    for m in _TOKEN.finditer(text):
        number, ident, punct, other = m.groups()
        if number is not None:
            if len(number.lstrip("-")) > MAX_DIGITS:
                raise TextSyntaxError(f"{what}: a number of {len(number.lstrip('-'))} digits at offset {m.start()} "
                                      f"(at most {MAX_DIGITS}) in {_clip(text)!r}")
            tokens.append(("int", int(number), m.start()))
        elif ident is not None:
            tokens.append(("ident", ident, m.start()))
        elif punct is not None:
            tokens.append((punct, punct, m.start()))
        elif other is not None:
            raise TextSyntaxError(
                f"{what}: unexpected character {other!r} at offset {m.start()} of {_clip(text)!r}")
    return tokens


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Parser:
    def __init__(self, tokens: list[tuple[str, object, int]], text: str, what: str) -> None:
        self.tokens = tokens
        self.text = text
        self.what = what
        self.pos = 0
        self.depth = 0

    def fail(self, expected: str) -> None:
        if self.pos < len(self.tokens):
            kind, val, offset = self.tokens[self.pos]
            found = f"{val!r} at offset {offset}"
        else:
            found = "end of text"
        raise TextSyntaxError(
            f"{self.what}: expected {expected}, found {found} in {_clip(self.text)!r}")

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def take(self, kind: str, expected: str) -> object:
        if self.peek() != kind:
            self.fail(expected)
        value = self.tokens[self.pos][1]
        self.pos += 1
        return value

    def value(self) -> object:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                offset = self.tokens[self.pos][2] if self.pos < len(self.tokens) else len(self.text)
                raise TextSyntaxError(f"{self.what}: nested more than {MAX_DEPTH} deep at offset {offset} "
                                      f"in {_clip(self.text)!r}")
            return self._value()
        finally:
            self.depth -= 1

    def _value(self) -> object:
        kind = self.peek()
        if kind == "int":
            return self.take("int", "a number")
        if kind == "[":
            self.pos += 1
            items = []
            while self.peek() != "]":
                items.append(self.value())
                if self.peek() != ",":
                    break
                self.pos += 1
            self.take("]", "',' or ']'")
            return items
        if kind == "ident":
            name = str(self.take("ident", "a name"))
            if name in ("true", "false"):
                return name == "true"
            if self.peek() == "(":
                self.pos += 1
                args = [self.value()]
                while self.peek() == ",":
                    self.pos += 1
                    args.append(self.value())
                self.take(")", "')'")
                return Node(name, args=tuple(args))
            if self.peek() == "{":
                self.pos += 1
                fields = []
                while self.peek() != "}":
                    key = str(self.take("ident", "a field name"))
                    self.take(":", "':'")
                    fields.append((key, self.value()))
                    if self.peek() != ",":
                        break
                    self.pos += 1
                self.take("}", "',' or '}'")
                return Node(name, fields=tuple(fields))
            return Node(name)
        self.fail("a value")
        raise AssertionError("unreachable")


def expect_fields(node: object, name: str, keys: tuple[str, ...], what: str) -> dict[str, object]:
    """The fields of `Name { keys... }`, exactly those keys in that order."""
    if not isinstance(node, Node) or node.name != name or node.fields is None:
        raise TextSyntaxError(f"{what}: expected {name} {{ ... }}, found {describe(node)}")
    found = tuple(k for k, _ in node.fields)
    if found != keys:
        raise TextSyntaxError(
            f"{what}: {name} expects fields ({', '.join(keys)}), found ({', '.join(found)})")
    return dict(node.fields)


def expect_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TextSyntaxError(f"{what}: expected an integer, found {describe(value)}")
    return value


def describe(value: object) -> str:
    if isinstance(value, Node):
        return value.name + ("(...)" if value.args is not None else " {...}" if value.fields is not None else "")
    if isinstance(value, list):
        return "a list"
    return repr(value)
