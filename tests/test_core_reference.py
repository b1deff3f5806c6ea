"""The planner core against a small, obviously-correct reference.

The reference below is plain Python written from the rules as documented
(`tileplan.planner.plan.compute_live_ranges`, docs/report-format.md), sharing no code
with `tileplan.planner`: its inputs are the lowering (`lower_program`: values not yet
sized, step drafts with their reads, writes and scratch, repeat blocks) and the tiling
model (`shards_of`, `Shards.largest_bytes`, `Shards.bytes_per_tile`). From them it
derives, one step and one tile at a time:

* live ranges: declared tensors from step 0, other values from the first step writing
  them; until the last step reading them; program outputs to the last step; with the
  default policy, parameters (weights, buffers, constants) to the last step; in a
  repeat block, a member of a parameter family read by later iterations
  (`Lowering.later_members`) lives to the block's last step once a block step reads it;
* the scope: planning stops after the operation of the first step where a value
  without shards is live (else keeps every step);
* live sets, value sizes (largest shard, rounded up to the alignment, times copies),
  storage groups (sized by their largest member, counted once per step), usage per
  region (+ the step's scratch; None where a live group's size is unknown) and the
  peaks (the first step reaching the maximum);
* the exact per-tile figures: on each tile, each live group's largest per-tile member
  bytes (each rounded up to its alignment where it holds anything, times copies),
  summed, plus the step's scratch on every tile; per step the worst tile (the lowest
  index with the largest total), per region likewise; per tile its peak, the first
  step reaching it, the always-live groups' bytes there (the parameters' with the
  default policy; the reference policy's resident values, input and parameters) and
  its interleaved peak.

Hypothesis builds a few hundred small random programs: chains and DAGs of operators
from the registry (elementwise, matmul, layernorm, softmax, reshape and transpose
views), repeat blocks with parameter families, several weight precisions, both
layout policies (the reference policy's resting layouts leave vectors
unrepresentable, so stopped plans are covered too) and machines of a few tiles.
Every figure of `plan_program` must equal the reference's: speed never changes a number.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tileplan.errors import TilingError
from tileplan.kernel.options import GemmOutputPacking, Options
from tileplan.lowering.policy import policy
from tileplan.lowering.program import Lowering, lower_program
from tileplan.model.ir import ITERATION, Operation, Program, RepeatBlock, Tensor, family_member
from tileplan.model.machine import IPU21, Machine
from tileplan.model.precision import F16, Precision
from tileplan.model.role import Role
from tileplan.builtins import siglip
from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
from tileplan.model.tiling import shards_of
from tileplan.ops import infer_shape
from tileplan.planner.plan import plan_program

REGIONS = ("standard", "interleaved")
#: the random programs the property test plans (each once with the core, once here)
EXAMPLES = 300


# The reference ---------------------------------------------------------------------------

@dataclass
class Reference:
    """Every figure the reference derives from a lowering."""

    kept: int
    scope: str
    ranges: dict[int, tuple[int, int]]
    live: list[list[int]]
    #: value id -> (shard bytes, aligned bytes, bytes), None when it has no shards
    sizes: dict[int, tuple[int, int, int] | None]
    usage: list[dict[str, int | None]]
    peaks: dict[str, int | None]
    #: per step: the worst tile and its figures (None when the plan has no exact accounting)
    exact_steps: list[dict[str, int]] | None
    tile_peak: list[int] | None
    tile_peak_step: list[int] | None
    tile_peak_interleaved: list[int] | None
    tile_peak_resident: list[int] | None


def region_of(value) -> str:
    return value.layout.memory_class.usage_key


def reference_live_ranges(lowering: Lowering, always_live: bool) -> dict[int, tuple[int, int]]:
    steps = lowering.steps
    if not steps:
        return {}
    end = len(steps) - 1
    first: dict[int, int] = {}
    for v in range(lowering.declared):
        first[v] = 0
    for i, step in enumerate(steps):
        for v in step.writes:
            if v not in first:
                first[v] = i
    last: dict[int, int] = {}
    for i, step in enumerate(steps):
        block_end = None
        for a, b in lowering.blocks:
            if a <= i <= b:
                block_end = b
        for v in step.reads:
            if block_end is not None and v in lowering.later_members:
                last[v] = block_end
            else:
                last[v] = i
    for v in lowering.outputs:
        last[v] = end
    if always_live:
        for v in range(lowering.declared):
            if lowering.values[v].role == "parameter":
                last[v] = end
    ranges = {}
    for v, f in first.items():
        ranges[v] = (f, max(f, last.get(v, f)))
    return ranges


def reference_size(value) -> tuple[tuple[int, int, int] | None, list[int] | None]:
    """(shard, aligned, bytes) and the bytes on each tile; (None, None) without shards."""
    try:
        shards = shards_of(value.layout, value.shape, value.name)
    except TilingError:
        return None, None
    shard = shards.largest_bytes(value.precision)
    a = value.alignment_bytes
    aligned = shard if not a else -(-shard // a) * a
    per_tile = []
    for b in shards.bytes_per_tile(value.precision).tolist():
        held = -(-b // a) * a if a and a > 1 and b > 0 else b
        per_tile.append(int(held) * value.copies)
    return (shard, aligned, aligned * value.copies), per_tile


def first_max(series: list[int]) -> tuple[int, int]:
    """(the largest, the first index holding it)."""
    best = series[0]
    at = 0
    for i, x in enumerate(series):
        if x > best:
            best, at = x, i
    return best, at


def reference_plan(lowering: Lowering, tile_count: int, always_live: bool) -> Reference:
    steps = lowering.steps
    ranges = reference_live_ranges(lowering, always_live)
    sizes: dict[int, tuple[int, int, int] | None] = {}
    per_tile: dict[int, list[int] | None] = {}
    for v in ranges:
        sizes[v], per_tile[v] = reference_size(lowering.values[v])

    # the scope
    kept, scope = len(steps), "program"
    bad = [ranges[v][0] for v in ranges if sizes[v] is None]
    if bad:
        op = steps[min(bad)].source
        kept = max(i for i, s in enumerate(steps) if s.source == op) + 1
        scope = f"rejected-op{op}"
    elif lowering.failed is not None:
        scope = f"rejected-op{lowering.failed[0]}"

    live = [sorted(v for v, (f, last) in ranges.items() if f <= i <= last) for i in range(kept)]
    in_plan = sorted({v for vs in live for v in vs})

    # storage groups over the plan's values: size of the largest member (None if any is unknown)
    members: dict[int, list[int]] = {}
    for v in in_plan:
        members.setdefault(lowering.values[v].storage_group, []).append(v)
    group_bytes: dict[int, int | None] = {}
    group_region: dict[int, str] = {}
    for g, vs in members.items():
        known = [sizes[v] for v in vs]
        group_bytes[g] = None if any(s is None for s in known) else max(s[2] for s in known if s is not None)
        regions = {region_of(lowering.values[v]) for v in vs}
        assert len(regions) == 1, (g, regions)
        group_region[g] = regions.pop()

    def scratch(i: int, region: str) -> int:
        return sum(n for r, n in steps[i].scratch if r == region)

    usage: list[dict[str, int | None]] = []
    for i in range(kept):
        groups = {lowering.values[v].storage_group for v in live[i]}
        row: dict[str, int | None] = {}
        for region in REGIONS:
            total: int | None = scratch(i, region)
            for g in groups:
                if group_region[g] == region:
                    size = group_bytes[g]
                    total = None if total is None or size is None else total + size
            row[region] = total
        usage.append(row)

    peaks: dict[str, int | None] = {}
    std = [u["standard"] for u in usage]
    inter = [u["interleaved"] for u in usage]
    total_series = [None if a is None or b is None else a + b for a, b in zip(std, inter)]
    for name, series in (("standard", std), ("interleaved", inter), ("total", total_series)):
        if not series or any(x is None for x in series):
            peaks[name], peaks[f"{name}_step"] = None, None
        else:
            peaks[name], peaks[f"{name}_step"] = first_max([x for x in series if x is not None])
    live_std_groups = {lowering.values[v].storage_group for vs in live for v in vs
                       if region_of(lowering.values[v]) == "standard"}
    allocations = [group_bytes[g] for g in live_std_groups]
    peaks["maximum_standard_allocation"] = None if any(b is None for b in allocations) else \
        max([b for b in allocations if b is not None], default=0)

    reference = Reference(kept, scope, ranges, live, {v: sizes[v] for v in in_plan}, usage, peaks,
                          None, None, None, None, None)
    if kept == 0 or any(sizes[v] is None for v in in_plan):
        return reference

    # exact per-tile accounting, one tile at a time
    group_tiles: dict[int, list[int]] = {}
    for g, vs in members.items():
        group_tiles[g] = [max(per_tile[v][t] for v in vs) for t in range(tile_count)]  # type: ignore[index]
    # always live: with the default policy the parameters (Poplar's variables, live for
    # the whole program); with the reference policy every declared tensor
    resident_roles = ("parameter",) if always_live else ("input", "parameter")
    resident_groups = {lowering.values[v].storage_group for v in in_plan
                       if lowering.values[v].role in resident_roles}
    exact_steps = []
    tile_peak = [-1] * tile_count
    tile_peak_step = [0] * tile_count
    tile_peak_inter = [0] * tile_count
    tile_peak_resident = [0] * tile_count
    for i in range(kept):
        step_groups = sorted({lowering.values[v].storage_group for v in live[i]})
        std_t, inter_t, total_t, resident_t = [], [], [], []
        for t in range(tile_count):
            s = scratch(i, "standard") + sum(group_tiles[g][t] for g in step_groups if group_region[g] == "standard")
            n = scratch(i, "interleaved") + sum(group_tiles[g][t] for g in step_groups
                                                if group_region[g] == "interleaved")
            std_t.append(s)
            inter_t.append(n)
            total_t.append(s + n)
            resident_t.append(sum(group_tiles[g][t] for g in step_groups if g in resident_groups))
        total, tile = first_max(total_t)
        max_std, std_tile = first_max(std_t)
        max_inter, inter_tile = first_max(inter_t)
        exact_steps.append({"tile": tile, "total": total, "standard": std_t[tile], "interleaved": inter_t[tile],
                            "max_standard": max_std, "max_standard_tile": std_tile,
                            "max_interleaved": max_inter, "max_interleaved_tile": inter_tile})
        for t in range(tile_count):
            if total_t[t] > tile_peak[t]:
                tile_peak[t], tile_peak_step[t], tile_peak_resident[t] = total_t[t], i, resident_t[t]
            tile_peak_inter[t] = max(tile_peak_inter[t], inter_t[t])
    reference.exact_steps = exact_steps
    reference.tile_peak = [max(p, 0) for p in tile_peak]
    reference.tile_peak_step = tile_peak_step
    reference.tile_peak_interleaved = tile_peak_inter
    reference.tile_peak_resident = tile_peak_resident
    return reference


# Comparing the planner with the reference ---------------------------------------------

def assert_plan_matches(program: Program, machine: Machine, policy_name: str, options: Options) -> Reference:
    layout_policy = policy(policy_name)
    ref = reference_plan(lower_program(program, machine, layout_policy, options), machine.tile_count,
                         policy_name == "default")
    plan = plan_program(program, machine, layout_policy, options)

    assert plan.scope == ref.scope
    assert len(plan.steps) == ref.kept
    for i, step in enumerate(plan.steps):
        assert list(step.live) == ref.live[i], f"live set of step {i}"
        for region in REGIONS:
            assert step.usage[region] == ref.usage[i][region], f"{region} usage of step {i}"
    sizes = {v.id: (None if v.bytes is None else (v.shard_bytes, v.aligned_bytes, v.bytes)) for v in plan.values}
    assert sizes == ref.sizes

    peaks = plan.peaks
    for key, expected in ref.peaks.items():
        assert getattr(peaks, key) == expected, key

    if ref.exact_steps is None:
        assert plan.exact is None
        return ref
    exact = plan.exact
    assert exact is not None
    assert len(exact.steps) == ref.kept
    for i, expected_step in enumerate(ref.exact_steps):
        worst = exact.steps[i]
        assert {key: getattr(worst, key) for key in expected_step} == expected_step, f"exact figures of step {i}"
    assert [int(x) for x in exact.tile_peak] == ref.tile_peak
    assert [int(x) for x in exact.tile_peak_step] == ref.tile_peak_step
    assert [int(x) for x in exact.tile_peak_interleaved] == ref.tile_peak_interleaved
    assert [int(x) for x in exact.tile_peak_resident] == ref.tile_peak_resident
    for region, key, tile_key in (("total", "total", "tile"), ("standard", "max_standard", "max_standard_tile"),
                                  ("interleaved", "max_interleaved", "max_interleaved_tile")):
        best, step = first_max([w[key] for w in ref.exact_steps])
        assert tuple(exact.peak(region)) == (best, ref.exact_steps[step][tile_key], step), region
    return ref


# Random programs ----------------------------------------------------------------------------

F8 = Precision("F8F143", -4)
UNARY = ("gelu", "relu", "exp", "tanh")
BINARY = ("add", "mul", "sub")


class Nodes:
    """Numbers graph nodes (`origin`) and operations (`index`) in declaration order;
    collects tensors and program items as they are declared."""

    def __init__(self, weights: Precision) -> None:
        self.weights = weights
        self.origin = 0
        self.op_index = 0
        self.tensors: list[Tensor] = []
        self.items: list[Operation | RepeatBlock] = []
        self.shapes: dict[str, tuple[int, ...]] = {}

    def node(self) -> int:
        self.origin += 1
        return self.origin - 1

    def declare(self, name: str, shape: tuple[int, ...], precision: Precision = F16) -> str:
        self.tensors.append(Tensor(self.node(), name, shape, precision, Role.WEIGHT))
        self.shapes[name] = shape
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        return self.declare(name, shape, self.weights)


class Builder:
    """Random programs' nodes, any IR the planner accepts (repeat blocks carrying any
    value); shapes from the registry's rules."""

    def __init__(self, weights: Precision) -> None:
        self.b = Nodes(weights)
        self.count = 0

    def shape(self, name: str) -> tuple[int, ...]:
        return self.b.shapes[name]

    def op(self, kind: str, inputs: tuple[str, ...], body: list[Operation] | None = None, name: str | None = None,
           iteration: int = 0, **attrs: object) -> str:
        shapes = [self.shape(family_member(n, iteration)) for n in inputs]
        probe = Operation(0, 0, kind, "probe", inputs, "probe", (1,), F16, tuple(sorted(attrs.items())))
        shape = infer_shape(probe, shapes)
        if name is None:
            name = f"net.op{self.count}"
            self.count += 1
        out = f"{name}.out"
        b = self.b
        operation = Operation(b.node(), b.op_index, kind, name, inputs, out, shape, F16, tuple(sorted(attrs.items())))
        b.op_index += 1
        (body if body is not None else b.items).append(operation)
        b.shapes[out] = shape
        if body is not None:
            self.b.shapes[family_member(out, iteration)] = shape
        return out

    def declare(self, name: str, shape: tuple[int, ...], weight: bool = False) -> str:
        return self.b.weight(name, shape) if weight else self.b.declare(name, shape)


def small(draw, most: int = 48) -> int:
    return draw(st.one_of(st.integers(1, 8), st.integers(1, most), st.sampled_from([16, 32, 64])))


def add_operation(draw, b: Builder, acts: list[str]) -> str:
    """One operation on the latest activation (sometimes an earlier one: a DAG)."""
    x = acts[-1] if draw(st.integers(0, 3)) else draw(st.sampled_from(acts))
    shape = b.shape(x)
    kind = draw(st.sampled_from(["unary", "binary", "matmul", "layernorm", "softmax", "reshape", "transpose",
                                 "bias"]))
    n = len(acts)
    if kind == "unary":
        return b.op(draw(st.sampled_from(UNARY)), (x,))
    if kind == "binary":
        partners = [a for a in acts if b.shape(a) == shape]
        y = draw(st.sampled_from(partners))
        return b.op(draw(st.sampled_from(BINARY)), (x, y))
    if kind == "bias":
        bias = b.declare(f"net.bias{n}", (1,) * (len(shape) - 1) + (shape[-1],))
        return b.op("add", (x, bias))
    if kind == "matmul" and len(shape) >= 2:
        w = b.declare(f"net.weight{n}", (shape[-1], small(draw, 96)), weight=True)
        return b.op("matmul", (x, w))
    if kind == "layernorm":
        vec = (1,) * (min(len(shape), 3) - 1) + (shape[-1],)
        scale, bias = b.declare(f"net.norm{n}.scale", vec), b.declare(f"net.norm{n}.bias", vec)
        return b.op("layernorm", (x, scale, bias), eps=1e-6)
    if kind == "softmax":
        return b.op("softmax", (x,), axis=-1)
    if kind == "reshape" and len(shape) >= 2:
        k = draw(st.integers(0, len(shape) - 2))
        merged = shape[:k] + (shape[k] * shape[k + 1],) + shape[k + 2:]
        new = merged if len(shape) > 2 and draw(st.booleans()) else (1, *shape) if len(shape) < 4 else merged
        return b.op("reshape", (x,), shape=new)
    if kind == "transpose" and len(shape) >= 2:
        perm = list(range(len(shape)))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        return b.op("transpose", (x,), perm=tuple(perm))
    return b.op("gelu", (x,))


def add_block(draw, b: Builder, x: str, k: int) -> str:
    """A repeat block on `x` (its last dimension D): a few layers of norm, projection
    up and down with family parameters, an activation and a residual."""
    shape = b.shape(x)
    d = shape[-1]
    count = draw(st.integers(1, 4))
    wide = small(draw, 64)
    layer = f"net.block{k}.layer{ITERATION}"
    vec = (1,) * (min(len(shape), 3) - 1)
    families = {"norm.scale": (*vec, d), "norm.bias": (*vec, d), "up.weight": (d, wide), "up.bias": (*vec, wide),
                "down.weight": (wide, d), "down.bias": (*vec, d)}
    for suffix, fshape in families.items():
        for i in range(count):
            b.declare(family_member(f"{layer}.{suffix}", i), fshape, weight=suffix.endswith("weight"))
    body: list[Operation] = []
    p = lambda suffix: f"{layer}.{suffix}"  # noqa: E731
    h = x
    if draw(st.booleans()):
        h = b.op("layernorm", (h, p("norm.scale"), p("norm.bias")), body, p("norm"), eps=1e-6)
    u = b.op("matmul", (h, p("up.weight")), body, p("up"))
    if draw(st.booleans()):
        u = b.op("add", (u, p("up.bias")), body, p("up.bias_add"))
    u = b.op(draw(st.sampled_from(UNARY)), (u,), body, p("act"))
    y = b.op("matmul", (u, p("down.weight")), body, p("down"))
    if draw(st.booleans()):
        y = b.op("add", (y, p("down.bias")), body, p("down.bias_add"))
    if draw(st.booleans()):
        y = b.op("add", (x, y), body, p("residual"))
    b.b.items.append(RepeatBlock(count, f"net.block{k}", tuple(f"{layer}.{s}" for s in families), tuple(body),
                                 carried_in=x, carried_out=y))
    b.b.shapes[y] = b.shape(family_member(y, 0))
    return y


@st.composite
def programs(draw) -> Program:
    b = Builder(draw(st.sampled_from([F16, F8, Precision("F32")])))
    rank = draw(st.integers(2, 3))
    shape = tuple(small(draw) for _ in range(rank - 1)) + (small(draw, 64),)
    acts = [b.declare("net.input", shape)]
    b.b.tensors[-1] = replace(b.b.tensors[-1], role=Role.INPUT)
    blocks = 0
    for _ in range(draw(st.integers(1, 9))):
        if draw(st.integers(0, 5)) == 0 and blocks < 2:
            acts.append(add_block(draw, b, acts[-1], blocks))
            blocks += 1
            # the block's output is named by its family ({i}); what follows reads it outside any block
            acts.append(b.op(draw(st.sampled_from(UNARY)), (acts[-1],)))
        else:
            acts.append(add_operation(draw, b, acts))
    outputs = [acts[-1]]
    if len(acts) > 2 and draw(st.booleans()):
        extra = draw(st.sampled_from(acts[1:-1]))
        if extra not in outputs:
            outputs.append(extra)
    return Program("random", tuple(b.b.tensors), tuple(b.b.items), tuple(outputs))


def machines(tiles: int) -> Machine:
    return replace(IPU21, name=f"tiles{tiles}", tile_count=tiles)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.data_too_large])
@given(programs(), st.sampled_from([1, 2, 3, 5, 8, 13, 16, 32]), st.sampled_from(["default", "default", "reference"]),
       st.sampled_from(list(GemmOutputPacking)), st.sampled_from([None, 0.6, 0.05]))
def test_the_core_equals_the_reference_on_random_programs(program, tiles, policy_name, packing, proportion):
    options = Options(packing, available_memory_proportion=proportion)
    assert_plan_matches(program, machines(tiles), policy_name, options)


@pytest.mark.parametrize("model,tiles", [("synthetic", 8), ("repeat", 16), ("unrolled", 13)])
def test_the_core_equals_the_reference_on_the_built_in_programs(model, tiles):
    """The synthetic chain and a small SigLIP tower (its encoder as a repeat block of
    3 layers, and unrolled) on machines of a few tiles, F8 weights."""
    if model == "synthetic":
        program = build_synthetic(SyntheticConfig(200))
    else:
        cfg = replace(siglip.config("siglip-base-patch16-224", layers=3), image=64)
        program = siglip.build_vit(cfg, F8, unroll=model == "unrolled")
    ref = assert_plan_matches(program, machines(tiles), "default", Options())
    assert ref.scope == "program" and ref.exact_steps is not None
