"""The operation configs tt-mlir's optimizer fixes at levels 1 and 2.

At level 0 an operation gets no program config and tt-metal chooses one when it runs (for
a matmul, `generate_matmul_program_config`, whose fit search reads the lowest L1 address
occupied at that moment: ttnn/cpp/ttnn/operations/matmul/device/utilities/
matmul_utilities.cpp `get_max_l1_space`). With the optimizer on, tt-mlir's
LegalOpConfigAnalysis and MatmulProgramConfig.cpp give every matmul and linear the
program config it validated, and validation runs tt-metal's op-constraint query in
NO_DISPATCH mode, where nothing is allocated: the config is tt-metal's automatic one for
an empty L1, fixed in the IR whatever is live when it runs.
"""

from __future__ import annotations

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import Node
from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import OpTarget, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_matmul import MATMUL_DEFAULT_COMPUTE, MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul_auto import generate_config
from tileplan.targets.tenstorrent.ops.tt_matmul_config import MatmulShapes


def pin_matmul_config(node: Node, specs: tuple[TensorSpec, ...], out: OutputRequest, target: OpTarget) -> Node:
    """`node` with its matmul program config fixed as tt-metal chooses it for these
    inputs and output on an empty L1 (unchanged for other operations, or when the
    inputs are refused)."""
    if node.kind not in (OpKind.MATMUL, OpKind.LINEAR) or not isinstance(node.attrs, MatmulAttrs) \
            or node.attrs.program_config is not None:
        return node
    a = node.attrs
    try:
        shapes = MatmulShapes.of(specs[0], specs[1], a.transpose_a, a.transpose_b,
                                 specs[2] if len(specs) > 2 else None)
        compute = node.compute or MATMUL_DEFAULT_COMPUTE
        cfg = generate_config(shapes, out, target, compute, out.dtype or specs[0].dtype, a.core_grid, a.batched)
    except InputError:
        return node
    from dataclasses import replace
    return replace(node, attrs=replace(a, program_config=cfg))
