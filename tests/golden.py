"""Numbers of a plan, independent of value names and order: what the golden test pins.

`plan_numbers(plan)` collects every figure a report carries that a faster core must
not change: each value's sizes (as a sorted multiset), each step's usage and scratch
(in step order: the schedule is part of the answer), the peaks, the verdict, and the
exact per-tile accounting (every step's worst tile and figures, every tile's peak).
"""

from __future__ import annotations

import hashlib

import numpy as np


def plan_numbers(plan) -> dict:
    values = sorted([-1 if x is None else x for x in (v.shard_bytes, v.aligned_bytes, v.copies, v.bytes,
                                                      v.alignment_bytes)] + [v.region] for v in plan.values)
    out: dict = {
        "values": values,  # unsized figures as -1, only to sort them
        "live_counts": [len(s.live) for s in plan.steps],
        "usage": [[s.usage["standard"], s.usage["interleaved"], s.scratch["standard"], s.scratch["interleaved"],
                   s.execution_count] for s in plan.steps],
        "peaks": [plan.peaks.standard, plan.peaks.interleaved, plan.peaks.total, plan.peaks.standard_step,
                  plan.peaks.interleaved_step, plan.peaks.total_step, plan.peaks.maximum_standard_allocation],
        "verdict": [plan.verdict.fits, plan.verdict.effective_peak_bytes,
                    plan.verdict.standard_contiguous_overflow_bytes, plan.exchange_rows],
    }
    if plan.exact is not None:
        e = plan.exact
        out["exact_steps"] = [[w.tile, w.total, w.standard, w.interleaved, w.max_standard, w.max_standard_tile,
                               w.max_interleaved, w.max_interleaved_tile] for w in e.steps]
        out["exact_tiles"] = {name: hashlib.sha256(np.asarray(a, dtype=np.int64).tobytes()).hexdigest()
                              for name, a in (("peak", e.tile_peak), ("peak_step", e.tile_peak_step),
                                              ("peak_interleaved", e.tile_peak_interleaved),
                                              ("peak_resident", e.tile_peak_resident))}
    if plan.placements:
        out["placements"] = [[p.tile, p.height, p.lower_bound, p.fits] for p in plan.placements]
    return out


def golden_plans() -> dict:
    """The pinned cases: name -> a function planning it."""
    from tileplan.kernel.options import Options
    from tileplan.lowering.policy import policy
    from tileplan.model.machine import IPU21
    from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
    from tileplan.planner.plan import plan_program
    from tileplan.app.request import PlanRequest

    return {
        "so400m-f8": lambda: PlanRequest().plan(),
        "so400m-f16": lambda: PlanRequest(weights="f16").plan(),
        "so400m-f8-unrolled": lambda: PlanRequest(unroll=True).plan(),
        "so400m-f8-batch4-streamed": lambda: PlanRequest(batch=4, attention_products="streamed").plan(),
        "so400m-reference-policy": lambda: PlanRequest(policy="reference").plan(),
        "synthetic-1500": lambda: plan_program(build_synthetic(SyntheticConfig(1500)), IPU21, policy("default"),
                                               Options()),
    }
