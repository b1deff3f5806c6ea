"""The L1 the tt-mlir optimizer may fill per core.

tt-mlir lib/Dialect/TTNN/Utils/Utils.cpp `getUsableL1PerCore`: `cap x usable - reserved`,
the cap the module's `ttnn.tensor_l1_usage_cap` (the `tensor-l1-usage-cap` option,
default 0.95), usable the chip's `getUsableL1Size()` = L1 size - l1_unreserved_base
(include/ttmlir/Dialect/TTCore/IR/TTCoreOpsTypes.td; L1_SMALL is not subtracted), reserved
the module's `ttnn.l1_const_eval_usage` (lib/Transforms/ConstEvalHoist.cpp
`computeL1ConstEvalUsage`: the per-core L1 of every const-eval result held in L1, plus a
1 KiB cushion, aligned to 1 KiB; 0 when none is in L1). The product is truncated to an
integer (`static_cast<uint64_t>`) after a single-precision product (the cap is a
`float`, the usable size converted to one).

Worked example (n150, l1_unreserved_base 103,712): floor(0.95 x (1,499,136 - 103,712))
= floor(1,325,652.8) = 1,325,652 B.
"""

from __future__ import annotations

import math
import struct

from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions

#: ConstEvalHoist.cpp `computeL1ConstEvalUsage`: the cushion and alignment of the reserve
CONST_EVAL_CUSHION = 1024


def const_eval_reserve(l1_bytes_per_core: int) -> int:
    """`ttnn.l1_const_eval_usage` for const-eval results taking `l1_bytes_per_core` of L1
    (0 when none is in L1)."""
    if l1_bytes_per_core <= 0:
        return 0
    return -(-(l1_bytes_per_core + CONST_EVAL_CUSHION) // CONST_EVAL_CUSHION) * CONST_EVAL_CUSHION


def _f32(x: float) -> float:
    """`x` rounded to single precision."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def usable_l1(device: Device, options: TtMlirOptions, const_eval_l1: int = 0) -> int:
    """The optimizer's L1 budget per core (see the module docstring)."""
    capped = math.floor(_f32(_f32(options.tensor_l1_usage_cap) * _f32(device.l1_size - device.l1_base)))
    return capped - const_eval_reserve(const_eval_l1)
