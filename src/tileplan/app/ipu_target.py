"""The Graphcore IPU behind the target seam (app/targets.py): the machines it serves
(the presets and machine .toml files) and which of `plan`'s options it takes (all but
the other targets' own). Its planning flow is still `tileplan plan`'s own (cli/plan.py)
and the API's (app/api.py), over app/request.py and the planner: it moves behind this
seam, with the IPU's code, into targets/ipu in a later step; until then `plan_options`
and `plan_call` are None, which the seam's callers read as "the IPU's flow"."""

from __future__ import annotations

from tileplan.app.targets import Option, targets
from tileplan.model.machine import PRESETS


class IpuTarget:
    name = "ipu"
    title = "Graphcore IPU"
    options: tuple[Option, ...] = ()
    plan_options = None
    plan_call = None

    def machines(self) -> tuple[str, ...]:
        return (*PRESETS, "a machine .toml file")

    def serves(self, machine: str) -> bool:
        return machine in PRESETS or machine.endswith(".toml")

    def takes(self, key: str) -> bool:
        """Every option but another target's own."""
        return all(key not in {o.dest for o in t.options} for t in targets() if t is not self)


TARGET = IpuTarget()
