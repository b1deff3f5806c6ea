"""A TTNN program's invariants (tileplan.targets.tenstorrent.program): what a frontend
hands the Tenstorrent planner is checked when it is made, with one-line errors."""

from __future__ import annotations

import pytest

from tileplan.errors import ModelError
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.program import Frontend, Op, Tensor, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout

SPEC = TensorSpec((1, 1, 32, 2048), DataType.BFLOAT16, Layout.TILE, DRAM_INTERLEAVED)


def tensors() -> tuple[Tensor, ...]:
    return (Tensor(0, "x", Role.INPUT, SPEC), Tensor(1, "norm.weight", Role.WEIGHT, SPEC),
            Tensor(2, "norm", Role.ACTIVATION))


def norm(inputs: tuple[int, ...] = (0, 1)) -> Op:
    return Op(0, OpKind.RMS_NORM, "norm", inputs, (2,), OutputRequest())


def test_a_well_formed_program_is_made() -> None:
    p = TtProgram("t", Frontend.TT_MLIR, tensors(), (0, 1), (norm(),), ((0,),), (2,))
    assert p.ops[0].kind is OpKind.RMS_NORM and p.frees == ((0,),)


def test_a_tensor_read_before_it_is_uploaded_is_refused() -> None:
    with pytest.raises(ModelError, match=r"operation 0 \(norm\): tensor 1 is read before it is uploaded or made"):
        TtProgram("t", Frontend.TT_MLIR, tensors(), (0,), (norm(),), ((),))


def test_a_tensor_freed_before_its_last_reader_is_refused() -> None:
    second = Op(1, OpKind.RELU, "relu", (0,), (3,), OutputRequest())
    ts = (*tensors(), Tensor(3, "relu", Role.ACTIVATION))
    with pytest.raises(ModelError, match="tensor 0 freed after operation 0: expected a tensor made by then, freed "
                                         "once, after its last reader"):
        TtProgram("t", Frontend.TT_MLIR, ts, (0, 1), (norm(), second), ((0,), ()))


def test_an_output_with_a_declared_spec_is_refused() -> None:
    ts = (*tensors()[:2], Tensor(2, "norm", Role.ACTIVATION, SPEC))
    with pytest.raises(ModelError, match="output 2: expected a tensor no one else makes"):
        TtProgram("t", Frontend.TT_MLIR, ts, (0, 1), (norm(),), ((),))


def test_ids_count_the_tensors_in_order() -> None:
    ts = (Tensor(1, "x", Role.INPUT, SPEC),)
    with pytest.raises(ModelError, match="tensor 'x' has id 1; expected 0"):
        TtProgram("t", Frontend.TT_MLIR, ts, (), (), ())
