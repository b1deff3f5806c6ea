"""tt-mlir's EraseInverseOps on an LLM's MLP (frontends/tt_mlir/inverse_ops.py), against
tenstorrent/tt-mlir 0005c33b0f (#6195, 2025-12-05, "Enable EIO for all models"), whose
description is this pattern: each `nn.Linear` of a 3-D input reshapes to 2-D and back,
and the activation and gating between two linears run on the restored 3-D shape unless
the reshapes cancel."""

from __future__ import annotations

from functools import lru_cache

from tileplan.model.ir import Operation
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.inverse_ops import erase_inverse_reshapes
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.ops.kinds import OpKind

BF16 = Precision("BF16")


@lru_cache(maxsize=None)
def _gated_mlp():
    """down(silu(gate(x)) * up(x)) on a decode step's [4, 1, 64] input."""
    import torch
    from tileplan.importers.torch_export import from_torch

    class GatedMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate = torch.nn.Linear(64, 256, bias=False)
            self.up = torch.nn.Linear(64, 256, bias=False)
            self.down = torch.nn.Linear(256, 64, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))

    return from_torch(GatedMLP(), (torch.zeros(4, 1, 64),), "gated-mlp").to_program(BF16, BF16, repeat=False)


def _multiply_shape(version: str) -> tuple[int, ...]:
    graph = lower_graph(_gated_mlp(), TtMlirOptions.of(0), load_device("n150", version=version))
    mul = next(n for n in graph.nodes if n.kind is OpKind.MULTIPLY)
    return graph.values[mul.outputs[0]].shape


def test_the_gating_runs_on_the_linears_rows_from_december_2025():
    """Before #6195 (a 2025-11-06 build) the gating multiplies [4, 1, 256] (each row a
    tile of its own: 4 x 32 x 256 in TILE); from it (2025-12-18) the reshapes cancel and
    it multiplies the linears' [4, 256] rows."""
    assert _multiply_shape("2025-11-06") == (4, 1, 256)
    assert _multiply_shape("2025-12-18") == (4, 256)


def _op(index: int, kind: str, inputs: tuple[str, ...], output: str, shape: tuple[int, ...]) -> Operation:
    return Operation(index, index, kind, output, inputs, output, shape, BF16)


def test_a_region_read_from_outside_keeps_its_reshapes():
    """The reshapes cancel only when nothing outside the elementwise region reads inside
    it: here the activation is also a model output, so nothing changes."""
    ops = (_op(0, "reshape", ("a",), "a3", (4, 1, 8)), _op(1, "silu", ("a3",), "s", (4, 1, 8)),
           _op(2, "reshape", ("s",), "s2", (4, 8)))
    shapes = {"a": (4, 8), "a3": (4, 1, 8), "s": (4, 1, 8), "s2": (4, 8)}
    assert erase_inverse_reshapes(ops, ("s2", "s"), set(), shapes) == ops
    erased = erase_inverse_reshapes(ops, ("s2",), set(), shapes)
    assert [(op.kind, op.inputs, op.output, op.output_shape) for op in erased] == [("silu", ("a",), "s2", (4, 8))]
