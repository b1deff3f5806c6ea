"""The synthetic program that measures the planner at scale: exactly the requested
graph values, deterministic, a chain of MLP blocks; it plans to the end, passes check,
keeps live sets and peaks bounded as it grows, and skips the what-if past its limit."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.model.ir import RepeatBlock
from tileplan.model.machine import IPU21
from tileplan.builtins.synthetic import (
    BLOCK_OPERATIONS, SET_PARAMETERS, SyntheticConfig, build_synthetic, graph_values,
)
from tileplan.importers.graph import GraphBuilder
from tileplan.model.info import ProgramInfo, SyntheticSize
from tileplan.model.precision import F16, F32, from_option
from tileplan.planner.plan import plan_program
from tileplan.check.driver import check_report

from helpers import round_trip

_CACHE: dict = {}


def planned(values: int, shared: int = 4):
    if (values, shared) not in _CACHE:
        program = build_synthetic(SyntheticConfig(values, shared=shared))
        _CACHE[values, shared] = plan_program(program, IPU21, policy("default"), Options())
    return _CACHE[values, shared]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 400))
def test_the_program_has_exactly_the_requested_graph_values(shared, extra):
    cfg = SyntheticConfig(1 + shared * (len(SET_PARAMETERS) + BLOCK_OPERATIONS) + extra, shared=shared)
    program = build_synthetic(cfg)
    assert graph_values(program) == cfg.values
    assert len(program.tensors) == 1 + len(SET_PARAMETERS) * shared
    ops = program.operations()
    assert [op.index for op in ops] == list(range(cfg.operations))
    assert not any(isinstance(item, RepeatBlock) for item in program.items)
    assert program.outputs == (ops[-1].output,)
    # every parameter is read, set k by blocks k, k + shared, ...
    read = {name for op in ops for name in op.inputs}
    assert {t.name for t in program.tensors} <= read
    for op in ops:
        block = int(op.name.split(".")[1].removeprefix("layer"))
        assert {n.split(".")[1] for n in op.inputs if n.startswith("synthetic.shared")} <= {f"shared{block % shared}"}


def through_the_graph_builder(cfg: SyntheticConfig, weights):
    """The chain of `cfg` built as an importer builds a model (`GraphBuilder`, its shape
    and dtype rules, `Graph.to_program`'s precisions): the oracle of the direct build."""
    b = GraphBuilder("synthetic")
    x = h = b.input("synthetic.input", (1, cfg.rows, cfg.hidden), "float")
    shapes = {"norm.scale": (1, 1, cfg.hidden), "norm.bias": (1, 1, cfg.hidden), "mlp.up.weight": (cfg.hidden, cfg.mlp),
              "mlp.up.bias": (1, 1, cfg.mlp), "mlp.down.weight": (cfg.mlp, cfg.hidden),
              "mlp.down.bias": (1, 1, cfg.hidden)}
    for k in range(cfg.shared):
        for suffix in SET_PARAMETERS:
            b.parameter(f"synthetic.shared{k}.{suffix}", shapes[suffix], "float")
    block = [("layernorm", "norm", ("norm.scale", "norm.bias"), {"eps": 1e-6}),
             ("matmul", "mlp.up", ("mlp.up.weight",), None), ("add", "mlp.up.bias_add", ("mlp.up.bias",), None),
             ("gelu", "mlp.gelu", (), {"approximate": "tanh"}),
             ("matmul", "mlp.down", ("mlp.down.weight",), None),
             ("add", "mlp.down.bias_add", ("mlp.down.bias",), None), ("add", "residual", None, None)]
    for n in range(cfg.operations):
        j, (kind, suffix, read, attrs) = n // BLOCK_OPERATIONS, block[n % BLOCK_OPERATIONS]
        if n % BLOCK_OPERATIONS == 0:
            h = x
        ins = (h, x) if read is None else (x, *(f"synthetic.shared{j % cfg.shared}.{r}" for r in read))
        name = f"synthetic.layer{j}.{suffix}"
        x = b.op(kind, ins, attrs, name=name, output=name + ".out", layer=j)
    b.output(x)
    size = SyntheticSize(cfg.values, cfg.rows, cfg.hidden, cfg.mlp, cfg.shared)
    return b.build().to_program(weights, info=ProgramInfo(synthetic=size), repeat=False)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(0, 60), st.sampled_from([F16, from_option("f8f143:-4"), F32]),
       st.sampled_from([(64, 128, 256), (3, 40, 72)]))
def test_the_direct_build_is_the_chain_an_importer_builds(shared, extra, weights, dims):
    rows, hidden, mlp = dims
    cfg = SyntheticConfig(1 + shared * (len(SET_PARAMETERS) + BLOCK_OPERATIONS) + extra, rows, hidden, mlp, shared)
    assert build_synthetic(cfg, weights) == through_the_graph_builder(cfg, weights)


def test_the_program_is_deterministic_and_a_chain_of_mlp_blocks():
    a, b = build_synthetic(SyntheticConfig(200)), build_synthetic(SyntheticConfig(200))
    assert a == b
    kinds = [op.kind for op in a.operations()[:BLOCK_OPERATIONS]]
    assert kinds == ["layernorm", "matmul", "add", "gelu", "matmul", "add", "add"]
    residual = a.operations()[BLOCK_OPERATIONS - 1]
    assert residual.inputs == ("synthetic.input", "synthetic.layer0.mlp.down.bias_add.out")


@pytest.mark.parametrize("kwargs,message", [
    ({"values": 52}, "52 values cannot hold one block per parameter set; 4 sets need at least 53"),
    ({"values": 100, "shared": 0}, "shared must be >= 1, found 0"),
    ({"values": 100, "rows": 0}, "rows must be >= 1, found 0"),
])
def test_bad_sizes_are_one_line_errors(kwargs, message):
    with pytest.raises(InputError) as info:
        SyntheticConfig(**kwargs)
    assert str(info.value) == f"synthetic program: {message}"


def test_it_plans_to_the_end_and_its_report_passes_check():
    plan = planned(300)
    assert plan.scope == "program" and plan.rejections == () and plan.exact is not None
    # F16 weights: one timeline value per graph value (each parameter rests where its
    # first reader asks or compactly, products read it there, partials are scratch)
    assert len(plan.values) == 300
    assert {s.execution_count for s in plan.steps} == {1}
    findings = check_report(round_trip(plan))
    assert findings.consistent, [f.to_text() for f in findings.findings][:5]


@pytest.mark.parametrize("shared", [1, 4])
def test_live_sets_and_peaks_stay_bounded_as_the_program_grows(shared):
    small, large = planned(300, shared), planned(1200, shared)
    params = len(SET_PARAMETERS) * shared
    for plan in (small, large):
        assert max(len(s.live) for s in plan.steps) <= params + 4
        by_id = {v.id: v for v in plan.values}
        # parameters live from the first step; every other value dies within two blocks' steps
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for s in plan.steps:
            for v in s.live:
                first.setdefault(v, s.index)
                last[v] = s.index
        ending = set(plan.steps[-1].live)  # the output and what its last operation reads
        assert all(first[v] == 0 for v in first if by_id[v].resident)
        blocks = 2 * len(plan.steps) // (len(plan.operations) // BLOCK_OPERATIONS)
        assert max(last[v] - first[v] for v in first if not by_id[v].resident and v not in ending) < blocks
    assert len(large.steps) > 3 * len(small.steps)
    for region in ("standard", "interleaved", "total"):
        assert getattr(large.peaks, region) == getattr(small.peaks, region)
    assert large.exact.peak("total")[0] == small.exact.peak("total")[0]
    # only the exchange code grows with the program (one row per exchanging step)
    assert large.exchange_rows > 3 * small.exchange_rows


def test_plan_skips_the_what_if_of_a_program_over_the_limit_and_says_so(tmp_path, monkeypatch) -> None:
    import json

    import tileplan.cli.plan as plan_cli
    from tileplan.cli.main import main

    monkeypatch.setattr(plan_cli, "WHAT_IF_LIMIT", 1000)
    out = tmp_path / "s.json"
    assert main(["plan", "synthetic:3000", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "what_if" not in report
    assert report["what_if_skipped"]["values"] == len(report["timeline"]["values"]) > 1000
    assert main(["plan", "synthetic:3000", "--what-if", "-o", str(out), "-f"]) == 0
    assert "what_if" in json.loads(out.read_text())
