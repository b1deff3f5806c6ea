"""Tenstorrent planning time at a 7B decoder's scale; prints figures, asserts nothing.

    .venv/bin/python benchmarks/tt_plan_time.py [--layers N] [--tokens S] [--machine M] [--json] [-o REPORT]

The program is a Llama-3.1-8B-shaped decoder (hidden 4096, 32 heads of 128, 8 KV heads,
MLP 14336, vocabulary 128256, 32 layers) prefilling S tokens (default 128) as TTNN
operations with every activation in DRAM and bfp8 weights uploaded first, the way a
frontend hands one to the planner (tt-mlir at opt-level 0 keeps everything in DRAM),
built here by hand so the figure does not depend on a frontend: per layer an RMS norm,
the Q, K and V linears and their reshapes to heads, SDPA, concat heads, the output
linear, the residual add, the second norm, the gate and up linears, SiLU, the multiply,
the down linear and the second add; then the final norm and the LM head.

Figures (CPU seconds, `time.process_time`, and wall seconds, in this process after the
imports): `plan_tt`, the report built and written to JSON bytes, `check` of that
report. Target (issue 27): a 7B decoder plans on n150 in under 10 s CPU.
"""

from __future__ import annotations

import argparse
import json
import time

from tileplan.app.tenstorrent.build import build_tt_report
from tileplan.check.tenstorrent import check_tt_report
from tileplan.ioutil import write_atomic
from tileplan.model.role import Role
from tileplan.report.tt_report import read_tt_report
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import ReshapeAttrs
from tileplan.targets.tenstorrent.ops.tt_norm import NormAttrs
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.program import Frontend, Op, Tensor, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout

HIDDEN, HEADS, KV_HEADS, HEAD, MLP, VOCAB = 4096, 32, 8, 128, 14336, 128256


def spec(shape: tuple[int, ...], dtype: DataType = DataType.BFLOAT16) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.TILE, DRAM_INTERLEAVED)


class Decoder:
    """The program, built operation by operation; each tensor freed after its last reader."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tensors: list[Tensor] = []
        self.uploads: list[int] = []
        self.ops: list[Op] = []
        self.last: dict[int, int] = {}

    def upload(self, name: str, shape: tuple[int, ...], role: Role, dtype: DataType = DataType.BFLOAT16) -> int:
        t = len(self.tensors)
        self.tensors.append(Tensor(t, name, role, spec(shape, dtype), module=name.rsplit(".", 1)[0]))
        self.uploads.append(t)
        return t

    def op(self, kind: OpKind, name: str, inputs: tuple[int, ...], attrs: object = None, layer: int | None = None,
           dtype: DataType | None = None) -> int:
        t = len(self.tensors)
        self.tensors.append(Tensor(t, name, Role.ACTIVATION, module=name.rsplit(".", 1)[0]))
        k = len(self.ops)
        self.ops.append(Op(k, kind, name, inputs, (t,), OutputRequest(dtype=dtype), attrs, module=name, layer=layer))
        for i in inputs:
            if self.tensors[i].role is Role.ACTIVATION or self.tensors[i].role is Role.INPUT:
                self.last[i] = k
        return t

    def program(self, output: int) -> TtProgram:
        frees: list[list[int]] = [[] for _ in self.ops]
        for t, k in self.last.items():
            if t != output:
                frees[k].append(t)
        return TtProgram(self.name, Frontend.TT_MLIR, tuple(self.tensors), tuple(self.uploads), tuple(self.ops),
                         tuple(tuple(sorted(f)) for f in frees), (output,))


def llama_8b(layers: int, tokens: int) -> TtProgram:
    d = Decoder(f"llama-3.1-8b-shaped, {layers} layers, prefill {tokens}")
    weights = []
    gamma = spec((HIDDEN,))
    for n in range(layers):
        p = f"model.layers.{n}"
        weights.append({w: d.upload(f"{p}.{w}.weight", shape, Role.WEIGHT, DataType.BFLOAT8_B) for w, shape in (
            ("self_attn.q_proj", (HIDDEN, HIDDEN)), ("self_attn.k_proj", (HIDDEN, KV_HEADS * HEAD)),
            ("self_attn.v_proj", (HIDDEN, KV_HEADS * HEAD)), ("self_attn.o_proj", (HIDDEN, HIDDEN)),
            ("mlp.gate_proj", (HIDDEN, MLP)), ("mlp.up_proj", (HIDDEN, MLP)), ("mlp.down_proj", (MLP, HIDDEN)))})
    head = d.upload("lm_head.weight", (HIDDEN, VOCAB), Role.WEIGHT, DataType.BFLOAT8_B)
    x = d.upload("inputs_embeds", (1, 1, tokens, HIDDEN), Role.INPUT)
    norm = NormAttrs(gamma=gamma)
    for n, w in enumerate(weights):
        p = f"model.layers.{n}"
        h = d.op(OpKind.RMS_NORM, f"{p}.input_layernorm", (x,), norm, n)
        q = d.op(OpKind.LINEAR, f"{p}.self_attn.q_proj", (h, w["self_attn.q_proj"]), layer=n)
        k = d.op(OpKind.LINEAR, f"{p}.self_attn.k_proj", (h, w["self_attn.k_proj"]), layer=n)
        v = d.op(OpKind.LINEAR, f"{p}.self_attn.v_proj", (h, w["self_attn.v_proj"]), layer=n)
        qh = d.op(OpKind.RESHAPE, f"{p}.self_attn.q_heads", (q,), ReshapeAttrs((1, HEADS, tokens, HEAD)), n)
        kh = d.op(OpKind.RESHAPE, f"{p}.self_attn.k_heads", (k,), ReshapeAttrs((1, KV_HEADS, tokens, HEAD)), n)
        vh = d.op(OpKind.RESHAPE, f"{p}.self_attn.v_heads", (v,), ReshapeAttrs((1, KV_HEADS, tokens, HEAD)), n)
        a = d.op(OpKind.SDPA, f"{p}.self_attn.sdpa", (qh, kh, vh), layer=n)
        c = d.op(OpKind.NLP_CONCAT_HEADS, f"{p}.self_attn.concat_heads", (a,), layer=n)
        o = d.op(OpKind.LINEAR, f"{p}.self_attn.o_proj", (c, w["self_attn.o_proj"]), layer=n)
        r = d.op(OpKind.ADD, f"{p}.residual_attn", (x, o), layer=n)
        h2 = d.op(OpKind.RMS_NORM, f"{p}.post_attention_layernorm", (r,), norm, n)
        g = d.op(OpKind.LINEAR, f"{p}.mlp.gate_proj", (h2, w["mlp.gate_proj"]), layer=n)
        u = d.op(OpKind.LINEAR, f"{p}.mlp.up_proj", (h2, w["mlp.up_proj"]), layer=n)
        s = d.op(OpKind.SILU, f"{p}.mlp.act_fn", (g,), layer=n)
        m = d.op(OpKind.MULTIPLY, f"{p}.mlp.mul", (s, u), layer=n)
        down = d.op(OpKind.LINEAR, f"{p}.mlp.down_proj", (m, w["mlp.down_proj"]), layer=n)
        x = d.op(OpKind.ADD, f"{p}.residual_mlp", (r, down), layer=n)
    f = d.op(OpKind.RMS_NORM, "model.norm", (x,), norm)
    return d.program(d.op(OpKind.LINEAR, "lm_head", (f, head)))


def timed(fn, *args):  # type: ignore[no-untyped-def]
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn(*args)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--machine", default="n150")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-o", "--output", help="also write the report here (tileplan summary, html, check read it)")
    args = parser.parse_args()
    device = load_device(args.machine)
    program, build_cpu, build_wall = timed(llama_8b, args.layers, args.tokens)
    plan, plan_cpu, plan_wall = timed(plan_tt, program, device)
    frontend = "hand-built (benchmarks/tt_plan_time.py)"
    report, report_cpu, report_wall = timed(lambda: build_tt_report(plan, program.name, frontend, ()).to_bytes())
    read, _, _ = timed(lambda: read_tt_report(json.loads(report)))
    result, check_cpu, check_wall = timed(check_tt_report, read)
    if args.output:
        write_atomic(args.output, report)
    figures = {"machine": args.machine, "operations": len(program.ops), "programs": len(plan.programs),
               "buffers": len(plan.buffers), "fits": plan.fits, "verdict": plan.verdict.message,
               "program_built_cpu_s": round(build_cpu, 3), "plan_cpu_s": round(plan_cpu, 3),
               "plan_wall_s": round(plan_wall, 3), "report_cpu_s": round(report_cpu, 3),
               "report_wall_s": round(report_wall, 3), "report_bytes": len(report),
               "check_cpu_s": round(check_cpu, 3), "check_wall_s": round(check_wall, 3),
               "check_consistent": result.consistent}
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for key, value in figures.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
