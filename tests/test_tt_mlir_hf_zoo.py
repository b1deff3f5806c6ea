"""transformers architectures of the model zoo (tests/model_zoo.py: 2 layers, hidden
sizes of 32) through the tt-mlir frontend on n150, one per operation the frontend
lowers by build (devices/software.toml): DeBERTa-v2's masked fill (`ttnn.where`),
RoBERTa's position ids and token types (`ttnn.cumsum`, `ttnn.gather`), Whisper's
encoder (`ttnn.conv1d`), CLIP's pooled text output (`ttnn.argmax`, the embedding
decomposition of indexing), MobileNetV1's TF padding (`ttnn.pad`), ConvNeXt-V2's
global response norm (a sum over H and W of NHWC: fast_reduce_nc), each at the latest
build and at a 2025-12 one, where the same model takes the other lowering."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

import model_zoo as mz
import tileplan

#: each architecture and the TTNN operations its plan must hold at (latest, 2025-12)
CASES = {
    "DeBERTa-v2": (["ttnn.where"], ["ttnn.where"]),
    "RoBERTa": (["ttnn.cumsum", "ttnn.gather"], ["ttnn.moreh_cumsum", "ttnn.embedding"]),
    "Whisper": (["ttnn.conv2d"], ["ttnn.conv2d"]),
    "CLIP": (["ttnn.argmax", "ttnn.embedding"], ["ttnn.argmax", "ttnn.embedding"]),
    "MobileNetV1": (["ttnn.pad", "ttnn.conv2d"], ["ttnn.pad", "ttnn.conv2d"]),
    "ConvNeXt-V2": (["ttnn.sum", "ttnn.pow_scalar"], ["ttnn.sum", "ttnn.pow_scalar"]),
}


@pytest.mark.parametrize("version", [None, "2025-12"], ids=["latest", "2025-12"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_architecture_plans_on_n150(name, version):
    (case,) = [c for c in mz.CASES if c.name == name]
    model, inputs = mz.build(case, "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = mz.export(model, inputs)
    options = {"tt_version": version} if version else {}
    result = tileplan.plan(program, machine="n150", what_if=False, **options)
    kinds = json.loads(result.to_json())["operations"]["kind"]
    expected = CASES[name][0 if version is None else 1]
    assert [k for k in expected if k not in kinds] == []
    assert result.fits
    assert torch.is_grad_enabled()  # planning leaves torch's global state alone
