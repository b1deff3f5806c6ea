"""TTNN operations as tt-metal's program factories run them: for each operation, the
programs, their circular buffers, the output specs and the buffers allocated
(tileplan.targets.tenstorrent.ops.base), one rule per operation kind, one module per
family. `plan_op(kind, request, attrs)` is the only entry; an operation not in the
registry is an error that names it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest
from tileplan.targets.tenstorrent.ops.tt_accumulation import plan_cumsum
from tileplan.targets.tenstorrent.ops.tt_argmax import plan_argmax
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_batch_norm import plan_batch_norm
from tileplan.targets.tenstorrent.ops.tt_all_gather import plan_ttnn_all_gather
from tileplan.targets.tenstorrent.ops.tt_all_gather_matmul import plan_all_gather_matmul
from tileplan.targets.tenstorrent.ops.tt_ccl import plan_all_gather, plan_reduce_scatter
from tileplan.targets.tenstorrent.ops.tt_conv import plan_halo
from tileplan.targets.tenstorrent.ops.tt_conv3d import plan_conv3d
from tileplan.targets.tenstorrent.ops.tt_conv_dram import plan_conv2d_routed
from tileplan.targets.tenstorrent.ops.tt_conv_transpose import plan_conv_transpose2d
from tileplan.targets.tenstorrent.ops.tt_data_movement import (
    plan_concat,
    plan_pad,
    plan_permute,
    plan_reshape,
    plan_transpose,
)
from tileplan.targets.tenstorrent.ops.tt_embedding import plan_embedding
from tileplan.targets.tenstorrent.ops.tt_fast_reduce_nc import plan_fast_reduce_nc
from tileplan.targets.tenstorrent.ops.tt_gather import plan_gather
from tileplan.targets.tenstorrent.ops.tt_host import plan_from_torch
from tileplan.targets.tenstorrent.ops.tt_heads import (
    plan_concat_heads_decode,
    plan_create_heads,
    plan_create_heads_decode,
)
from tileplan.targets.tenstorrent.ops.tt_kv_cache import plan_cache_update, plan_fill_cache, plan_update_cache
from tileplan.targets.tenstorrent.ops.tt_layout import plan_layout
from tileplan.targets.tenstorrent.ops.tt_matmul import plan_matmul
from tileplan.targets.tenstorrent.ops.tt_norm import plan_norm
from tileplan.targets.tenstorrent.ops.tt_norm_distributed import plan_rms_post, plan_rms_pre
from tileplan.targets.tenstorrent.ops.tt_pool import plan_pool2d
from tileplan.targets.tenstorrent.ops.tt_power import plan_pow_scalar
from tileplan.targets.tenstorrent.ops.tt_rotary import plan_rotary
from tileplan.targets.tenstorrent.ops.tt_sdpa import plan_sdpa, plan_sdpa_decode
from tileplan.targets.tenstorrent.ops.tt_sdpa_paged import plan_sdpa_chunked
from tileplan.targets.tenstorrent.ops.tt_sharding import (
    plan_interleaved_to_sharded,
    plan_sharded_to_interleaved,
    plan_to_memory_config,
)
from tileplan.targets.tenstorrent.ops.tt_softmax import plan_softmax
from tileplan.targets.tenstorrent.ops.tt_ternary import plan_where
from tileplan.targets.tenstorrent.ops.tt_tm import plan_repeat, plan_repeat_interleave, plan_slice
from tileplan.targets.tenstorrent.ops.tt_transformer import plan_concat_heads, plan_split_qkv
from tileplan.targets.tenstorrent.ops.tt_eltwise import (
    BINARY_KINDS,
    UNARY_KINDS,
    plan_binary,
    plan_unary,
)
from tileplan.targets.tenstorrent.ops.tt_reduce import REDUCE_KINDS, plan_reduce

Rule = Callable[[OpKind, OpRequest, Any], OpPlan]


@dataclass(frozen=True, slots=True)
class OpRule:
    """One operation's rule: its family module and the function planning it."""

    family: str
    plan: Rule


def _build() -> dict[OpKind, OpRule]:
    table: dict[OpKind, OpRule] = {}
    for kind in UNARY_KINDS:
        table[kind] = OpRule("tt_eltwise", plan_unary)
    for kind in BINARY_KINDS:
        table[kind] = OpRule("tt_eltwise", plan_binary)
    for kind in REDUCE_KINDS:
        table[kind] = OpRule("tt_reduce", plan_reduce)
    singles: dict[OpKind, tuple[str, Rule]] = {
        OpKind.MATMUL: ("tt_matmul", plan_matmul), OpKind.LINEAR: ("tt_matmul", plan_matmul),
        OpKind.WHERE: ("tt_ternary", plan_where), OpKind.ARGMAX: ("tt_argmax", plan_argmax),
        OpKind.POW_SCALAR: ("tt_power", plan_pow_scalar),
        OpKind.CUMSUM: ("tt_accumulation", plan_cumsum), OpKind.MOREH_CUMSUM: ("tt_accumulation", plan_cumsum),
        OpKind.SOFTMAX: ("tt_softmax", plan_softmax),
        OpKind.LAYER_NORM: ("tt_norm", plan_norm), OpKind.RMS_NORM: ("tt_norm", plan_norm),
        OpKind.BATCH_NORM: ("tt_batch_norm", plan_batch_norm),
        OpKind.SDPA: ("tt_sdpa", plan_sdpa), OpKind.SDPA_DECODE: ("tt_sdpa", plan_sdpa_decode),
        OpKind.NLP_CONCAT_HEADS: ("tt_transformer", plan_concat_heads),
        OpKind.SPLIT_QKV: ("tt_transformer", plan_split_qkv),
        OpKind.EMBEDDING: ("tt_embedding", plan_embedding),
        OpKind.CONV2D: ("tt_conv_dram", plan_conv2d_routed), OpKind.CONV3D: ("tt_conv3d", plan_conv3d),
        OpKind.HALO: ("tt_conv", plan_halo),
        OpKind.CONV_TRANSPOSE2D: ("tt_conv_transpose", plan_conv_transpose2d),
        OpKind.MAX_POOL2D: ("tt_pool", plan_pool2d), OpKind.AVG_POOL2D: ("tt_pool", plan_pool2d),
        OpKind.TILIZE: ("tt_layout", plan_layout), OpKind.UNTILIZE: ("tt_layout", plan_layout),
        OpKind.TO_LAYOUT: ("tt_layout", plan_layout),
        OpKind.RESHAPE: ("tt_data_movement", plan_reshape), OpKind.PERMUTE: ("tt_data_movement", plan_permute),
        OpKind.PAD: ("tt_data_movement", plan_pad),
        OpKind.TRANSPOSE: ("tt_data_movement", plan_transpose), OpKind.CONCAT: ("tt_data_movement", plan_concat),
        OpKind.SLICE: ("tt_tm", plan_slice), OpKind.REPEAT: ("tt_tm", plan_repeat),
        OpKind.REPEAT_INTERLEAVE: ("tt_tm", plan_repeat_interleave),
        OpKind.GATHER: ("tt_gather", plan_gather),
        OpKind.INTERLEAVED_TO_SHARDED: ("tt_sharding", plan_interleaved_to_sharded),
        OpKind.SHARDED_TO_INTERLEAVED: ("tt_sharding", plan_sharded_to_interleaved),
        OpKind.TO_MEMORY_CONFIG: ("tt_sharding", plan_to_memory_config),
        OpKind.ROTARY_EMBEDDING_LLAMA: ("tt_rotary", plan_rotary),
        OpKind.NLP_CREATE_QKV_HEADS: ("tt_heads", plan_create_heads),
        OpKind.NLP_CREATE_QKV_HEADS_DECODE: ("tt_heads", plan_create_heads_decode),
        OpKind.NLP_CONCAT_HEADS_DECODE: ("tt_heads", plan_concat_heads_decode),
        OpKind.SDPA_CHUNKED: ("tt_sdpa_paged", plan_sdpa_chunked),
        OpKind.FILL_CACHE: ("tt_kv_cache", plan_fill_cache), OpKind.PAGED_FILL_CACHE: ("tt_kv_cache", plan_fill_cache),
        OpKind.PAGED_UPDATE_CACHE: ("tt_kv_cache", plan_update_cache),
        OpKind.UPDATE_CACHE: ("tt_kv_cache", plan_cache_update),
        OpKind.RMS_NORM_PRE_ALL_GATHER: ("tt_norm_distributed", plan_rms_pre),
        OpKind.RMS_NORM_POST_ALL_GATHER: ("tt_norm_distributed", plan_rms_post),
        OpKind.ALL_GATHER_ASYNC: ("tt_ccl", plan_all_gather),
        OpKind.REDUCE_SCATTER_ASYNC: ("tt_ccl", plan_reduce_scatter),
        OpKind.ALL_GATHER_MATMUL_ASYNC: ("tt_all_gather_matmul", plan_all_gather_matmul),
        OpKind.FROM_TORCH: ("tt_host", plan_from_torch),
        OpKind.FAST_REDUCE_NC: ("tt_fast_reduce_nc", plan_fast_reduce_nc),
        OpKind.ALL_GATHER: ("tt_all_gather", plan_ttnn_all_gather),
    }
    for kind, (family, rule) in singles.items():
        table[kind] = OpRule(family, rule)
    return table


#: every operation kind's rule
REGISTRY: dict[OpKind, OpRule] = _build()


def plan_op(kind: OpKind | str, request: OpRequest, attrs: Any = None) -> OpPlan:
    """The plan of operation `kind` (an OpKind or its ttnn name) on `request` (attrs:
    the family's attribute value)."""
    name = kind.value if isinstance(kind, OpKind) else kind
    rule = REGISTRY.get(kind) if isinstance(kind, OpKind) else next(
        (r for k, r in REGISTRY.items() if k.value == kind), None)
    if rule is None:
        raise InputError(f"no Tenstorrent rule for operation {name}; known: "
                         f"{', '.join(sorted(k.value for k in REGISTRY))}")
    op_kind = kind if isinstance(kind, OpKind) else OpKind(kind)
    return rule.plan(op_kind, request, attrs)
