"""The Python API plans a model given as an object on a Tenstorrent machine
(`tileplan.plan(module, example_inputs, machine="n150")`: app/tenstorrent/api.py,
tt_mlir_models.py `ObjectModel`): the same plan as the model saved and named by path, in
its own dtype, what-if rows whose commands are the API calls, a decoder's decoding step
with its cache, and one-line refusals. Every report written here passes `tileplan check`
(conftest.py)."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
import torch

import tileplan
from tileplan.errors import InputError, ModelError

#: tt-mlir #7351 / tt-xla #3656, as published (tests/test_tt_mlir_conv3d.py: the same case from a .pt2)
MESSAGE_7351 = ("Statically allocated circular buffers on core range [(x=0,y=0) - (x=7,y=7)] grow to 1738528 B "
                "which is beyond max L1 size of 1499136 B")


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(256, 1024)
        self.down = torch.nn.Linear(1024, 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


@lru_cache(maxsize=None)
def mlp() -> MLP:
    torch.manual_seed(0)
    return MLP().eval()


def example(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    return (torch.zeros(64, 256, dtype=dtype),)


def buffers(result) -> list[dict]:
    """The report's buffers, one dict each (the report stores them by column)."""
    columns = json.loads(result.to_json())["buffers"]
    keys = [k for k, v in columns.items() if isinstance(v, list)]
    return [dict(zip(keys, values)) for values in zip(*(columns[k] for k in keys))]


def without_names(report: dict) -> dict:
    """The report without what names the model and how to plan it again."""
    out = {k: v for k, v in report.items() if k not in ("model", "what_if")}
    return json.loads(json.dumps(out).replace('"mlp.pt2"', '"MLP"'))


def test_a_module_plans_as_the_same_module_saved_and_named_by_path(tmp_path):
    path = tmp_path / "mlp.pt2"
    torch.export.save(torch.export.export(mlp(), example()), str(path))
    by_object = tileplan.plan(mlp(), example(), machine="n150", opt_level=2, what_if=False)
    by_path = tileplan.plan(str(path), machine="n150", opt_level=2, what_if=False)
    (tmp_path / "object.json").write_text(by_object.to_json())
    assert by_object.fits and by_object.verdict == by_path.verdict
    assert without_names(json.loads(by_object.to_json())) == without_names(json.loads(by_path.to_json()))
    assert json.loads(by_object.to_json())["model"] == "MLP"


def test_a_module_is_planned_in_its_own_dtype():
    def weight_bytes(dtype: torch.dtype) -> int:
        module = MLP().to(dtype)
        result = tileplan.plan(module, example(dtype), machine="n150", what_if=False)
        return max(b["bytes"] for b in buffers(result) if b["buffer_type"] == "DRAM")

    # the largest DRAM buffer is a [256, 1024] weight: 4 bytes a value in f32, 2 in bf16
    assert weight_bytes(torch.float32) == 256 * 1024 * 4
    assert weight_bytes(torch.bfloat16) == 256 * 1024 * 2


def test_the_what_if_rows_re_plan_the_object_and_name_the_api_call(tmp_path):
    result = tileplan.plan(mlp(), example(), machine="n150")
    (tmp_path / "mlp.json").write_text(result.to_json())
    what_if = json.loads(result.to_json())["what_if"]
    assert what_if["command"] == "tileplan.plan(MLP, example_inputs, machine='n150', frontend='tt-mlir', opt_level=0)"
    rows = {(r["knob"], r["value"]): r for r in what_if["rows"]}
    assert set(rows) == {("opt_level", "1"), ("opt_level", "2"), ("weights", "bfp8"), ("weights", "bfp4")}
    assert rows[("weights", "bfp8")]["command"] == ("tileplan.plan(MLP, example_inputs, machine='n150', "
                                                    "frontend='tt-mlir', opt_level=0, weights='bfp8')")
    assert all(r["fits"] for r in rows.values())


def test_a_notebook_user_sees_tt_mlirs_own_message_for_qwen2_5_vls_patch_embed():
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionPatchEmbed

    module = Qwen2_5_VisionPatchEmbed(patch_size=14, temporal_patch_size=2, in_channels=3,
                                      embed_dim=1280).to(torch.bfloat16)
    result = tileplan.plan(module, (torch.zeros(64, 1176, dtype=torch.bfloat16),), machine="n300",
                           tt_version="2026-03-20")
    assert not result.fits
    assert MESSAGE_7351 in result.verdict
    rows = json.loads(result.to_json())["what_if"]["rows"]
    latest = next(r for r in rows if r["knob"] == "tt_version")
    assert latest["fits"] and latest["command"].startswith("tileplan.plan(Qwen2_5_VisionPatchEmbed, example_inputs, "
                                                           "machine='n300'")


def tiny_llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=512, max_position_embeddings=512)
    torch.manual_seed(0)
    return LlamaForCausalLM(config).to(torch.bfloat16).eval()


@pytest.mark.parametrize("kind", ["dynamic", "static"])
def test_a_decoder_module_plans_one_decoding_step_as_its_config_json_does(kind, tmp_path):
    module = tiny_llama()
    config = tmp_path / "tiny-llama" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({**module.config.to_dict(), "torch_dtype": "bfloat16",
                                  "architectures": ["LlamaForCausalLM"]}))
    ids = torch.zeros(1, 1, dtype=torch.long)
    by_object = tileplan.plan(module, (ids,), machine="n150", kv_cache=256, kv_cache_kind=kind, what_if=False)
    by_path = tileplan.plan(str(config), machine="n150", kv_cache=256, kv_cache_kind=kind, what_if=False)
    (tmp_path / "step.json").write_text(by_object.to_json())
    same = ("buffers", "circular_buffers", "memory", "operations", "programs", "verdict", "reproduce")
    assert {k: json.loads(by_object.to_json())[k] for k in same} == {k: json.loads(by_path.to_json())[k] for k in same}
    assert json.loads(by_object.to_json())["frontend"]["options"]["kv_cache"] == 256
    names = [f"model.layers.{i}.kv_cache_{kv}" for i in (0, 1) for kv in ("key", "value")]
    caches = {b["name"]: b["bytes"] for b in buffers(by_object) if b["name"] in names}
    # 2 layers x keys and values, each [1, 2 heads, 256 positions, 16] in bf16 as tiles (16 columns padded to 32)
    assert caches == dict.fromkeys(names, 1 * 2 * 256 * 32 * 2)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: tileplan.plan(mlp(), example(), machine="n150", frontend="tt-transformers"),
     "the tt-transformers frontend plans a model by its name or config.json"),
    (lambda: tileplan.plan(mlp(), example(), machine="n150", batch=4),
     "batch=: MLP has fixed shapes"),
    (lambda: tileplan.plan(mlp(), None, machine="n150"),
     "a torch.nn.Module needs example_inputs=(x, ...) to be exported"),
    (lambda: tileplan.plan("tests/data/tt_configs/llama-3.2-1b.json", example(), machine="n150"),
     "example_inputs= is for a model given as a torch.nn.Module"),
    (lambda: tileplan.plan(mlp(), example(), machine="n150", kv_cache=16),
     "a step with the cache on failed"),
    (lambda: tileplan.plan(42, None, machine="n150"),
     "cannot plan a int: expected a torch.nn.Module"),
])
def test_what_the_api_cannot_plan_is_refused_in_one_line(call, message):
    with pytest.raises((InputError, ModelError)) as raised:
        call()
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_siglip_vision_tower_with_its_attention_pooling_head_plans():
    """SigLIP's head is a torch.nn.MultiheadAttention: its attention is 3-D ([batch, S, D],
    one head), decomposed as tt-mlir's SDPA decomposition is, its scale of the scores' rank."""
    import transformers as T

    config = T.SiglipVisionConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                                  image_size=32, patch_size=8)
    with torch.device("meta"):
        model = T.SiglipVisionModel(config).to(torch.bfloat16).eval()
        image = torch.zeros(1, 3, 32, 32, dtype=torch.bfloat16)
    result = tileplan.plan(model, (image,), machine="n150", what_if=False)
    report = json.loads(result.to_json())
    softmaxes = [n for n, k in zip(report["operations"]["name"], report["operations"]["kind"]) if k == "ttnn.softmax"]
    assert softmaxes == ["encoder.layers.0.self_attn.attention.softmax", "encoder.layers.1.self_attn.attention.softmax",
                         "head.attention.attention.softmax"]
    assert result.fits
