"""Llama-3.2-Vision (Mllama) through the tt-transformers frontend: ModelArgs' vision sizes
and fusion schedule, the weights in construction order (their bytes against the sums in
docs/notes/MLLAMA-VISION.md section 2.2 and MLLAMA.md section 2.3, worked out by hand from
the tt-transformers sources), the whole-prompt prefill with the vision encoder before it,
the refusals, and the new operations' rules (ttnn.from_torch between operations,
fast_reduce_nc, ttnn.all_gather)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from tt_transformers_support import CONFIGS, config, device

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontends.tt_transformers import FRONTEND, Mode, TtTransformersOptions, build
from tileplan.targets.tenstorrent.frontends.tt_transformers.mllama_args import VisionArgs, fusion_schedule
from tileplan.targets.tenstorrent.frontends.tt_transformers.model_args import model_args
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import Preset
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops import plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_all_gather import AllGatherAttrs, AllGatherFactory, factory_for
from tileplan.targets.tenstorrent.ops.tt_ccl import CclAttrs
from tileplan.targets.tenstorrent.ops.tt_fast_reduce_nc import ReduceNcAttrs
from tileplan.targets.tenstorrent.ops.tt_host import HostWriteAttrs
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import TtPlan
from tileplan.targets.tenstorrent.tiles import DataType, Layout

MLLAMA = "Llama-3.2-11B-Vision-Instruct"
DEMO = TtTransformersOptions(prefill_chunk=1024, kv_cache=8192, preset=Preset.ACCURACY, paged=False, vision=True)


def planned(machine: str, options: TtTransformersOptions = DEMO) -> TtPlan:
    d = device(machine)
    return plan_tt(build(config(MLLAMA), options, d, MLLAMA), d)


def weight_bytes(p: TtPlan, prefix: str) -> int:
    return sum(b.bytes for b in p.buffers if b.name.startswith(prefix) and b.use.name == "PARAMETER")


def test_model_args_read_the_vision_tower_and_the_fusion_schedule() -> None:
    """_set_vision_params: 1,601 tokens a tile (40 x 40 patches and a class token), 1,632
    padded, 6,528 for 4 tiles, heads 80 -> 96, 8 aspect ratios; 40 HF layers less 8
    cross-attention ones; the blocks before layers 3, 7, ..., 31."""
    a = model_args(config(MLLAMA), device("n300"))
    v = a.vision
    assert v is not None and a.family == "mllama" and a.n_layers == 32 and a.cross_attention_layers == 8
    assert (v.chunk_tokens, v.max_mm_seq, v.vision_tokens, v.padded_head_dim, v.aspect_ratios, v.patch_features) == \
        (1601, 1632, 6528, 96, 8, 608)
    assert a.cross_schedule == (3, 7, 11, 15, 19, 23, 27, 31) == fusion_schedule(32, 8)
    assert fusion_schedule(40, 8) == (4, 9, 14, 19, 24, 29, 34, 39)
    with pytest.raises(InputError, match="vision_output_dim 7000"):
        VisionArgs.from_config(dict(config(MLLAMA)["vision_config"], vision_output_dim=7000))


@pytest.mark.parametrize(("machine", "vision", "cross"), [
    ("n150", 1_916_707_328, 236_437_504), ("n300", 1_039_704_576, 118_218_752)])
def test_the_weights_have_the_bytes_the_sources_give(machine: str, vision: int, cross: int) -> None:
    """The vision model a chip (MLLAMA-VISION.md 2.2: conv1, embeddings, ln_pre / ln_post,
    32 + 8 blocks with heads padded to 96, tile embeddings, the projection), and one
    cross-attention block without its norms (MLLAMA.md 2.3: wq, wk, wv, wo bfp8
    interleaved, the two gates, the MLP on padded DRAM shards)."""
    p = planned(machine)
    assert weight_bytes(p, "vision_model.") == vision
    block = "text_model.cross_attention_layers.0."
    norms = sum(b.bytes for b in p.buffers
                if b.name.startswith(block) and "norm" in b.name and b.use.name == "PARAMETER")
    assert weight_bytes(p, block) - norms == cross
    lm = [b for b in p.buffers if b.name.startswith("text_model.output.weight")]
    assert len(lm) == 8 // device(machine).chips and all(b.bytes == 4096 * 16032 * 1088 // 1024 for b in lm)


def test_the_vision_encoder_runs_before_the_prompt_is_uploaded() -> None:
    """The encoder mask [1, 1, 6528, 6528] bf16 (85,229,568 B) and the prompt's inputs
    are written between operations (ttnn.from_torch), the inputs after the vision
    tokens [1, 1, 6528, 4096] are made; the first cross-attention block runs before text
    layer 3."""
    p = planned("n300")
    assert p.fits
    ops = p.program.ops
    names = [o.name for o in ops]
    mask = names.index("vision_model.vision_encoder.attn_mask")
    tokens = names.index("vision_tokens.pad")
    prompt = names.index("h")
    assert ops[mask].kind is OpKind.FROM_TORCH and mask < tokens < prompt
    assert next(b.bytes for b in p.buffers if b.name == "vision_model.vision_encoder.attn_mask") == 85_229_568
    assert next(b.bytes for b in p.buffers if b.name == "vision_tokens.pad") == 6528 * 4096 * 2
    first_cross = next(i for i, n in enumerate(names) if n.startswith("text_model.cross_attention_layers.0."))
    assert names.index("layers.2.add_mlp") < first_cross < names.index("layers.3.attention_norm")
    local = [n for n in names if n.endswith(".attn.sdpa")]
    assert len(local) == 40


def test_the_published_buffer_of_tt_metal_31076_is_w3s_output() -> None:
    """tt-metal #31076: an N300 prefilling 8,010 tokens (padded 8,192) failed to allocate
    117,440,512 B at mlp.py's w3: 8,192 x 14,336 / 2 bf16 values, one chip's w3 output
    for the whole prompt (Mllama's prefill is not chunked)."""
    o = TtTransformersOptions(prefill_chunk=8192, kv_cache=8192, preset=Preset.ACCURACY, paged=False, vision=True)
    p = planned("n300", o)
    sizes = {b.bytes for b in p.buffers if b.name.endswith("feed_forward.w3") and b.use.name == "ACTIVATION"}
    assert sizes == {117_440_512}


def test_lifetimes_follow_pythons_references() -> None:
    """Each cross-attention block's input goes when the text model rebinds `h` (no
    decoder output outlives the next layer); the encoder's x (block 0's input) lives until
    the local transformer returns; forward_prefill's Q, its discarded `_` half, K and V
    live until it returns (after wo)."""
    p = planned("n300")
    names = [o.name for o in p.program.ops]
    by_name = {b.name: b for b in p.buffers}
    for j, i in enumerate((2, 6, 10, 14, 18, 22, 26, 30)):
        out = by_name[f"layers.{i}.add_mlp"]
        assert out.last_op == names.index(f"text_model.cross_attention_layers.{j}.add_mlp")
    block0_in = by_name["vision_model.vision_encoder.pad.tilize"]
    assert block0_in.last_op == names.index("vision_model.vision_encoder.transformer.resblocks.31.add_mlp")
    att = "text_model.cross_attention_layers.0.attention."
    wo = names.index(att + "wo")
    for name in (att + "q_norm", att + "k_norm", att + "q_heads.2"):
        assert by_name[name].last_op is not None and by_name[name].last_op > wo, name


def test_refusals_are_one_line() -> None:
    d = device("n300")
    cfg = config(MLLAMA)
    for options, words in (
            (TtTransformersOptions(prefill_chunk=1024, kv_cache=8192, paged=False, vision=True),
             "DecodersPrecision.accuracy"),
            (TtTransformersOptions(prefill_chunk=16384, kv_cache=16384, preset=Preset.ACCURACY, vllm=True,
                                   vision=True), "does not support prompts longer than 8192 tokens on N300"),
            (TtTransformersOptions(prefill_chunk=1024, kv_cache=8192, preset=Preset.ACCURACY, vision=True),
             "vLLM's are (its page tables)"),
            (TtTransformersOptions(Mode.DECODE, kv_cache=8192, preset=Preset.ACCURACY, paged=False, vllm=True,
                                   vision=True), "vLLM's are (its page tables)")):
        with pytest.raises(InputError) as e:
            build(cfg, options, d, MLLAMA)
        assert words in str(e.value) and "\n" not in str(e.value)
    cfg90 = dict(cfg, _name_or_path="meta-llama/Llama-3.2-90B-Vision-Instruct")
    with pytest.raises(InputError, match="bfloat8_b"):
        build(cfg90, DEMO, device("t3k"), None)
    with pytest.raises(InputError, match="before PR #30414"):
        build(cfg, DEMO, device("n300", version="2025-10-08"), MLLAMA)
    assert factory_for("2025-10-10") is AllGatherFactory.ASYNC_MINIMAL
    assert factory_for("2026-06-26") is AllGatherFactory.MULTICAST and factory_for("2025-10-09") is None


@pytest.mark.parametrize("vllm", [False, True])
def test_a_decode_step(vllm: bool) -> None:
    """One decode step for 4 users (llama_vision_model.py prepare_inputs_decode,
    llama_cross_attention.py forward_decode): the inputs written first, the tilized
    cross-attention mask [1, 4, 16 -> 32, 6528] bf16 (1,671,168 B), the residual held for
    the step, 8 cross-attention SDPA decodes over the cross caches (vLLM: through the
    cross page table) before layers 3, 7, ..., 31 and 32 self-attention ones."""
    o = TtTransformersOptions(Mode.DECODE, kv_cache=8192, batch=4, preset=Preset.ACCURACY, paged=vllm, vllm=vllm,
                              vision=True)
    p = planned("n300", o)
    assert p.fits
    names = [op.name for op in p.program.ops]
    by_name = {b.name: b for b in p.buffers}
    assert names[:4] == ["h", "xattn_mask.host", "full_text_mask_expand_1NSH.host", "full_text_mask_expand_11SD.host"]
    assert by_name["xattn_mask"].bytes == 1_671_168
    sdpa = [n for n, op in zip(names, p.program.ops) if op.kind is OpKind.SDPA_DECODE]
    assert len(sdpa) == 40 and sum(n.startswith("text_model.cross_attention_layers.") for n in sdpa) == 8
    assert names.index("text_model.cross_attention_layers.0.attention.sdpa_decode") < names.index(
        "layers.3.attention.sdpa_decode")
    cross = next(op for op in p.program.ops if op.name == "text_model.cross_attention_layers.0.attention.sdpa_decode")
    assert len(cross.inputs) == (5 if vllm else 4)  # q, k, v, the mask (and the cross page table)
    assert by_name["h.to_residual"].last_op == len(names) - 1  # held by the generator for the whole step


def test_the_frontend_runs_the_vision_demos_way() -> None:
    """Accuracy and unpaged caches by default, no precision knob; the reproduction is the
    vision demo's call."""
    o = FRONTEND.options(str(CONFIGS / MLLAMA), {"prefill_chunk": 2048}, device("n300"))
    assert (o.preset, o.paged, o.vision, o.prefill_chunk) == (Preset.ACCURACY, False, True, 2048)
    assert all(k.key != "precision" for k in FRONTEND.knobs(o, device("n300")))


def test_the_cli_plans_it_and_check_re_derives_the_report(tmp_path: Path) -> None:
    out = io.StringIO()
    report = tmp_path / "mllama.json"
    with contextlib.redirect_stdout(out):
        code = main(["plan", str(CONFIGS / MLLAMA), "--machine", "n300", "--frontend", "tt-transformers",
                     "--prefill-chunk", "8192", "-o", str(report)])
    lines = out.getvalue().splitlines()
    assert code == 0 and lines[1].startswith("fits on n300")
    assert "    create_multimodal_model(mesh_device, max_batch_size=1, max_seq_len=131072)" in lines
    doc = json.loads(report.read_text())
    assert doc["frontend"]["options"]["precision"] == "accuracy"
    check = io.StringIO()
    with contextlib.redirect_stdout(check):
        assert main(["check", str(report)]) == 0
    assert "consistent" in check.getvalue()


def spec(shape: tuple[int, ...], dtype: DataType = DataType.BFLOAT16, layout: Layout = Layout.TILE) -> TensorSpec:
    return TensorSpec(shape, dtype, layout, DRAM_INTERLEAVED)


def test_from_torch_allocates_its_tensor_and_runs_nothing() -> None:
    d = device("n300")
    s = spec((1, 1, 8192, 2048))
    p = plan_op(OpKind.FROM_TORCH, OpRequest((), OutputRequest(), _target(d)), HostWriteAttrs(s))
    assert p.programs == () and p.outputs == (s,) and p.buffers[0].pages == 8192 * 2048 // 1024


def test_fast_reduce_nc_circular_buffers() -> None:
    """fast_reduce_nc_program_factory.cpp: granularity 2 for 2 rows to reduce: c_0 4
    tiles, c_1 one bf16 tile, c_24 one, c_16 two: 16,384 B on all 64 cores."""
    d = device("n300")
    p = plan_op(OpKind.FAST_REDUCE_NC, OpRequest((spec((1, 2, 6528, 1280)),), OutputRequest(), _target(d)),
                ReduceNcAttrs(1))
    assert p.outputs[0].shape == (1, 1, 6528, 1280) and p.cb_peak == 16_384


def test_ttnn_all_gather_by_build() -> None:
    """PR #48301: the multicast factory's one CB, 3 x (2 pages a packet x 3) bf16 tiles =
    36,864 B; PR #30414: all_gather_async's program with the decision tree's 4 workers."""
    d = device("n300")
    x = spec((1, 1, 32, 16032))
    req = OpRequest((x,), OutputRequest(), _target(d))
    new = plan_op(OpKind.ALL_GATHER, req, AllGatherAttrs(CclAttrs(3), AllGatherFactory.MULTICAST))
    old = plan_op(OpKind.ALL_GATHER, req, AllGatherAttrs(CclAttrs(3), AllGatherFactory.ASYNC_MINIMAL))
    assert new.outputs[0].shape == old.outputs[0].shape == (1, 1, 32, 32064)
    assert new.cb_peak == 36_864 and old.cb_peak == 3 * 2 * 2048
    assert len(old.programs[0].cores.ranges) == 8  # 4 workers a direction, 2 directions


def _target(d):  # type: ignore[no-untyped-def]
    from tileplan.targets.tenstorrent.plan import op_target
    return op_target(d)


@pytest.mark.parametrize("mode", [Mode.PREFILL, Mode.DECODE])
def test_the_logits_end_row_major(mode: Mode) -> None:
    """ttnn_prefill_forward / ttnn_decode_forward: `ttnn.to_layout(logits, ROW_MAJOR)`; one
    tile row of 4,008 bf16 tiles is too wide for L1, so untilize's block factory runs it
    (squares of 64 tiles, c_0 and c_16 of 64 x 2,048 B); the rows stay in DRAM."""
    options = DEMO if mode is Mode.PREFILL else TtTransformersOptions(
        Mode.DECODE, kv_cache=8192, preset=Preset.ACCURACY, paged=False, vision=True)
    p = plan_tt(build(config(MLLAMA), options, device("n300"), MLLAMA), device("n300"))
    last = p.ops[-1]
    assert last.name == "text_model.to_layout"
    program = p.programs[last.programs[0]].program
    assert program.name == "UntilizeMultiCoreBlockProgramFactory"
    assert [(cb.pages, cb.page_bytes) for cb in program.circular_buffers] == [(64, 2048), (64, 2048)]
    rows = next(b for b in p.buffers if b.name == "text_model.to_layout")
    assert rows.bytes == 32 * 128256 * 2 and rows.page_bytes == 128256 * 2
