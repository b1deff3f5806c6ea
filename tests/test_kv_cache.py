"""Caches: the Python API plans a module whose forward returns a cache (it
passes `use_cache=False`), and `--kv-cache L` / `kv_cache=` plans one decoding step of a
decoder with a cache of L positions per layer, always live, read by the step's
attention; the what-if names the longest cache that fits. Errors name the flags on
the command line and the keywords in Python."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertModel, LlamaConfig, LlamaForCausalLM

import tileplan
from tileplan.app.request import PlanRequest
from tileplan.app.whatif import longest_cache_row
from tileplan.cli.main import main
from tileplan.errors import InputError, ModelError
from tileplan.importers.decode import decode_step

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "intermediate_size": 64, "vocab_size": 128}


def llama(**extra) -> LlamaForCausalLM:
    with torch.device("meta"):
        return LlamaForCausalLM(LlamaConfig(**TINY, **extra)).eval()


@pytest.fixture()
def config(tmp_path: Path) -> str:
    path = tmp_path / "tiny-llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                                "max_position_embeddings": 64, **TINY}))
    return str(path)


def test_a_decoder_whose_forward_returns_a_cache_plans_from_python():
    model = llama(use_cache=True)  # the default configuration: its forward returns a DynamicCache
    result = tileplan.plan(model, example_inputs=(torch.zeros(1, 8, dtype=torch.long, device="meta"),))
    assert result.fits and result.report.scope == "program"
    assert any(v.name == "lm_head.weight" for v in result.report.values)


def test_a_decoding_step_holds_each_layers_cache_for_the_whole_step():
    graph = decode_step(llama(), 24)
    caches = {t.name: t for t in graph.tensors if "kv_cache" in t.name}
    assert set(caches) == {f"model.layers.{i}.kv_cache_{kind}" for i in (0, 1) for kind in ("key", "value")}
    assert all(t.shape == (1, 1, 24, 16) and t.role == "buffer" for t in caches.values())
    assert [t.shape for t in graph.tensors if t.role == "input"] == [(1, 1)]  # one new token
    # the step's attention reads the cache and the step's own key and value: 25 positions
    sdpa = [o for o in graph.ops if o.kind == "sdpa"]
    shapes = {o.output: o.shape for o in graph.ops}
    assert len(sdpa) == 2 and all(shapes[o.inputs[1]][-2] == 25 for o in sdpa)
    assert not any(hasattr(m, "kv_cache_key") for m in llama().modules())  # the module is left as it was


def test_kv_cache_plans_from_the_command_line_with_the_cache_always_live(config: str, tmp_path: Path, capsys):
    out = tmp_path / "step.json"
    assert main(["plan", config, "--kv-cache", "24", "--no-what-if", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["program"]["kv_cache"] == 24 and doc["program"]["architecture"] == "LlamaForCausalLM"
    plan = PlanRequest(model=config, kv_cache=24).plan()
    cached = [v.id for v in plan.values if v.name.endswith(("kv_cache_key", "kv_cache_value"))]
    assert cached and all(set(cached) <= set(plan.steps.live_at(i)) for i in range(len(plan.steps)))
    assert "--kv-cache 24" in capsys.readouterr().out


def test_the_what_if_names_the_longest_cache_that_fits(config: str):
    base = PlanRequest(model=config, kv_cache=16).resolved()
    row = longest_cache_row(base, lambda r: r.plan())
    # a tiny model fits any cache: the search stops at the model's most positions
    assert row.error is None and row.request.kv_cache == 64
    assert row.value == "64 (the longest cache that fits: the model's most positions)"
    assert row.request.command().endswith("--kv-cache 64")


def test_kv_cache_speaks_the_interface_it_came_through(tmp_path: Path, capsys):
    bert = tmp_path / "bert" / "config.json"
    bert.parent.mkdir()
    bert.write_text(json.dumps({"model_type": "bert", "hidden_size": 32, "num_attention_heads": 2,
                                "intermediate_size": 64, "num_hidden_layers": 2, "vocab_size": 100}))
    assert main(["plan", str(bert), "--kv-cache", "8", "--no-what-if", "-o", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kv-cache: BertModel returns no key/value cache" in err
    with pytest.raises(ModelError, match=r"kv_cache=: BertModel returns no key/value cache"):
        tileplan.plan(str(bert), kv_cache=8, what_if=False)
    with torch.device("meta"):
        module = BertModel(BertConfig(hidden_size=32, num_attention_heads=2, intermediate_size=64,
                                      num_hidden_layers=2, vocab_size=100))
    with pytest.raises(ModelError, match=r"kv_cache=: BertModel returns no key/value cache"):
        tileplan.plan(module, kv_cache=8)
    with pytest.raises(InputError, match=r"kv_cache= must be in \[1, 2\^20\], found 0"):
        tileplan.plan(llama(), kv_cache=0)
    assert main(["plan", "--kv-cache", "8", "--no-what-if", "-o", str(tmp_path / "t.json")]) == 2
    assert "--kv-cache is for decoders; a built-in tower is an encoder" in capsys.readouterr().err


def test_knob_errors_name_flags_on_the_command_line_and_keywords_in_python(tmp_path: Path, capsys):
    assert main(["plan", "--layers", "0", "-o", str(tmp_path / "x.json")]) == 2
    assert "--layers must be in [1, 1000], found 0" in capsys.readouterr().err
    with pytest.raises(InputError, match=r"^layers= must be in \[1, 1000\], found 0$"):
        tileplan.plan("siglip-so400m-patch14-384", layers=0)
    with pytest.raises(InputError, match=r"sequence_length= is for text models; a built-in tower's tokens come from "
                                         r"its image size \(image_size=\)"):
        tileplan.plan("siglip-so400m-patch14-384", sequence_length=16, layers=1, what_if=False)
