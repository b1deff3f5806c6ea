"""The names of the values a lowering makes: one function of (operation, kind).

Default names say what a value is, after the operation or what it copies (docs/models.md,
"How a model is imported"):

| kind | name | example |
|---|---|---|
| result | `<operation>` | `layers.5.mlp.down_proj.matmul` |
| result with a label | `<operation> <label>` | `... partials`, `... scores` |
| view | `<operation>` | `layers.5.reshape` |
| copy | `<what it copies> [<why>]` | `layers.{i}.self_attn.q_proj.weight [AMP copy]` |
| copy for another layout | `<what it copies> [copy for operation N]` | `head.weight [copy for operation 43]` |
| converted | `<what it converts> [as <precision>]` | `layers.5.mlp.act [as F8]` |

A copy is named after the value it copies and why it was made: a plain re-layout
names the operation that needed it (a tensor whose readers want different layouts
rests in one, and each other reader copies it at its step: the report says which;
the operation's index, as `operations` lists it, because a suffix holds no `.`), or,
when the lowering says so, after the operation's input as the operation names it (a
parameter family read in a repeat block is then `...{i}...`, not its first member). With the reference's names
(`--policy reference`) every value an operation makes is `operation N result 0` but a
conversion, which keeps its input's name.
"""

from __future__ import annotations

from tileplan.kernel.fragment import NewValue, ValueKind
from tileplan.model.ir import LAYER_INDEX, Operation, group_of
from tileplan.model.precision import Precision


def short_precision(p: Precision) -> str:
    """`F8` for either FP8 format, else the precision's name (`F16`)."""
    return "F8" if p.is_fp8 else p.name


def value_name(op: Operation, made: NewValue, of: str | None, reference: bool) -> tuple[str, str]:
    """The name of a value `op`'s lowering made, as (stem, suffix): the name is their
    concatenation. `of` is the name of what a copy or conversion is of (see the
    module docstring). A suffix never holds a `.`, so the name's group is the stem's
    group followed by the suffix (`group_of` removes layer indices, which end at a
    `.`)."""
    if reference:
        if made.kind is ValueKind.CONVERTED:
            assert of is not None
            return of, ""
        return f"operation {op.index} result 0", ""
    suffix = own_suffix(made)
    if suffix is not None:
        return op.name, suffix
    assert of is not None
    if made.kind is ValueKind.CONVERTED:
        return of, f" [as {short_precision(made.precision)}]"
    return of, f" [copy for operation {op.index}]" if made.label == "copy" else f" [{made.label}]"


def own_suffix(made: NewValue) -> str | None:
    """The suffix of a value named after its own operation (a result or a view), the
    same for every operation its fragment is emitted for; None for a copy or a
    conversion, named after what it is of."""
    if made.kind is ValueKind.COPY or made.kind is ValueKind.CONVERTED:
        return None
    return f" {made.label}" if made.label else ""


def group_of_parts(stem_group: str, stem: str, suffix: str) -> str:
    """The group of the name `stem + suffix`, given the stem's group."""
    return stem_group + suffix if "." not in suffix else group_of(stem + suffix)


def stem_group(stem: str, heads: dict[str, str]) -> str:
    """`group_of(stem)`, from the group of the part up to its last `.`, kept in
    `heads`: a layer index ends at a `.` (`tileplan.model.ir.LAYER_INDEX`), so none
    reaches into the last part, and the operations of a module share that part."""
    head, dot, tail = stem.rpartition(".")
    if not dot:
        return group_of(stem)
    group = heads.get(head)
    if group is None:
        group = heads[head] = group_of(head + ".")
    return group + tail


def groups_of(names: list[str]) -> list[str]:
    """`group_of` of each name, in one pass of the layer-index pattern over the names
    joined by newlines (a match never spans one: the pattern holds none and its
    look-arounds need a `.`), or name by name when a name holds a newline."""
    if not names:
        return []
    text = "\n".join(names)
    if text.count("\n") != len(names) - 1:
        heads: dict[str, str] = {}
        return [stem_group(n, heads) for n in names]
    return LAYER_INDEX.sub("", text).split("\n")
