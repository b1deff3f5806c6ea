"""Validity of a program, checked on demand (not scattered asserts): every name
defined before use and declared once, operations numbered in order, every shape what
its operator's rule gives."""

from __future__ import annotations

from tileplan.errors import ModelError
from tileplan.model.ir import Program, RepeatBlock, family_member
from tileplan.ops.base import infer_shape


def check_program(program: Program) -> None:
    """Raise `ModelError` unless every name is defined before use, names are unique,
    and each operation's shapes follow its rule."""
    shapes: dict[str, tuple[int, ...]] = {}
    for t in program.tensors:
        if t.name in shapes:
            raise ModelError("tensor declared twice", t.name)
        shapes[t.name] = t.shape
    index = 0
    for item in program.items:
        if isinstance(item, RepeatBlock):
            for family in item.families:
                for member in item.members(family):
                    if member not in shapes:
                        raise ModelError(f"repeat block {item.name}: family member {member} is not declared")
            iterations = range(item.count)
            body = item.body
        else:
            iterations = range(1)
            body = (item,)
        offset = item.first if isinstance(item, RepeatBlock) else 0
        for op in body:
            if op.index != index:
                raise ModelError(f"operations must be numbered in order: expected {index}, found {op.index}",
                                 op.name)
            index += 1
            for i in iterations:
                ins = []
                for name in op.inputs:
                    member = family_member(name, i + offset) if isinstance(item, RepeatBlock) else name
                    if member not in shapes:
                        raise ModelError(f"input {member} is not defined before operation {op.index}", op.name)
                    ins.append(shapes[member])
                expected = infer_shape(op, ins)
                if expected != op.output_shape:
                    raise ModelError(f"{op.kind} of {' and '.join(map(str, map(list, ins)))} gives "
                                     f"{list(expected)}, declared {list(op.output_shape)}", op.name)
                shapes[family_member(op.output, i + offset) if isinstance(item, RepeatBlock) else op.output] = \
                    op.output_shape
                if isinstance(item, RepeatBlock):
                    shapes[op.output] = op.output_shape
    for out in program.outputs:
        if out not in shapes:
            raise ModelError("program output is never computed", out)
