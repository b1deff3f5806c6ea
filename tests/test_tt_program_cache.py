"""The device's program cache and the config tensors it keeps (plan.py `Walk.held`,
devices/software.toml `program_cache`): a cached conv or halo program holds the
sliding-window config tensors its factory made (untilize_with_halo_program_factory.cpp
and conv2d_op_sharded_program_factory.cpp keep their storage in the cached program), one
set per distinct program, to the end; without the cache they are freed with the op."""

from __future__ import annotations

from functools import lru_cache

import torch

from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import TtPlan

BF16 = Precision("BF16")


class ThreeConvs(torch.nn.Module):
    """Two identical 3x3 convs (the same program twice) and a third of other channels."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.c = torch.nn.Conv2d(32, 64, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.b(self.a(x)))


@lru_cache(maxsize=None)
def _program() -> Program:
    from tileplan.importers.torch_export import from_torch

    module = ThreeConvs().to(torch.bfloat16)
    return from_torch(module, (torch.zeros(1, 32, 64, 64, dtype=torch.bfloat16),), "three_convs").to_program(
        BF16, BF16, repeat=False)


def _plan(version: str) -> TtPlan:
    device = load_device("n150", version=version)
    return plan_tt(lower(_program(), TtMlirOptions(opt_level=1), device), device)


def _l1_small(plan: TtPlan) -> list[tuple[str, int | None]]:
    return [(b.name, b.freed) for b in plan.buffers if b.buffer_type is BufferType.L1_SMALL]


def test_with_the_program_cache_each_distinct_programs_config_tensors_stay():
    """tt-xla from 2025-10-29 (its runtime caches programs; the configs still in
    L1_SMALL before 2025-12-17): conv a's four halo tensors and its reader indices are
    made and never freed; conv b is a's programs again and makes none; conv c's halo is
    a's too (the same window over the same 32-channel input: its key holds no output
    channels), its conv program its own: one reader-indices tensor more."""
    held = _l1_small(_plan("2025-11"))
    assert all(freed is None for _, freed in held)
    assert [n for n, _ in held] == ["a.conv.halo_padding_config0", "a.conv.halo_padding_config1",
                                    "a.conv.halo_gather_config0", "a.conv.halo_gather_config1",
                                    "a.conv.conv_reader_indices", "c.conv.conv_reader_indices"]


def test_without_it_they_are_freed_with_their_op():
    """tt-xla before 2025-10-29 (the cache only with TT_RUNTIME_ENABLE_PROGRAM_CACHE=1):
    every conv makes its own, each freed with its op."""
    made = _l1_small(_plan("2025-10-10"))
    assert {n.split(".")[0] for n, _ in made} == {"a", "b", "c"}
    assert all(freed is not None for _, freed in made)
