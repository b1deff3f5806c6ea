"""ttnn.pad beyond the tile padding (tileplan.targets.tenstorrent.ops.tt_data_movement
`plan_pad`: the Pad device operation's multicore tiled and row-major factories) and an
explicit pad before a convolution through the tt-mlir frontend (convert_basic.py
`convert_pad`: HF MobileNet's TF padding, EfficientNet's ZeroPad2d)."""

from __future__ import annotations

import json

import pytest
import torch

import tileplan
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower_graph
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import PadAttrs
from tileplan.targets.tenstorrent.plan import op_target
from tileplan.targets.tenstorrent.tiles import DataType, Layout

BF16 = Precision("BF16")


def pad(shape: tuple[int, ...], padding: tuple[tuple[int, int], ...], layout: Layout = Layout.TILE):
    x = TensorSpec(shape, DataType.BFLOAT16, layout, DRAM_INTERLEAVED)
    return plan_op(OpKind.PAD, OpRequest((x,), OutputRequest(), op_target(load_device("n150"))), PadAttrs(padding))


def _cbs(program) -> list[tuple[int, int, int]]:
    return [(c.index, c.pages, c.page_bytes) for c in program.circular_buffers]


def test_a_pad_that_grows_a_tile_runs_the_multicore_tiled_factory_into_a_new_buffer():
    """224 -> 225 pads to 256: no implicit padding to fill; c_0 and c_1 of 2 tiles, c_2
    of 1; the output's 32 x 8 x 8 tiles a new DRAM buffer."""
    p = pad((1, 32, 224, 224), ((0, 0), (0, 0), (0, 1), (0, 1)))
    (program,) = p.programs
    assert program.name == "PadTileMulticoreProgramFactory"
    assert _cbs(program) == [(0, 2, 2048), (1, 2, 2048), (2, 1, 2048)]
    assert program.cores.cores == 72
    assert p.outputs[0].shape == (1, 32, 225, 225)
    (out,) = p.buffers
    assert (out.pages, out.page_bytes) == (32 * 8 * 8, 2048)


def test_a_tensor_with_implicit_padding_is_filled_first():
    p = pad((2, 32, 3), ((0, 1), (0, 0), (0, 0)))
    assert [program.name for program in p.programs] == ["FillPadProgramFactory", "PadTileMulticoreProgramFactory"]
    assert p.outputs[0].shape == (3, 32, 3)
    assert p.buffers[0].live == (1, 1)


def test_a_row_major_pad_in_front_runs_the_v2_row_factory():
    """MobileNet's k3 s1 TF padding of [1, 32, 112, 112] bf16: output rows of 114 x 2 =
    228 B, 240 aligned to L1, 256 to DRAM; 16 x ceil(2,048 / 224) = 160 rows in c_0; c_2
    because the width is padded in front."""
    p = pad((1, 32, 112, 112), ((0, 0), (0, 0), (1, 1), (1, 1)), Layout.ROW_MAJOR)
    (program,) = p.programs
    assert program.name == "PadRmReaderWriterMultiCoreV2ProgramFactory"
    assert _cbs(program) == [(0, 160, 240), (1, 1, 256), (2, 1, 256)]
    assert p.outputs[0].shape == (1, 32, 114, 114) and p.outputs[0].layout is Layout.ROW_MAJOR


def test_an_aligned_row_padded_behind_needs_no_pad_value_buffer():
    p = pad((1, 1, 8, 16), ((0, 0), (0, 0), (0, 8), (0, 0)), Layout.ROW_MAJOR)
    assert _cbs(p.programs[0]) == [(0, 16 * 64, 32), (1, 1, 32)]


class TfPadded(torch.nn.Module):
    """HF MobileNetV1's TF padding: (1, 1, 1, 1) before a 3 x 3 stride-1 conv, (0, 1, 0, 1)
    before a stride-2 one."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(16, 16, 3)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(torch.nn.functional.pad(x, (1, 1, 1, 1))))
        return self.conv2(torch.nn.functional.pad(x, (0, 1, 0, 1)))


def test_tt_mlir_pads_in_front_row_major_and_behind_in_tile_layout():
    """TTNNWorkaroundsPass.cpp `createPadOpOperandsWorkarounds`: front padding of a TILE
    tensor goes row-major (tt-metal #10987); tt-mlir folds no pad into a conv2d."""
    from tileplan.importers.torch_export import from_torch

    program = from_torch(TfPadded().to(torch.bfloat16), (torch.zeros(1, 16, 64, 64, dtype=torch.bfloat16),),
                         "tf_padded").to_program(BF16, BF16, repeat=False)
    graph = lower_graph(program, TtMlirOptions(opt_level=0), load_device("n150"))
    pads = [(graph.values[n.inputs[0]].layout, graph.values[n.outputs[0]].shape) for n in graph.nodes
            if n.kind is OpKind.PAD]
    assert pads == [(Layout.ROW_MAJOR, (1, 16, 66, 66)), (Layout.TILE, (1, 16, 65, 65))]


@pytest.mark.parametrize("version", [None, "2025-12"])
def test_the_padded_convolutions_plan_on_n150(version):
    x = torch.zeros(1, 16, 64, 64, dtype=torch.bfloat16)
    options = {"tt_version": version} if version else {}
    result = tileplan.plan(TfPadded().to(torch.bfloat16), (x,), machine="n150", what_if=False, **options)
    report = json.loads(result.to_json())
    assert report["verdict"]["fits"] is True
    assert report["operations"]["kind"].count("ttnn.pad") == 2
