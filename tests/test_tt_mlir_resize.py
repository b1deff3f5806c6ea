"""`F.interpolate` through the tt-mlir frontend (convert_nn.py `convert_resize`): tt-xla's
decomposition of nearest and bilinear upsampling into a matmul per spatial dimension by
a constant matrix, with the dimension swapped last and back."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

import tileplan


class Upsample(torch.nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.interpolate(x, scale_factor=2.0, mode=self.mode) * 2


def _plan(mode: str, x: torch.Tensor):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(Upsample(mode).eval(), (x,))
    return tileplan.plan(program, machine="n150", what_if=False)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_an_upsample_is_two_matmuls_by_constant_matrices(mode):
    """[1, 64, 32, 48] x2: H swapped last, [1, 64 x 48, 32] @ [32, 64], swapped back;
    then [1, 64 x 64, 48] @ [48, 96]; the result [1, 64, 64, 96]."""
    result = _plan(mode, torch.randn(1, 64, 32, 48))
    report = json.loads(result.to_json())
    ops = report["operations"]
    kinds = [k for k, n in zip(ops["kind"], ops["name"]) if n.startswith(("resize", "upsample"))]
    assert kinds == ["ttnn.permute", "ttnn.reshape", "ttnn.matmul", "ttnn.reshape", "ttnn.permute",
                     "ttnn.reshape", "ttnn.matmul", "ttnn.reshape"]
    buffers = report["buffers"]
    weights = sorted(n for n in buffers["name"] if n.startswith("upsample."))
    suffix = "nearest" if mode == "nearest" else "linear"
    assert weights == [f"upsample.{suffix}.32x64", f"upsample.{suffix}.48x96"]
    (out,) = [i for i, n in enumerate(buffers["name"]) if n.endswith("matmul1")]
    assert buffers["bytes"][out] == 64 * 64 * 96 * 4  # [1, 4096, 96] float32
    assert result.fits




def _resize(**attrs: object):
    """One resize of [1, 8, 32, 48] to [1, 8, 64, 96] as an importer hands it over."""
    from tileplan.importers.graph import GraphBuilder

    b = GraphBuilder("resize")
    x = b.input("x", (1, 8, 32, 48), "float")
    b.output(b.op("resize", [x], {"size": (64, 96), **attrs}, name="resize"))
    return b.build()


@pytest.mark.parametrize("attrs, words", [
    ({"mode": "nearest", "exact": True}, "a nearest-exact resize"),
    ({"mode": "linear", "antialias": True}, "an antialiased resize"),
    ({"mode": "cubic"}, "a cubic resize")], ids=["nearest-exact", "antialias", "bicubic"])
def test_resizes_outside_tt_xlas_table_are_refused_in_one_line(attrs, words):
    """tt-xla decomposes only `upsample_nearest*` and `upsample_*linear*` into matmuls;
    a nearest-exact (`_upsample_nearest_exact*`, kept by an exporter that does not
    decompose it) or antialiased resize is torch's gather; the IPU plans all three."""
    with pytest.raises(tileplan.errors.ModelError, match=f"{words}: tt-xla decomposes only nearest"):
        tileplan.plan(_resize(**attrs), machine="n150", what_if=False)
    assert tileplan.plan(_resize(**attrs), machine="ipu21", what_if=False).fits
