"""tt-transformers' precisions and program configs as the frontend lowers them,
against model_config.py and the circular-buffer arithmetic of tt-frontends A10 (each
figure derived there from the factories), including the three code comments the
fidelity benchmark does not run (tt-outcomes T12-T14)."""

from __future__ import annotations

import pytest
from tt_transformers_support import cb_bytes, plan

from tileplan.targets.tenstorrent.frontends.tt_transformers import Mode, Preset, TtTransformersOptions
from tileplan.targets.tenstorrent.frontends.tt_transformers.precision import (
    BF16,
    BFP4,
    BFP8,
    Fidelity,
    accuracy,
    decoders_precision,
    performance,
)
from tileplan.targets.tenstorrent.ops.base import MathFidelity


def test_performance_presets() -> None:
    """performance: FF1_FF3 bfp4 with LoFi; Qwen2.5-7B: bf16 attention and KV cache with
    HiFi4; Phi-3-mini: FP16 accumulation in the prefill QKV matmul."""
    llama = performance("Llama-3.1-8B", "Llama-3.1-8B-Instruct")
    assert (llama.ff1_ff3, llama.li_ff1_ff3, llama.ff2, llama.wqkv, llama.kv_cache) == (
        BFP4, Fidelity.LOFI, BFP8, BFP8, BFP8)
    qwen = performance("Qwen2.5-7B", "Qwen2.5-7B-Instruct")
    assert (qwen.wqkv, qwen.kv_cache, qwen.ff1_ff3, qwen.li_qkv_prefill) == (BF16, BF16, BFP8, Fidelity.HIFI4)
    assert performance("Phi-3-mini-128k-instruct", "Phi-3-mini-128k-instruct").li_qkv_prefill is Fidelity.HIFI2_FP16
    assert performance("Phi-3.5-mini-instruct", "Phi-3.5-mini-instruct").li_qkv_prefill is Fidelity.HIFI2


def test_accuracy_presets() -> None:
    llama = accuracy("Llama-3.2-1B", "Llama-3.2-1B-Instruct")
    assert (llama.ff1_ff3, llama.wqkv, llama.li_ff1_ff3) == (BFP8, BFP8, Fidelity.HIFI2_FP16)
    qwen3 = accuracy("Qwen3-8B", "Qwen3-8B")
    assert (qwen3.wqkv, qwen3.kv_cache, qwen3.wo, qwen3.sdpa_decode) == (BF16, BF16, BF16, Fidelity.HIFI4)


def test_fidelity_compute_configs() -> None:
    """ModelArgs' compute kernel configs: HIFI2 = HiFi2, approx, fp32 accumulation, packer
    L1 accumulation; HIFI2_FP16 without fp32; LOFI LoFi."""
    assert Fidelity.HIFI2.compute.fp32_dest_acc_en and Fidelity.HIFI2.compute.math_fidelity is MathFidelity.HIFI2
    assert not Fidelity.HIFI2_FP16.compute.fp32_dest_acc_en
    assert Fidelity.LOFI.compute.math_fidelity is MathFidelity.LOFI


def test_decoder_files() -> None:
    """Llama-3.1-8B-Instruct's performance_decoder_config.json names decoder 31 (FF1_FF3
    bfp8): the others take the preset of the placeholder 'model' (bfp4); Qwen3-8B's
    names decoder 36 of its 36: every layer the placeholder preset."""
    llama = decoders_precision("Llama-3.1-8B-Instruct", "Llama-3.1-8B", 32, Preset.PERFORMANCE)
    assert llama.layer(31).ff1_ff3 is BFP8 and llama.layer(30).ff1_ff3 is BFP4
    assert llama.layer(31).li_ff1_ff3 is Fidelity.LOFI and llama.layer(31).wqkv is BFP8
    qwen3 = decoders_precision("Qwen3-8B", "Qwen3-8B", 36, Preset.PERFORMANCE)
    assert {qwen3.layer(i).ff1_ff3 for i in range(36)} == {BFP4}
    assert decoders_precision("Qwen3-8B", "Qwen3-8B", 36, Preset.ACCURACY).layer(0).wqkv is BF16


@pytest.mark.parametrize(("preset", "ff1"), [(Preset.PERFORMANCE, 688_128), (Preset.ACCURACY, 950_272)])
def test_llama_1b_prefill_matmul_cbs(preset: Preset, ff1: int) -> None:
    """tt-frontends A10, Llama-3.2-1B 4k prefill on N150 (1,024-row MLP batches): QKV
    648,704, WO 374,784, FF1 688,128 (bfp4 LoFi) / 950,272 (bfp8 HiFi2-FP16), FF2 274,432."""
    p = plan("Llama-3.2-1B-Instruct", "n150", TtTransformersOptions(prefill_chunk=4096, kv_cache=8192, preset=preset))
    assert p.fits
    assert cb_bytes(p, "layers.0.attention.wqkv") == 648_704
    assert cb_bytes(p, "layers.0.attention.wo") == 374_784
    assert cb_bytes(p, "layers.0.feed_forward.w1") == ff1
    assert cb_bytes(p, "layers.0.feed_forward.w2") == 274_432


def test_llama_8b_decode_dram_sharded_cbs() -> None:
    """tt-frontends A10, Llama-3.1-8B decode on N150 (DRAM-sharded matmuls): QKV 323,584,
    WO 233,728, FF1 221,440, FF2 291,136."""
    p = plan("Llama-3.1-8B-Instruct", "n150", TtTransformersOptions(Mode.DECODE, kv_cache=4096))
    assert p.fits
    assert [cb_bytes(p, f"layers.0.{n}") for n in ("attention.wqkv", "attention.wo", "feed_forward.w1",
                                                    "feed_forward.w2")] == [323_584, 233_728, 221_440, 291_136]


@pytest.mark.parametrize(("model", "machine", "cb"), [
    ("Llama-3.2-1B-Instruct", "n150", 720_896), ("Llama-3.2-3B-Instruct", "n150", 832_512),
    ("Llama-3.1-8B-Instruct", "n150", 1_090_560), ("Qwen2.5-7B-Instruct", "n300", 974_080),
    ("gemma-3-4b-it", "n150", 690_944)])
def test_lm_head_split_cbs(model: str, machine: str, cb: int) -> None:
    """tt-frontends A10 / tt-outcomes T14: the first LM-head split's DRAM-sharded matmul;
    Llama-3.1-8B's 1,090,560 B is the '668 columns per core is close to the L1 limit'."""
    p = plan(model, machine, TtTransformersOptions(Mode.DECODE, kv_cache=4096))
    assert p.fits and cb_bytes(p, "lm_head.split0") == cb


def test_phi3_mini_fp16_qkv_prefill_and_phi35_without_it() -> None:
    """tt-outcomes T12: 'running out of L1 memory ... using FP16 accumulate in attention
    prefill QKV Matmul': Phi-3-mini-128k's QKV CBs at 2,048 rows are 700,928 B; Phi-3.5-mini
    (same sizes; its name does not start Phi-3-mini) keeps fp32 accumulation, 1,880,576 B
    of CBs from the 104,224-B base: beyond L1."""
    fixed = plan("Phi-3-mini-128k-instruct", "n150", TtTransformersOptions(prefill_chunk=2048, kv_cache=4096))
    assert fixed.fits and cb_bytes(fixed, "layers.0.attention.wqkv") == 700_928
    unfixed = plan("Phi-3.5-mini-instruct", "n150", TtTransformersOptions(prefill_chunk=2048, kv_cache=4096))
    assert not unfixed.fits
    assert unfixed.verdict.message == ("Statically allocated circular buffers on core range [(x=0,y=0) - (x=7,y=7)] "
                                       "grow to 1984800 B which is beyond max L1 size of 1499136 B")


def test_llama_8b_prefill_len_cutoff_512() -> None:
    """tt-outcomes T13 ('Reducing prefill_len_cutoff to 512'): Llama-3.1-8B accuracy on N150,
    FF1 CBs 1,269,760 B in 512-row batches; with the cutoff left at 1,024, 1,564,672 B:
    beyond L1."""
    options = TtTransformersOptions(prefill_chunk=4096, kv_cache=8192, preset=Preset.ACCURACY)
    ok = plan("Llama-3.1-8B-Instruct", "n150", options)
    assert ok.fits and cb_bytes(ok, "layers.0.feed_forward.w1") == 1_269_760
    wide = plan("Llama-3.1-8B-Instruct", "n150", options, patch={"prefill_len_cutoff": 1024})
    assert not wide.fits and cb_bytes(wide, "layers.0.feed_forward.w1") == 1_564_672
    assert "grow to 1668896 B which is beyond max L1 size" in (wide.verdict.message or "")
