"""Element precisions: bytes per element and the reference's text form.

FP8 on the IPU21 ("QUARTER") comes in two formats, F143 (1 sign, 4 exponent,
3 mantissa bits; max 240) and F152 (max 57344); a stored value x means
x * 2^scale_exponent with scale_exponent in [-31, 31]. Its text form is
``F8F143 { scale_exponent: -4 }``; every other precision is a bare name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tileplan.errors import InputError, TextSyntaxError
from tileplan.model.debugtext import Node, expect_fields, expect_int, parse

#: name -> bytes per element, for every precision without parameters.
PLAIN_BYTES: dict[str, int] = {
    "F32": 4, "F16": 2, "BF16": 2,
    "I8": 1, "U8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8, "U64": 8,
    "Bool": 1,
}
FP8_FORMATS: tuple[str, ...] = ("F8F143", "F8F152")
SCALE_RANGE = range(-31, 32)


@dataclass(frozen=True, slots=True)
class Precision:
    """An element type. Invariant: `scale_exponent` is set (in [-31, 31]) iff FP8."""

    name: str
    scale_exponent: int | None = None
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.name, self.scale_exponent)))
        if self.name in FP8_FORMATS:
            if self.scale_exponent is None or self.scale_exponent not in SCALE_RANGE:
                raise InputError(
                    f"precision {self.name}: scale_exponent must be in [-31, 31], "
                    f"found {self.scale_exponent}")
        elif self.name in PLAIN_BYTES:
            if self.scale_exponent is not None:
                raise InputError(f"precision {self.name} takes no scale_exponent")
        else:
            raise InputError(
                f"unknown precision {self.name!r}; expected one of "
                f"{', '.join((*PLAIN_BYTES, *FP8_FORMATS))}")

    @property
    def bytes(self) -> int:
        """Bytes per element."""
        return 1 if self.is_fp8 else PLAIN_BYTES[self.name]

    @property
    def is_fp8(self) -> bool:
        return self.name in FP8_FORMATS

    def to_text(self) -> str:
        if self.is_fp8:
            return f"{self.name} {{ scale_exponent: {self.scale_exponent} }}"
        return self.name

    def __str__(self) -> str:
        return self.to_text()

    @classmethod
    def from_node(cls, node: object, what: str = "precision") -> "Precision":
        if not isinstance(node, Node) or node.args is not None:
            raise TextSyntaxError(f"{what}: expected a precision name, found {node!r}")
        if node.name in FP8_FORMATS:
            fields = expect_fields(node, node.name, ("scale_exponent",), what)
            return cls(node.name, expect_int(fields["scale_exponent"], what))
        if node.fields is not None:
            raise TextSyntaxError(f"{what}: precision {node.name} takes no fields")
        return cls(node.name)

    @classmethod
    def from_text(cls, text: str, what: str = "precision") -> "Precision":
        return cls.from_node(parse(text, what), what)


F32 = Precision("F32")
F16 = Precision("F16")
BOOL = Precision("Bool")


def from_option(text: str) -> Precision:
    """Parse a command-line precision: ``f16``, ``f32``, ``f8f143:-4``, ``f8f152:0``."""
    name, _, scale = text.partition(":")
    upper = name.strip().upper()
    upper = {"BOOL": "Bool"}.get(upper, upper)
    if upper in FP8_FORMATS:
        if not scale:
            raise InputError(f"precision {text!r}: FP8 needs its scale exponent after ':', e.g. {name.lower()}:-4")
        try:
            exponent = int(scale)
        except ValueError:
            raise InputError(
                f"precision {text!r}: scale after ':' must be an integer, e.g. f8f143:-4") from None
        return Precision(upper, exponent)
    if scale:
        raise InputError(f"precision {text!r}: only F8F143/F8F152 take a ':scale'")
    return Precision(upper)
