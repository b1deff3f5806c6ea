"""The Tenstorrent target behind the seam (app/targets.py): the boards it serves (n150,
n300, t3k, p100, p150, p150x4: targets/tenstorrent/devices/), its own `plan` options, and its
planning entries for `tileplan plan` and `tileplan.plan()`: request -> plan_tt ->
report -> what-if -> what to print.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tileplan.app.targets import Option, Planned
from tileplan.targets.tenstorrent.device import MACHINES
from tileplan.targets.tenstorrent.option_keys import OPTION_KEYS

OPTIONS = (
    Option("--frontend", "frontend", "how the model reaches TTNN: tt-mlir (default: tt-xla and tt-mlir compiling "
           "it) or tt-transformers (tt-metal's decoder LLMs)", metavar="NAME"),
    Option("--opt-level", "opt_level", "tt-mlir's optimization level: 0 (all in DRAM), 1 (DRAM, op configs), 2 "
           "(L1 placement)", type=int, metavar="0|1|2"),
    Option("--kv-cache-kind", "kv_cache_kind", "tt-mlir, with --kv-cache L: the cache's kind, dynamic "
           "(transformers' DynamicCache: the step's keys concatenated; the default) or static (StaticCache of L "
           "positions, as tt-xla's LLM benchmark: --sequence-length P is a prefill of P tokens written into it in "
           "place, 1 a decode step)", metavar="static|dynamic"),
    Option("--prefill-chunk", "prefill_chunk", "tt-transformers: plan a prefill chunk of N tokens (a multiple "
           "of 32)", type=int, metavar="N"),
    Option("--precision", "precision", "tt-transformers: the precision preset, performance (default) or accuracy "
           "(DecodersPrecision)", choices=("performance", "accuracy")),
    Option("--l1-small-size", "l1_small_size", "the device's L1_SMALL region in bytes (default: the stack's; "
           "tt-mlir 65536, tt-metal 0)", type=int, metavar="B"),
    Option("--trace-region-size", "trace_region_size", "the device's trace region in bytes (default: the "
           "stack's, or tt-transformers' demo value for the model)", type=int, metavar="B"),
    Option("--tt-version", "tt_version", "the tt-metal build the allocator's numbers come from (a date, e.g. "
           "2026-04-21; default the latest known)", metavar="DATE"),
    Option("--dispatch", "dispatch", "dispatch cores: eth or worker (default: the stack's)",
           choices=("eth", "worker")),
    Option("--to-dram", "to_dram", "move this operation's output to DRAM interleaved (tt-mlir's "
           "override-output-layout=OP=dram:interleaved); repeatable", metavar="OP", repeat=True),
)
#: `plan`'s generic options the Tenstorrent target reads (its frontend's, and the output's)
GENERIC = frozenset({"model", "machine", "output", "force", "no_what_if", "force_what_if", "fail_over_budget",
                     "verbose", *OPTION_KEYS})


class TenstorrentTarget:
    name = "tenstorrent"
    title = "Tenstorrent"
    options = OPTIONS

    def machines(self) -> tuple[str, ...]:
        return MACHINES

    def serves(self, machine: str) -> bool:
        return machine in MACHINES

    def takes(self, key: str) -> bool:
        return key in GENERIC or key in {o.dest for o in OPTIONS}

    @staticmethod
    def plan_options(given: Mapping[str, Any], progress: Callable[[str], None]) -> Planned:
        # the planner is imported when planning: `tileplan plan` builds its flags from
        # every target, and an IPU plan needs none of this one's modules
        from tileplan.app.tenstorrent.run import plan_report, request_from
        from tileplan.render.tt_terminal import headline_lines
        from tileplan.views.tt_summary import build_tt_summary

        request = request_from(given)
        report = plan_report(request, not given.get("no_what_if"), progress)
        lines = headline_lines(build_tt_summary(report))
        stem = request.name.rstrip("/").rsplit("/", 1)[-1] or "model"
        return Planned(report.to_bytes(), report.fits, tuple(lines), request.command(), stem)

    @staticmethod
    def plan_call(model: Any, example_inputs: Any = None, **given: Any) -> Any:
        from tileplan.app.tenstorrent.api import plan_tt_model
        return plan_tt_model(model, example_inputs, **given)


TARGET = TenstorrentTarget()
