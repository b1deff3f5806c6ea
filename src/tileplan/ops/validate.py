"""Validity of a program, checked on demand (not scattered asserts): every name
defined before use and declared once, operations numbered in order, every shape what
its operator's rule gives."""

from __future__ import annotations

from tileplan.errors import ModelError
from tileplan.model.ir import Operation, Program, RepeatBlock, family_member
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
    # the signatures whose shapes agree with their rule (the rules are pure: a chain of
    # a million alike operations asks each once)
    agreed: set[tuple[object, ...]] = set()
    for item in program.items:
        if not isinstance(item, RepeatBlock):  # an operation: the common case, kept short
            if item.index != index:
                raise ModelError(f"operations must be numbered in order: expected {index}, found {item.index}",
                                 item.name)
            index += 1
            try:
                ins = tuple([shapes[name] for name in item.inputs])
            except KeyError as e:
                raise ModelError(f"input {e.args[0]} is not defined before operation {item.index}",
                                 item.name) from None
            signature: tuple[object, ...] = (item.kind, item.attrs, ins, item.output_shape)
            try:
                known, hashable = signature in agreed, True
            except TypeError:  # an unhashable attribute: checked each time
                known, hashable = False, False
            if not known:
                _check_shape(item, list(ins))
                if hashable:
                    agreed.add(signature)
            shapes[item.output] = item.output_shape
            continue
        for family in item.families:
            for member in item.members(family):
                if member not in shapes:
                    raise ModelError(f"repeat block {item.name}: family member {member} is not declared")
        for op in item.body:
            if op.index != index:
                raise ModelError(f"operations must be numbered in order: expected {index}, found {op.index}",
                                 op.name)
            index += 1
            for i in range(item.first, item.first + item.count):
                members: list[tuple[int, ...]] = []
                for name in op.inputs:
                    member = family_member(name, i)
                    if member not in shapes:
                        raise ModelError(f"input {member} is not defined before operation {op.index}", op.name)
                    members.append(shapes[member])
                _check_shape(op, members)
                shapes[family_member(op.output, i)] = op.output_shape
                shapes[op.output] = op.output_shape
    for out in program.outputs:
        if out not in shapes:
            raise ModelError("program output is never computed", out)


def _check_shape(op: Operation, ins: list[tuple[int, ...]]) -> None:
    expected = infer_shape(op, ins)
    if expected != op.output_shape:
        raise ModelError(f"{op.kind} of {' and '.join(map(str, map(list, ins)))} gives "
                         f"{list(expected)}, declared {list(op.output_shape)}", op.name)
