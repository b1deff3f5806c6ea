"""tt-transformers' ModelArgs and the frontend's options (frontends/tt_transformers/
model_args.py, options.py) against model_config.py: names, padding, cutoffs, chunk
tables, LM head grids and splits, and the one-line refusals."""

from __future__ import annotations

import pytest
from tt_transformers_support import config, device

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontends.tt_transformers import Mode, Preset, TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import (
    ARCHITECTURES,
    base_model_name,
    model_args,
)


@pytest.mark.parametrize(("name", "base"), [
    ("Llama-3.1-8B-Instruct", "Llama-3.1-8B"), ("Qwen2.5-VL-7B-Instruct", "Qwen2.5-VL-7B"),
    ("Phi-3-mini-128k-instruct", "Phi-3-mini-128k-instruct"), ("Mistral-Small-3.1-24B-Instruct-2503",
                                                                "Mistral-Small-3.1-24B"),
    ("DeepSeek-R1-Distill-Qwen-14B", "DeepSeek-R1-Distill-Qwen-14B"), ("gemma-3-4b-it", "gemma-3-4b")])
def test_base_model_name(name: str, base: str) -> None:
    """common.py get_base_model_name: up to '<n>B' when a '-' follows."""
    assert base_model_name(name) == base


def test_llama_8b_on_n150_and_n300() -> None:
    """N150: prefill_len_cutoff forced to 512, chunk 4k; N300: 1,024 and 64k; the LM head
    on 8 x 8 cores of 668 columns = 42,752 a split, three splits of the 128,256 (one
    chip) or 64,128 (n300: 42,752 + 21,376) columns."""
    one = model_args(config("Llama-3.1-8B-Instruct"), device("n150"))
    two = model_args(config("Llama-3.1-8B-Instruct"), device("n300"))
    assert (one.dim, one.n_heads, one.n_kv_heads, one.head_dim, one.hidden_dim) == (4096, 32, 8, 128, 14336)
    assert (one.prefill_len_cutoff, one.max_prefill_chunk_size) == (512, 4096)
    assert (two.prefill_len_cutoff, two.max_prefill_chunk_size) == (1024, 65536)
    assert one.lm_head_grid == (8, 8) and one.lm_head_splits == (42752, 42752, 42752)
    assert two.lm_head_splits == (42752, 21376)
    assert (two.n_local_heads, two.n_local_kv_heads) == (16, 4)


def test_qwen_7b_pads_the_mlp_on_n300_and_is_refused_on_one_chip() -> None:
    """16 padding cores x 32 x 2 chips: 18,944 -> 19,456; cutoff 512 on N300."""
    args = model_args(config("Qwen2.5-7B-Instruct"), device("n300"))
    assert (args.unpadded_hidden_dim, args.hidden_dim, args.prefill_len_cutoff) == (18944, 19456, 512)
    assert args.qkv_bias and args.max_prefill_chunk_size == 32 * 1024
    with pytest.raises(InputError, match="only supported on 2 or 4 devices") as e:
        model_args(config("Qwen2.5-7B-Instruct"), device("n150"))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("model", "grid"), [
    ("Llama-3.2-1B-Instruct", (8, 8)), ("Llama-3.2-3B-Instruct", (8, 6)), ("Qwen2.5-7B-Instruct", (8, 7)),
    ("gemma-3-4b-it", (8, 5))])
def test_lm_head_grids(model: str, grid: tuple[int, int]) -> None:
    """tt-frontends A8: rows from 8 down until dim divides 32 x rows x 8."""
    machine = "n300" if model.startswith("Qwen2.5-7B") else "n150"
    assert model_args(config(model), device(machine)).lm_head_grid == grid


def test_a_model_the_table_does_not_name_gets_4k_and_blackhole_512() -> None:
    mistral = model_args(config("Mistral-7B-Instruct-v0.3"), device("n150"))
    assert (mistral.max_prefill_chunk_size, mistral.chunk_from_table, mistral.prefill_len_cutoff) == (4096, False, 512)
    assert model_args(config("Llama-3.2-1B-Instruct"), device("p150")).prefill_len_cutoff == 512


def test_family_features() -> None:
    qwen3 = model_args(config("Qwen3-8B"), device("n300"))
    gemma = model_args(config("gemma-3-4b-it"), device("n150"))
    assert qwen3.qk_norm and not qwen3.qkv_bias and not qwen3.ff_norms
    assert gemma.qk_norm and gemma.ff_norms and gemma.scaled_embedding and gemma.local_rope
    assert sum(gemma.sliding_layers) == 29 and len(gemma.sliding_layers) == gemma.n_layers == 34


def test_an_architecture_it_does_not_implement_is_one_line_naming_the_supported() -> None:
    cfg = dict(config("Llama-3.2-1B-Instruct"), architectures=["GPTNeoXForCausalLM"])
    with pytest.raises(InputError) as e:
        model_args(cfg, device("n150"))
    text = str(e.value)
    assert "GPTNeoXForCausalLM is not one tt-transformers implements" in text and "\n" not in text
    assert all(arch in text for arch in ARCHITECTURES)


def test_one_tt_transformers_implements_but_tileplan_does_not_plan_says_so() -> None:
    """Mixtral runs in tt-transformers (its mixture-of-experts MLP): the refusal is
    tileplan's, not a claim that tt-transformers lacks it."""
    cfg = dict(config("Mistral-7B-Instruct-v0.3"), architectures=["MixtralForCausalLM"],
               _name_or_path="mistralai/Mixtral-8x7B-Instruct-v0.1")
    with pytest.raises(InputError) as e:
        model_args(cfg, device("n150"))
    text = str(e.value)
    assert "tt-transformers implements MixtralForCausalLM, but tileplan does not plan it yet" in text
    assert "mixture-of-experts" in text and "\n" not in text


def test_a_config_without_a_name_needs_one() -> None:
    cfg = {k: v for k, v in config("Llama-3.2-1B-Instruct").items() if k != "_name_or_path"}
    with pytest.raises(InputError, match="no _name_or_path"):
        model_args(cfg, device("n150"))
    assert model_args(cfg, device("n150"), "meta-llama/Llama-3.2-1B").base_name == "Llama-3.2-1B"


def test_heads_that_do_not_split_over_the_chips_are_refused() -> None:
    cfg = {**config("Llama-3.2-1B-Instruct"), "num_key_value_heads": 3, "num_attention_heads": 33,
           "hidden_size": 33 * 64}
    with pytest.raises(InputError, match="do not split over 2 devices"):
        model_args(cfg, device("n300"))


def test_options_validate_in_one_line() -> None:
    assert TtTransformersOptions(kv_cache=66176, page_block_size=64).max_num_blocks == 1034
    assert TtTransformersOptions(batch=32, kv_cache=1024).kv_positions == 32768
    for kwargs, words in (({"prefill_chunk": 100}, "multiple of 32"), ({"kv_cache": 1000}, "multiple of 32"),
                          ({"batch": 3}, "max_batch_size"), ({"prefill_chunk": 8192, "kv_cache": 4096},
                                                             "kv_cache >= 8192")):
        with pytest.raises(InputError, match=words) as e:
            TtTransformersOptions(**kwargs)  # type: ignore[arg-type]
        assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="performance or accuracy"):
        Preset.parse("fast")
    assert TtTransformersOptions(Mode.PREFILL, batch=32).batch == 32  # the batch sizes a prefill's caches
