"""Export and plan time of real architectures through the importers; prints figures,
asserts nothing.

    .venv/bin/python benchmarks/import_time.py [--cases NAME ...]

Each case builds a transformers model from its config class on the meta device (no
weights in memory), exports it with torch.export, then imports and plans it (F8F143
weights, IPU21, the default policy: `tileplan.plan` on the ExportedProgram). CPU
seconds beside wall time (this machine is shared). Cases: `tinyllama` (TinyLlama-1.1B's
shape: hidden 2048, intermediate 5632, 22 layers, 32 heads, 4 key/value heads, vocab
32000, sequence 128), `vit-base` (ViTConfig defaults), `bert-base` (BertConfig
defaults, sequence 128), `so400m-27` (SiglipVisionModel with the so400m config, 27
layers, F16 activations as the built-in tower's, against the built-in builder) and
`so400m-27-tower` (the same without its head, against the built-in tower without the
MAP head). Target (issue 9): import + plan of the 22-layer
decoder under 10 s beyond the export.
"""

from __future__ import annotations

import argparse
import time
import warnings

CASES = ("tinyllama", "vit-base", "bert-base", "so400m-27", "so400m-27-tower")


def build(name: str):
    import torch
    from transformers import (
        BertConfig, BertModel, LlamaConfig, LlamaModel, SiglipVisionConfig, SiglipVisionModel, ViTConfig, ViTModel,
    )
    with torch.device("meta"):
        if name == "tinyllama":
            cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
                              num_key_value_heads=4, vocab_size=32000, use_cache=False)
            return LlamaModel(cfg).eval(), torch.zeros(1, 128, dtype=torch.long)
        if name == "vit-base":
            return ViTModel(ViTConfig()).eval(), torch.zeros(1, 3, 224, 224)
        if name == "bert-base":
            return BertModel(BertConfig()).eval(), torch.zeros(1, 128, dtype=torch.long)
        if name in ("so400m-27", "so400m-27-tower"):
            cfg = SiglipVisionConfig(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                                     num_attention_heads=16, image_size=384, patch_size=14,
                                     vision_use_head=name == "so400m-27")
            return SiglipVisionModel(cfg).eval(), torch.zeros(1, 3, 384, 384)
    raise ValueError(name)


def clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def run(name: str) -> None:
    import torch

    import tileplan
    from tileplan.importers.torch_export import from_exported
    c0, w0 = clock()
    model, example = build(name)
    ep = torch.export.export(model, (example,), strict=False)
    c1, w1 = clock()
    graph = from_exported(ep, name)
    c2, w2 = clock()
    # the built-in towers plan F16 activations; transformers' model on the meta device is FP32
    activations = "f16" if name.startswith("so400m") else None
    result = tileplan.plan(graph, weights="f8f143:-4", activations=activations)
    c3, w3 = clock()
    r = result.report
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: export {c1 - c0:.1f} s CPU ({w1 - w0:.1f} s wall); import {c2 - c1:.1f} s CPU ({w2 - w1:.1f} s); "
          f"plan {c3 - c2:.1f} s CPU ({w3 - w2:.1f} s); {graph.parameter_count:,} parameters "
          f"(named_parameters: {params:,}); {len(r.values):,} values, {len(r.steps):,} steps")
    print(f"  {result.verdict}")
    if name.startswith("so400m"):
        from tileplan.builtins import siglip
        from tileplan.kernel.options import Options
        from tileplan.lowering.policy import policy
        from tileplan.model.machine import IPU21
        from tileplan.model.precision import from_option
        from tileplan.planner.plan import plan_program
        from tileplan.app.build import build_report
        tower = siglip.build_vit(siglip.config(siglip.DEFAULT_MODEL, map_head=name == "so400m-27"),
                                 from_option("f8f143:-4"))
        builtin = build_report(plan_program(tower, IPU21, policy("default"), Options()))
        va, vb = r.sections.verdict, builtin.sections.verdict
        for region in ("total", "standard", "interleaved"):
            a = va.region(region).peak if va is not None and va.region(region) is not None else None
            b = vb.region(region).peak if vb is not None and vb.region(region) is not None else None
            if a is not None and b:
                print(f"  {region}: imported {a:,} B, built-in {b:,} B ({100 * (a - b) / b:+.2f} %)")


def main() -> None:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    for name in p.parse_args().cases:
        run(name)


if __name__ == "__main__":
    main()
