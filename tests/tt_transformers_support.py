"""The models and devices the tt-transformers frontend tests plan on: the config.json
files of tests/data/tt_transformers/ (configurations only) and the devices as
tt-transformers opens them (tt-metal's defaults; ETH dispatch on n300 and t3k)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tileplan.ioutil import read_json
from tileplan.targets.tenstorrent.device import Device, load_device
from tileplan.targets.tenstorrent.frontends.tt_transformers import TtTransformersOptions, build, lower
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import TtPlan
from tileplan.targets.tenstorrent.versions import DispatchCoreType, Stack

CONFIGS = Path(__file__).resolve().parent / "data" / "tt_transformers"


def config(model: str) -> dict[str, Any]:
    doc = read_json(str(CONFIGS / model / "config.json"))
    assert isinstance(doc, dict)
    return doc


def device(machine: str, **params: Any) -> Device:
    if machine in ("n300", "t3k"):
        params.setdefault("dispatch_core_type", DispatchCoreType.ETH)
    return load_device(machine, stack=Stack.TT_METAL, **params)


def plan(model: str, machine: str, options: TtTransformersOptions, patch: dict[str, Any] | None = None,
         **params: Any) -> TtPlan:
    """The model planned; `patch`: ModelArgs fields replaced (a what-if on the code's own
    constants, e.g. prefill_len_cutoff)."""
    d = device(machine, **params)
    original = lower.model_args
    if patch:
        lower.model_args = lambda *a, **k: replace(original(*a, **k), **patch)  # type: ignore[assignment]
    try:
        program = build(config(model), options, d, model)
    finally:
        lower.model_args = original
    return plan_tt(program, d)


def cb_bytes(p: TtPlan, name: str) -> int:
    """The largest program's static CB bytes of the operation called `name`."""
    op = next(o for o in p.ops if o.name == name)
    return max(p.programs[i].cb_bytes for i in op.programs)
