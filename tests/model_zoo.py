"""The coverage table's models: a small configuration (2 layers, hidden
sizes of 32) of each of the common architectures transformers ships, and how each is
planned: through torch.export on the meta device, through an ONNX exporter (a file
saved graph-only: every tensor external, the data file deleted) and as a saved
`.pt2`. `tests/test_model_coverage.py` runs them in the suite; `benchmarks/
model_coverage.py` runs every exporter on every model and writes
`docs/model-coverage.md`, which the test checks.

A cell says what happened: `plans (N parameters)` when the plan went to the end,
its report passed `tileplan check` and it holds exactly the parameters the model (or
the file) holds; otherwise why not, in one line.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers as T

from tileplan.errors import TileplanError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.model.machine import IPU21
from tileplan.model.precision import from_option
from tileplan.planner.plan import plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text, to_json_text

SEQ = 16
DOC = Path(__file__).resolve().parent.parent / "docs" / "model-coverage.md"

TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=128,
            max_position_embeddings=64)
DECODER = dict(TEXT, num_key_value_heads=1, use_cache=False)
VISION = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32,
              patch_size=8)
SEQ2SEQ = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
               encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=128, max_position_embeddings=64, use_cache=False,
               pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
T5 = dict(d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, vocab_size=128, use_cache=False)
AUDIO = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=128,
             conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
             num_conv_pos_embedding_groups=2)
SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)


def ids(device: str, n: int = SEQ) -> torch.Tensor:
    return torch.zeros(1, n, dtype=torch.long, device=device)


def image(device: str, size: int = 32) -> torch.Tensor:
    return torch.zeros(1, 3, size, size, device=device)


@dataclass(frozen=True)
class Case:
    """One architecture: its family, how to build it (called under a device), and its
    inputs on a device (positional, then keyword: the names the model takes)."""

    name: str
    family: str
    build: Callable[[], Any]
    inputs: Callable[[str], dict[str, torch.Tensor]]


def text(device: str) -> dict[str, torch.Tensor]:
    return {"input_ids": ids(device)}


def pixels(device: str) -> dict[str, torch.Tensor]:
    return {"pixel_values": image(device)}


def seq2seq(device: str) -> dict[str, torch.Tensor]:
    return {"input_ids": ids(device), "decoder_input_ids": ids(device, 8)}


def speech(device: str) -> dict[str, torch.Tensor]:
    return {"input_values": torch.zeros(1, 1600, device=device)}


def pair(device: str) -> dict[str, torch.Tensor]:
    return {"input_ids": ids(device), "pixel_values": image(device)}


ENC, DEC, S2S, VIS, AUD, MM = ("encoder", "decoder (GQA, rotary)", "encoder-decoder", "vision", "audio",
                               "text-image pair")
CASES: tuple[Case, ...] = (
    Case("BERT", ENC, lambda: T.BertModel(T.BertConfig(**TEXT)), text),
    Case("RoBERTa", ENC, lambda: T.RobertaModel(T.RobertaConfig(**TEXT)), text),
    Case("XLM-RoBERTa", ENC, lambda: T.XLMRobertaModel(T.XLMRobertaConfig(**TEXT)), text),
    Case("DistilBERT", ENC, lambda: T.DistilBertModel(T.DistilBertConfig(
        dim=32, n_layers=2, n_heads=2, hidden_dim=64, vocab_size=128, max_position_embeddings=64)), text),
    Case("ALBERT", ENC, lambda: T.AlbertModel(T.AlbertConfig(**TEXT, embedding_size=16)), text),
    Case("ELECTRA", ENC, lambda: T.ElectraModel(T.ElectraConfig(**TEXT, embedding_size=16)), text),
    Case("DeBERTa-v2", ENC, lambda: T.DebertaV2Model(T.DebertaV2Config(**TEXT)), text),
    Case("MPNet", ENC, lambda: T.MPNetModel(T.MPNetConfig(**TEXT)), text),
    Case("ModernBERT", ENC, lambda: T.ModernBertModel(T.ModernBertConfig(
        **TEXT, global_attn_every_n_layers=1, cls_token_id=1, sep_token_id=2, **SPECIAL)), text),
    Case("GPT-2", "decoder", lambda: T.GPT2Model(T.GPT2Config(
        n_embd=32, n_layer=2, n_head=2, vocab_size=128, n_positions=64, use_cache=False, bos_token_id=1,
        eos_token_id=2)), text),
    Case("GPT-NeoX", "decoder (rotary)", lambda: T.GPTNeoXModel(T.GPTNeoXConfig(**TEXT, use_cache=False)), text),
    Case("GPT-J", "decoder (rotary)", lambda: T.GPTJModel(T.GPTJConfig(
        n_embd=32, n_layer=2, n_head=2, vocab_size=128, n_positions=64, rotary_dim=8, use_cache=False,
        bos_token_id=1, eos_token_id=2)), text),
    Case("OPT", "decoder", lambda: T.OPTModel(T.OPTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=64, vocab_size=128,
        max_position_embeddings=64, word_embed_proj_dim=32, use_cache=False, **SPECIAL)), text),
    Case("BLOOM", "decoder (ALiBi)", lambda: T.BloomModel(T.BloomConfig(
        hidden_size=32, n_layer=2, n_head=2, vocab_size=128, use_cache=False, **SPECIAL)), text),
    Case("Falcon", "decoder (rotary)", lambda: T.FalconModel(T.FalconConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, vocab_size=128, use_cache=False,
        **SPECIAL)), text),
    Case("LLaMA", DEC, lambda: T.LlamaModel(T.LlamaConfig(**DECODER)), text),
    Case("Mistral", DEC, lambda: T.MistralModel(T.MistralConfig(**DECODER)), text),
    Case("Mixtral", DEC + ", mixture of experts", lambda: T.MixtralModel(T.MixtralConfig(
        **DECODER, num_local_experts=2, num_experts_per_tok=1)), text),
    Case("Qwen2", DEC, lambda: T.Qwen2Model(T.Qwen2Config(**DECODER)), text),
    Case("Qwen3", DEC, lambda: T.Qwen3Model(T.Qwen3Config(**DECODER, head_dim=16)), text),
    Case("Gemma", DEC, lambda: T.GemmaModel(T.GemmaConfig(**DECODER, head_dim=16)), text),
    Case("Gemma 2", DEC, lambda: T.Gemma2Model(T.Gemma2Config(**DECODER, head_dim=16)), text),
    Case("Phi", "decoder (rotary)", lambda: T.PhiModel(T.PhiConfig(**DECODER)), text),
    Case("Phi-3", DEC, lambda: T.Phi3Model(T.Phi3Config(**DECODER, **SPECIAL)), text),
    Case("StableLM", DEC, lambda: T.StableLmModel(T.StableLmConfig(**DECODER)), text),
    Case("OLMo", DEC, lambda: T.OlmoModel(T.OlmoConfig(**DECODER, **SPECIAL)), text),
    Case("Starcoder2", DEC, lambda: T.Starcoder2Model(T.Starcoder2Config(**DECODER)), text),
    Case("Granite", DEC, lambda: T.GraniteModel(T.GraniteConfig(**DECODER)), text),
    Case("T5", S2S, lambda: T.T5Model(T.T5Config(**T5)), seq2seq),
    Case("mT5", S2S, lambda: T.MT5Model(T.MT5Config(**T5)), seq2seq),
    Case("BART", S2S, lambda: T.BartModel(T.BartConfig(**SEQ2SEQ)), seq2seq),
    Case("Marian", S2S, lambda: T.MarianModel(T.MarianConfig(**SEQ2SEQ)), seq2seq),
    Case("Whisper", S2S + " (speech)", lambda: T.WhisperModel(T.WhisperConfig(
        **{k: v for k, v in SEQ2SEQ.items() if k != "max_position_embeddings"}, num_mel_bins=16,
        max_source_positions=32, max_target_positions=32)),
         lambda d: {"input_features": torch.zeros(1, 16, 64, device=d), "decoder_input_ids": ids(d, 8)}),
    Case("ViT", VIS, lambda: T.ViTModel(T.ViTConfig(**VISION)), pixels),
    Case("DeiT", VIS, lambda: T.DeiTModel(T.DeiTConfig(**VISION)), pixels),
    Case("BEiT", VIS, lambda: T.BeitModel(T.BeitConfig(**VISION)), pixels),
    Case("DINOv2", VIS, lambda: T.Dinov2Model(T.Dinov2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2, image_size=32, patch_size=8)),
         pixels),
    Case("Swin", VIS, lambda: T.SwinModel(T.SwinConfig(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4)), pixels),
    Case("ConvNeXt", VIS + " (CNN)", lambda: T.ConvNextModel(T.ConvNextConfig(
        hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)), pixels),
    Case("ConvNeXt-V2", VIS + " (CNN)", lambda: T.ConvNextV2Model(T.ConvNextV2Config(
        hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)), pixels),
    Case("ResNet", VIS + " (CNN)", lambda: T.ResNetModel(T.ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="bottleneck")), pixels),
    Case("RegNet", VIS + " (CNN)", lambda: T.RegNetModel(T.RegNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], groups_width=8)), pixels),
    Case("MobileNetV1", VIS + " (CNN)", lambda: T.MobileNetV1Model(T.MobileNetV1Config(
        image_size=32, depth_multiplier=0.25)), pixels),
    Case("MobileNetV2", VIS + " (CNN)", lambda: T.MobileNetV2Model(T.MobileNetV2Config(
        image_size=32, depth_multiplier=0.25)), pixels),
    Case("EfficientNet", VIS + " (CNN)", lambda: T.EfficientNetModel(T.EfficientNetConfig(
        image_size=32, width_coefficient=0.1, depth_coefficient=0.1, hidden_dim=128)), pixels),
    Case("SegFormer", VIS + " (segmentation)", lambda: T.SegformerModel(T.SegformerConfig(
        num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], patch_sizes=[7, 3],
        strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2])), pixels),
    Case("DETR", VIS + " (detection, ResNet backbone)", lambda: T.DetrModel(T.DetrConfig(
        use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=T.ResNetConfig(
            embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], out_features=["stage4"]),
        d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=8)), lambda d: {"pixel_values": image(d, 64)}),
    Case("wav2vec2", AUD, lambda: T.Wav2Vec2Model(T.Wav2Vec2Config(**AUDIO)), speech),
    Case("HuBERT", AUD, lambda: T.HubertModel(T.HubertConfig(**AUDIO)), speech),
    Case("CLIP", MM, lambda: T.CLIPModel(T.CLIPConfig(
        text_config=dict(TEXT, bos_token_id=1, eos_token_id=2), vision_config=VISION, projection_dim=16)), pair),
    Case("SigLIP", MM, lambda: T.SiglipModel(T.SiglipConfig(text_config=TEXT, vision_config=VISION)), pair),
)
BY_NAME = {c.name: c for c in CASES}

#: what the suite exports to ONNX (each exporter's graph-only file), and saves as .pt2
ONNX_SUBSET = {"legacy": ("BERT", "ViT", "ResNet", "wav2vec2", "ConvNeXt-V2", "SigLIP"),
               "dynamo": ("LLaMA", "RoBERTa", "CLIP", "MobileNetV2")}
PT2_SUBSET = ("Qwen2", "Swin", "Whisper")
COLUMNS = ("torch.export", "ONNX legacy", "ONNX dynamo", ".pt2", "n150 (tt-mlir)")


def build(case: Case, device: str) -> tuple[Any, dict[str, torch.Tensor]]:
    """The model in eval mode on `device` (weights random and distinct on the CPU:
    exporters merge equal initializers) and its inputs."""
    with warnings.catch_warnings(), torch.device(device):
        warnings.simplefilter("ignore")
        model = case.build().eval()
    if device != "meta":
        torch.manual_seed(0)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.02)
    return model, case.inputs(device)


def one_line(e: BaseException) -> str:
    """An error as a table cell holds it: one line, no `|`, at most 200 characters."""
    text = " ".join(str(e).split()).replace("|", "/")
    return text if len(text) <= 200 else text[:197] + "..."


def planned(graph: Any) -> str | None:
    """None when the graph plans to the end and its report passes `check`; else why."""
    plan = plan_program(graph.to_program(from_option("f16")), IPU21, policy("default"), Options())
    if plan.scope != "program":
        return f"stops at {plan.scope}"
    result = check_report(from_json_text(to_json_text(build_report(plan))))
    if not result.consistent:
        return "its report does not pass check: " + "; ".join(f.to_text() for f in result.findings[:2])
    return None


def result(graph: Any, expected: int, smallest: int = 1) -> str:
    """The cell of a graph holding `expected` floating parameter elements (of tensors of
    at least `smallest` elements): `plans (N parameters)`; for an ONNX file, constants
    its graph computes (a mask it builds from shapes) are held as parameters too, and
    the cell says how many of them the file's initializers hold."""
    why = planned(graph)
    if why is not None:
        return f"does not plan: {why}"
    held = sum(math.prod(t.shape) for t in graph.tensors
               if t.role == "parameter" and t.dtype == "float" and math.prod(t.shape) >= smallest)
    if held == expected:
        return f"plans ({held:,} parameters)"
    if held > expected and smallest > 1:
        return f"plans ({held:,} parameters, {expected:,} of them the file's initializers)"
    return f"plans, with {held:,} of {expected:,} parameters"


def export(model: Any, inputs: dict[str, torch.Tensor]) -> Any:
    """torch.export of the model on its inputs (the first positional, the others by
    name; `use_cache=False` where the forward takes it, as `from_torch` passes it)."""
    from tileplan.importers.torch_export import takes

    first, *rest = inputs
    kwargs: dict[str, Any] = {k: inputs[k] for k in rest}
    if takes(model, "use_cache"):
        kwargs["use_cache"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(model, (inputs[first],), kwargs=kwargs, strict=False)


def used_parameters(ep: Any) -> int:
    """The parameter elements an exported program reads (a mask token a forward never
    uses, DINOv2's, wav2vec2's, is no part of the plan)."""
    read = {n.name for n in ep.graph.nodes if n.op == "placeholder" and n.users}
    state = ep.state_dict
    return sum(state[s.target].numel() for s in ep.graph_signature.input_specs
               if s.kind.name == "PARAMETER" and s.arg.name in read)


def run_torch(case: Case) -> str:
    """The torch.export cell: the model built on the meta device, exported, planned."""
    from tileplan.importers.torch_export import from_exported

    model, inputs = build(case, "meta")
    try:
        ep = export(model, inputs)
    except Exception as e:  # torch's failure, not tileplan's
        return f"export fails ({type(e).__name__})"
    expected = used_parameters(ep)
    try:
        graph = from_exported(ep, case.name)
    except TileplanError as e:
        return f"does not plan: {one_line(e)}"
    return result(graph, expected)


def run_n150(case: Case) -> str:
    """The Tenstorrent cell: the torch.export graph (built on the meta device) planned on
    n150 through the tt-mlir frontend at the latest build, level 0: `fits (...)` with the
    verdict's figures, `does not fit: ...` in tt-metal's words, or why it cannot be
    planned."""
    import tileplan
    from tileplan.importers.torch_export import from_exported

    model, inputs = build(case, "meta")
    try:
        ep = export(model, inputs)
    except Exception as e:  # torch's failure, not tileplan's
        return f"export fails ({type(e).__name__})"
    try:
        result = tileplan.plan(from_exported(ep, case.name), machine="n150", what_if=False)
    except TileplanError as e:
        return f"does not plan: {one_line(e)}"
    verdict = one_line(ValueError(result.verdict))
    return f"fits ({verdict.removeprefix('fits on n150: ')})" if result.fits else f"does not fit: {verdict}"


class Outputs(torch.nn.Module):
    """A model called with its inputs by name (the legacy exporter passes them
    positionally), returning a tensor: the last hidden state or the first output."""

    def __init__(self, model: Any, names: list[str]) -> None:
        super().__init__()
        self.m, self.names = model, names

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        out = self.m(**dict(zip(self.names, xs)))
        hidden = getattr(out, "last_hidden_state", None)
        return hidden if hidden is not None else out[0]


def export_onnx(case: Case, exporter: str, folder: Path) -> str:
    """The case exported by `exporter` and saved graph-only (the data file deleted)."""
    import onnx

    from tileplan.importers.torch_export import takes

    model, inputs = build(case, "cpu")
    if exporter == "legacy":
        # the legacy exporter cannot export transformers' check for packed sequences
        # (`aten::diff`) a decoder runs without a mask: give it an all-ones mask
        if case.family.startswith("decoder") and takes(model, "attention_mask"):
            inputs = {**inputs, "attention_mask": torch.ones_like(inputs["input_ids"])}
        if "decoder_input_ids" in inputs and case.name == "Whisper" and takes(model, "decoder_attention_mask"):
            inputs = {**inputs, "decoder_attention_mask": torch.ones_like(inputs["decoder_input_ids"])}
    wrapped = Outputs(model, list(inputs))
    raw, path = folder / f"{case.name}.{exporter}.raw.onnx", folder / f"{case.name}.{exporter}.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            torch.onnx.export(wrapped, tuple(inputs.values()), dynamo=True, opset_version=18).save(str(raw))
        else:
            torch.onnx.export(wrapped, tuple(inputs.values()), str(raw), dynamo=False, opset_version=17)
    m = onnx.load(str(raw))
    data = f"{case.name}.{exporter}.data"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                    size_threshold=0)
    os.remove(folder / data)
    os.remove(raw)
    return str(path)


def file_parameters(path: str) -> int:
    """The floating initializer elements an ONNX file's outputs depend on (what a plan
    of the file holds as parameters: weights, and constants the exporter made), of
    initializers of more than one element (a one-element constant may be a binary
    operator's scalar, or the zero of a NaN guard the importer reads through)."""
    import onnx

    g = onnx.load(path, load_external_data=False).graph
    floats = {t.name: math.prod(t.dims) for t in g.initializer
              if t.data_type in (1, 10, 11, 16) and math.prod(t.dims) > 1}
    producer = {o: n for n in g.node for o in n.output}
    needed, stack, seen = set(), [o.name for o in g.output], set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in floats:
            needed.add(name)
        node = producer.get(name)
        if node is not None and node.op_type != "Shape":
            stack.extend(i for i in node.input if i)
    return sum(floats[n] for n in needed)


def run_onnx(case: Case, exporter: str, folder: Path) -> str:
    """An ONNX column's cell: exported, saved graph-only, imported, planned."""
    from tileplan.importers.onnx import from_onnx

    try:
        path = export_onnx(case, exporter, folder)
    except Exception as e:  # the exporter's failure, not tileplan's
        return f"export fails ({type(e).__name__})"
    try:
        graph = from_onnx(path)
    except TileplanError as e:
        return f"does not plan: {one_line(e).replace(str(folder) + os.sep, '')}"
    return result(graph, file_parameters(path), smallest=2)


def run_pt2(case: Case, folder: Path) -> str:
    """The .pt2 cell: exported on the meta device, saved, read back by tileplan's reader."""
    from tileplan.importers.torch_export import load_exported

    model, inputs = build(case, "meta")
    path = folder / f"{case.name}.pt2"
    try:
        ep = export(model, inputs)
        torch.export.save(ep, str(path))
    except Exception as e:
        return f"export fails ({type(e).__name__})"
    try:
        graph = load_exported(str(path))
    except TileplanError as e:
        return f"does not plan: {one_line(e).replace(str(folder) + os.sep, '')}"
    return result(graph, used_parameters(ep))


def read_doc(path: Path = DOC) -> dict[str, dict[str, str]]:
    """The table of `docs/model-coverage.md`: each architecture's cells by column."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    for line in path.read_text().splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= {"-", " "}:
            continue
        rows[cells[0]] = dict(zip(header, cells))
    return rows
