"""Constants made from nothing through the tt-mlir frontend (fusion.py `cse_views`): the
importers' `fill` of one known value, shape and type is one constant, as MLIR's CSE
leaves tt-mlir's `stablehlo.constant`s; an arange or a random draw (no one value) is
never merged. On the builds whose where repeats every operand to the result's shape
(2025-08-01 to 2026-03-22) each such constant is a full-size const-eval tensor, so
merging them is memory."""

from __future__ import annotations

from functools import lru_cache

import torch

from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.ops.kinds import OpKind

BF16 = Precision("BF16")


class Masks(torch.nn.Module):
    """Three masked fills of [2, 64, 96] values, two by 0 and one by -1, and an arange."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = x.masked_fill(x > 0, 0.0)
        b = y.masked_fill(y < 0, 0.0)
        c = (a + b).masked_fill(a > b, -1.0)
        return c + torch.arange(96, dtype=torch.bfloat16)


@lru_cache(maxsize=None)
def _program() -> Program:
    from tileplan.importers.torch_export import from_torch

    x = torch.zeros(2, 64, 96, dtype=torch.bfloat16)
    return from_torch(Masks(), (x, x.clone()), "masks").to_program(BF16, BF16, repeat=False)


def test_the_importer_records_each_fills_one_value():
    fills = [dict(op.attrs)["value"] for op in _program().operations() if op.kind == "fill"]
    assert sorted(fills, key=repr) == sorted([0.0, 0.0, -1.0, None], key=repr)  # the arange has no one value


def test_equal_fills_are_one_constant_read_by_every_where():
    graph = lower_graph(_program(), TtMlirOptions(opt_level=0), load_device("n150", version="2025-12-18"))
    wheres = [n for n in graph.nodes if n.kind is OpKind.WHERE]
    assert len(wheres) == 3
    read = {graph.tensors[t].name: graph.values[t].shape for n in wheres for t in n.inputs
            if graph.tensors[t].name.startswith("scalar_tensor")}
    # the two zeros are one constant, the -1 another; each repeated to the result's shape
    assert sorted(read.values()) == [(2, 64, 96), (2, 64, 96)]
