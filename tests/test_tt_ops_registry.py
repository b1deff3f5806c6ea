"""The TTNN operation registry (tileplan.targets.tenstorrent.ops): one rule per OpKind,
each in its family module, each rule's docstring naming the tt-metal source it ports."""

from __future__ import annotations

import pytest
from tt_ops_support import DRAM, MLIR, tile

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.ops import REGISTRY, plan_op
from tileplan.targets.tenstorrent.ops.base import OpRequest, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind


def test_every_kind_has_a_rule() -> None:
    assert set(REGISTRY) == set(OpKind)


@pytest.mark.parametrize("kind", list(OpKind), ids=lambda k: k.name)
def test_each_rule_lives_in_its_family_and_cites_its_source(kind: OpKind) -> None:
    rule = REGISTRY[kind]
    assert rule.plan.__module__.endswith(rule.family)
    module = __import__(rule.plan.__module__, fromlist=["_"])
    doc = (rule.plan.__doc__ or "") + (module.__doc__ or "")
    assert ".cpp" in doc


def test_an_unknown_operation_is_an_error_that_names_it() -> None:
    with pytest.raises(InputError, match="no Tenstorrent rule for operation ttnn.unknown"):
        plan_op("ttnn.unknown", OpRequest((tile((64, 64), DRAM),), OutputRequest(), MLIR))


def test_a_ttnn_name_finds_its_rule() -> None:
    plan = plan_op("ttnn.relu", OpRequest((tile((64, 1024), DRAM),), OutputRequest(), MLIR))
    assert plan.cb_peak == 8_192
