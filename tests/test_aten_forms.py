"""ATen forms the wider architecture sweep met (PhiMoE's tensor-bounded clamp,
Funnel's and ViT-MAE's slice assignments, scatters of a value, RWKV's cropping pad),
mapped onto the registry's operators. The oracle is torch itself: each module runs
eagerly on CPU and its outputs' shapes must be the imported graph's."""

from __future__ import annotations

import tempfile

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from tileplan.importers.onnx import from_onnx
from tileplan.importers.torch_export import from_torch


class ClampByTensors(torch.nn.Module):
    def forward(self, x, lo):
        return torch.clamp(x, min=lo, max=lo + 1), torch.clamp_min(x, lo), torch.clamp(x, min=0.5)


class SliceAssign(torch.nn.Module):
    def forward(self, x):
        z = torch.zeros(2, 10)
        z[:, 2:6] = x[:, :4]
        w = torch.ones(2, 10)
        w[:, :3] = x[:, 5:]
        return z, w


class Scatters(torch.nn.Module):
    def forward(self, x, idx, src):
        return x.scatter(1, idx, 0.5), x.scatter(1, idx, src), x.scatter_add(1, idx, src)


class Crop(torch.nn.Module):
    def forward(self, x):
        f = torch.nn.functional
        return f.pad(x, (-1, 2)), f.pad(x, (1, -2, -1, 0)), f.pad(x, (0, -3))


CASES = [
    (ClampByTensors(), (torch.zeros(2, 8), torch.zeros(1, 8)), {"maximum", "minimum", "clamp"}),
    (SliceAssign(), (torch.zeros(2, 8),), {"concat", "slice"}),
    (Scatters(), (torch.zeros(2, 8), torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3)), {"scatter", "fill"}),
    (Crop(), (torch.zeros(2, 8),), {"slice", "pad"}),
]


@pytest.mark.parametrize("module, inputs, kinds", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_each_form_plans_the_shapes_torch_computes(module, inputs, kinds):
    expected = [tuple(t.shape) for t in module(*inputs)]
    graph = from_torch(module, inputs, "m")
    shapes = {o.output: o.shape for o in graph.ops} | {t.name: t.shape for t in graph.tensors}
    assert [shapes[o] for o in graph.outputs] == expected
    assert kinds <= {o.kind for o in graph.ops}


def test_an_onnx_pad_with_negative_pads_crops_first():
    pads = helper.make_tensor("pads", TensorProto.INT64, [4], [0, -1, 0, 2])  # [begin0, begin1, end0, end1]
    node = helper.make_node("Pad", ["x", "pads"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 9])], initializer=[pads])
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/pad.onnx"
        onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
        g = from_onnx(path)
    assert [(o.kind, o.shape) for o in g.ops] == [("slice", (2, 7)), ("pad", (2, 9))]


class NegativeSlices(torch.nn.Module):
    """DETR's `y_embed[:, -1:, :]`: a slice from the end is a slice, not the whole."""

    def forward(self, x):
        return x[:, -1:], x[:, -3:-1], x[:, :-2], x[:, ::2], x[:, -100:]


class CopyInto(torch.nn.Module):
    """RWKV's `output[:, t] = value` in a loop: each copy writes its source."""

    def __init__(self) -> None:
        super().__init__()
        self.value = torch.nn.Linear(4, 4)

    def forward(self, x):
        out = torch.zeros(2, 3, 4)
        for t in range(3):
            out[:, t] = self.value(x[:, t])
        return out


def test_slices_count_negative_bounds_from_the_end():
    module, x = NegativeSlices(), torch.zeros(2, 6)
    graph = from_torch(module, (x,), "m")
    shapes = {o.output: o.shape for o in graph.ops} | {t.name: t.shape for t in graph.tensors}
    assert [shapes[o] for o in graph.outputs] == [tuple(t.shape) for t in module(x)]


def test_a_copy_into_a_tensor_keeps_what_it_copies():
    module, x = CopyInto(), torch.zeros(2, 3, 4)
    graph = from_torch(module, (x,), "m")
    assert graph.parameter_count == 4 * 4 + 4  # the projection reaches the output
    assert sum(o.kind == "matmul" for o in graph.ops) == 3


class Upsample(torch.nn.Module):
    """DPT's and segmentation heads' upsampling: transposed convolutions, grouped,
    with output padding, with and without a bias."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1, groups=2)
        self.up2 = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1, bias=False)

    def forward(self, x):
        return self.up2(torch.relu(self.up(x)))


def test_a_transposed_convolution_is_the_data_gradient_of_the_one_it_transposes(tmp_path):
    module, x = Upsample().eval(), torch.zeros(1, 8, 5, 7)
    want = tuple(module(x).shape)
    graph = from_torch(module, (x,), "up")
    assert graph.parameter_count == sum(p.numel() for p in module.parameters())
    ops = [(o.kind, o.shape) for o in graph.ops]
    assert ("conv_grad_input", (1, 6, 10, 14)) in ops and ops[-1] == ("conv_grad_input", want)
    with torch.no_grad():
        torch.onnx.export(module, (x,), str(tmp_path / "up.onnx"), dynamo=False, opset_version=17)
    onnx_graph = from_onnx(str(tmp_path / "up.onnx"))
    assert [o.shape for o in onnx_graph.ops if o.kind == "conv_grad_input"] == [(1, 6, 10, 14), want]
    # both carry the geometry they transpose (stride 2, padding 1 on each side, no
    # dilation); up2's output_padding 1 is the row the shape has beyond it
    for g in (graph, onnx_graph):
        geometry = [{k: v for k, v in o.attrs if k in ("strides", "pads", "dilations")}
                    for o in g.ops if o.kind == "conv_grad_input"]
        assert geometry == [{"strides": (2, 2), "pads": (1, 1, 1, 1), "dilations": (1, 1)}] * 2
