"""The one naming function of the lowering (`tileplan.lowering.naming.value_name`): each
kind of value an operation makes, with the default and the reference's names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.kernel.fragment import NewValue, Ref, ValueKind
from tileplan.kernel.layouts import linear_layout
from tileplan.lowering.naming import group_of_parts, groups_of, stem_group, value_name
from tileplan.model.ir import Operation, group_of
from tileplan.model.layout import Padding
from tileplan.model.precision import F16, Precision

OP = Operation(7, 3, "matmul", "m.layers.5.down", ("m.layers.5.act", "m.layers.{i}.w"), "out", (1, 4), F16)
LAYOUT = linear_layout(4, 2, "Ipu21", Padding.ZERO)
X = Ref(False, 0)
R0 = "operation 3 result 0"


def made(kind: ValueKind, label: str = "", precision: Precision = F16, operand: int | None = None) -> NewValue:
    return NewValue(kind, (1, 4), precision, LAYOUT, label, None if kind is ValueKind.RESULT else X, operand,
                    storage=X if kind is ValueKind.VIEW else None)


@pytest.mark.parametrize("value, of, default, reference", [
    (made(ValueKind.RESULT), None, "m.layers.5.down", R0),
    (made(ValueKind.RESULT, "partials"), None, "m.layers.5.down partials", R0),
    (made(ValueKind.VIEW), "m.layers.5.act", "m.layers.5.down", R0),
    (made(ValueKind.COPY, "AMP copy"), "m.layers.5.act", "m.layers.5.act [AMP copy]", R0),
    (made(ValueKind.COPY, "AMP copy", operand=1), "m.layers.{i}.w", "m.layers.{i}.w [AMP copy]", R0),
    (made(ValueKind.CONVERTED, precision=Precision("F8F143", -4)), "m.layers.5.act", "m.layers.5.act [as F8]",
     "m.layers.5.act"),
    (made(ValueKind.CONVERTED, precision=Precision("F32")), "m.layers.5.act", "m.layers.5.act [as F32]",
     "m.layers.5.act"),
])
def test_names_by_kind(value: NewValue, of: str | None, default: str, reference: str):
    assert "".join(value_name(OP, value, of, False)) == default
    assert "".join(value_name(OP, value, of, True)) == reference


def test_a_group_is_the_stems_group_and_the_suffix():
    stem, suffix = value_name(OP, made(ValueKind.RESULT, "partials"), None, False)
    assert group_of_parts(group_of(stem), stem, suffix) == group_of(stem + suffix)
    assert group_of(stem + suffix) == "m.down partials"


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=".layer0123{i}hbocks x[]_", max_size=40))
def test_the_timeline_finds_a_names_group_from_its_head_as_group_of_does(name):
    """`stem_group` keeps the group of each name's part up to its last `.` (the
    operations of one module share it); for every name it is `group_of`'s."""
    heads: dict[str, str] = {}
    assert stem_group(name, heads) == group_of(name)
    assert stem_group(name + ".x", heads) == group_of(name + ".x")  # the head now kept
    assert stem_group(name + ".y", heads) == group_of(name + ".y")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=".layer0123{i}hbocks x[]_\n", max_size=30), max_size=8))
def test_the_groups_of_many_names_at_once_are_each_names_group(names):
    """`groups_of` runs the layer-index pattern once over the names joined by
    newlines: each result is `group_of` of its name, a name holding a newline too."""
    assert groups_of(names) == [group_of(n) for n in names]


def test_the_policy_says_whose_kernels_and_names_the_lowering_uses():
    """The kernel choice and the naming are the policy's fields, not its name: a policy
    with the reference's names and PopLibs' kernels names as the reference and plans
    matmuls as poplin does."""
    from tileplan.builtins import siglip
    from tileplan.kernel.options import Kernels, Options
    from tileplan.lowering.policy import DefaultPolicy, ValueNames, policy
    from tileplan.lowering.program import lower_program
    from tileplan.model.machine import IPU21

    assert (policy("default").kernels, policy("default").names) == (Kernels.POPLIBS, ValueNames.DESCRIPTIVE)
    assert (policy("reference").kernels, policy("reference").names) == (Kernels.REFERENCE, ValueNames.REFERENCE)

    class Renamed(DefaultPolicy):
        name = "renamed"
        names = ValueNames.REFERENCE

    program = siglip.build_vit(siglip.config("siglip-base-patch16-224", layers=1), F16)
    lowered = lower_program(program, IPU21, Renamed(), Options())
    made = [v.name for v in lowered.values[lowered.declared:]]
    assert made and all(n.startswith("operation ") for n in made if "[" not in n)
    assert any(s.operation.startswith("Matmul {") for s in lowered.steps)  # poplin's kernel, not a Gemm
    assert not any(s.operation.startswith("Gemm ") for s in lowered.steps)
