"""What changed between tt-metal and tt-mlir builds, read from devices/software.toml.

tt-metal's allocator and messages are not one thing over time: the out-of-memory string
grew two tails (2025-10 "bank size is only", 2026-02 the allocator statistics), the core
range print form changed, the trace region was carved per bank and then as a total
(tt-metal PR #47122, #47766), and tt-mlir's default `l1_small_size` went from 32 KiB to
64 KiB (tt-mlir PR #5557). Each such knob is a timeline of dated changes in the data
file, each with its source; `software_at(date, stack)` replays them up to a build's date.

Worked example: a 2026-04-21 build on the tt-mlir stack gets the statistics form of the
OOM message, `[(x=0,y=0) - (x=7,y=7)]` core ranges, the per-bank trace rule, an
`l1_small_size` of 65,536 and ETH dispatch.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from importlib import resources
from typing import Any

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.tiles import DataType


class Stack(Enum):
    """Who opens the device: tt-metal's own defaults (ttnn.open_device) or tt-mlir's
    runtime (and tt-xla through it)."""

    TT_METAL = "tt-metal"
    TT_MLIR = "tt-mlir"

    @classmethod
    def parse(cls, text: str) -> "Stack":
        for stack in cls:
            if stack.value == text.strip().lower():
                return stack
        raise InputError(f"unknown stack {text!r}; expected one of {', '.join(s.value for s in cls)}")


class DispatchCoreType(Enum):
    """tt-metal `DispatchCoreType`: dispatch kernels on ethernet cores (ETH) or on a row
    or column of worker cores (WORKER), which then hold no L1 bank."""

    WORKER = "worker"
    ETH = "eth"

    @classmethod
    def parse(cls, text: str) -> "DispatchCoreType":
        for kind in cls:
            if kind.value == text.strip().lower():
                return kind
        raise InputError(f"unknown dispatch core type {text!r}; expected one of {', '.join(k.value for k in cls)}")


class OomForm(Enum):
    """The tail of bank_manager.cpp's out-of-memory string."""

    OLDEST = "oldest"  # ends after "where each bank needs to store {} B"
    ONLY = "only"  # ", but bank size is only {} B"
    STATS = "stats"  # ", but bank size is {} B (allocated: {} B, free: {} B, largest free block: {} B)"


class CoreRangeForm(Enum):
    """How `CoreRange::str()` prints in program.cpp's messages."""

    XY = "xy"  # [(x=0,y=0) - (x=7,y=7)]
    DASH = "dash"  # [0-0 - 7-7]


class TraceRule(Enum):
    """How tt-metal's AllocatorImpl::init_one_bank_per_channel carves the trace region
    out of every DRAM bank (tt_metal/impl/allocator/allocator.cpp)."""

    PER_BANK = "per_bank"  # every bank loses the whole (aligned) trace_region_size
    TOTAL_DRAM_ALIGNED = "total_dram_aligned"  # PR #47122: ceil(T / banks) up to the DRAM alignment
    TOTAL_PAGE_ALIGNED = "total_page_aligned"  # PR #47766: ceil(T / banks) up to the largest trace page


class MatmulFusion(Enum):
    """Which matmuls of one input by constant weights tt-mlir's TTIR fusing concatenates
    into one (lib/Dialect/TTIR/Transforms/TTIRFusing.cpp; fusion.py `fuse_shared_lhs`)."""

    NONE = "none"  # no pattern concatenates weights
    ATTENTION = "attention"  # SplitQueryKeyValueAndSplitHeadsUpdatePattern: Q, K and V only
    SHARED_LHS = "shared_lhs"  # SharedLHSMatmulFusion: any three or more (Q/K/V; not gate/up)


class WhereBroadcast(Enum):
    """How `ttnn.where` runs and what operand shapes tt-mlir gives it (devices/
    software.toml `where_broadcast`; the tt-mlir frontend's `convert_where`)."""

    COMPOSITE = "composite"  # tt-metal's composite of five eltwise programs (not modelled)
    EXPLICIT = "explicit"  # the ternary program; tt-mlir repeats every operand to the result's shape
    IMPLICIT = "implicit"  # the ternary program broadcasts; a splat operand is a volume-1 tensor


class AttentionMask(Enum):
    """An attention's mask as `_check_sdpa_constraints` sees it (composite_ops.py)."""

    NONE = "none"
    BFLOAT16 = "bfloat16"  # an additive mask in bfloat16
    BOOLEAN = "boolean"  # transformers' `sdpa_mask`
    OTHER = "other"  # an additive mask of another type (float32, ...)


class SdpaLowering(Enum):
    """What a torch `F.scaled_dot_product_attention` reaches tt-mlir as, by build
    (devices/software.toml `sdpa_lowering`; the tt-mlir frontend's torch_sdpa.py)."""

    UNKNOWN = "unknown"  # no tt-xla torch backend known this early: refused
    TORCH = "torch"  # torch.export's decomposition: aten's math kernel, float32 for bf16 / f16
    COMPOSITE = "composite"  # tt-xla's composite for bf16 q, k, v and mask; else torch's decomposition
    COMPOSITE_BOOL = "composite_bool"  # the composite also for a boolean mask (made additive)

    def composite(self, qkv_bf16: bool, mask: AttentionMask) -> bool:
        """Whether tt-xla's composite takes an attention whose query, key and value are
        bfloat16 (or not) with `mask`."""
        if self in (SdpaLowering.UNKNOWN, SdpaLowering.TORCH) or not qkv_bf16:
            return False
        allowed = {AttentionMask.NONE, AttentionMask.BFLOAT16}
        if self is SdpaLowering.COMPOSITE_BOOL:
            allowed.add(AttentionMask.BOOLEAN)
        return mask in allowed


class SdpaFusing(Enum):
    """Whether tt-mlir fuses torch's decomposed attention back into one SDPA
    (devices/software.toml `sdpa_fusing`; the tt-mlir frontend's `convert_sdpa`)."""

    NONE = "none"  # the decomposition runs as it is
    OPTIMIZER = "optimizer"  # at levels 1 and 2, where the op model validates the fused SDPA


class LegalLayoutGrid(Enum):
    """The worker rectangle tt-mlir's legal-layout analysis holds a sharded layout's
    cores to (devices/software.toml `legal_layout_grid`; the tt-mlir frontend's
    `legal_sharded_layouts`)."""

    DEVICE = "device"  # the device's worker grid, x below its columns, y below its rows
    TRANSPOSED = "transposed"  # CoreCoord{rows, columns}: x below the rows, y below the columns

    def holds(self, box_x: int, box_y: int, grid: tuple[int, int]) -> bool:
        """Whether a shard whose cores' bounding box ends at column `box_x` and row
        `box_y` (exclusive ends: its width and height from core (0, 0)) is legal on a
        worker `grid` of (columns, rows)."""
        columns, rows = grid
        if self is LegalLayoutGrid.TRANSPOSED:
            columns, rows = rows, columns
        return box_x <= columns and box_y <= rows


class MatmulConfigSource(Enum):
    """Who gives a matmul with a sharded L1 output its program config at level 2
    (devices/software.toml `matmul_program_config`; the tt-mlir frontend's
    `tt_mlir_matmul_config`)."""

    TT_METAL = "tt_metal"  # no config in the IR: tt-metal's generate_matmul_program_config
    TT_MLIR = "tt_mlir"  # MatmulProgramConfig.cpp generateMatmulProgramConfig, per legal layout


class ReshardRule(Enum):
    """Which operand reshard candidates tt-mlir's greedy layout propagation explores at
    level 2 (devices/software.toml `reshard_candidates`; the tt-mlir frontend's
    layouts.py `Propagation.input_candidates`)."""

    NONE = "none"  # as produced, or an L1-sharded operand moved to L1 interleaved
    GLOBAL_8 = "global_8"  # #7856: the 8 largest grids over all sharding types
    PER_TYPE_4 = "per_type_4"  # #7987: the 4 largest grids per sharding type, per-operand filters


class EraseInverseOps(Enum):
    """Which functions tt-mlir's EraseInverseOps pass runs on (devices/software.toml
    `erase_inverse_ops`; the tt-mlir frontend's inverse_ops.py)."""

    FLATTENED = "flattened"  # those with flattened sliding-window operations only
    ALL = "all"  # every function (#6195)


class CumsumLowering(Enum):
    """How tt-mlir lowers a cumulative sum (devices/software.toml `cumsum_lowering`; the
    tt-mlir frontend's `convert_cumsum`)."""

    MOREH_DEVICE = "moreh_device"  # tt-metal's own moreh_cumsum device op (not modelled)
    MOREH_RANK4 = "moreh_rank4"  # reshaped to rank 4, dim >= 2 permuted to 0, ttnn.moreh_cumsum
    NATIVE = "native"  # ttnn.cumsum as it is


class Accumulation(Enum):
    """Which circular buffers tt-metal's `prim::accumulation` factory creates (devices/
    software.toml `accumulation_cbs`; ops/tt_accumulation.py)."""

    MOREH = "moreh"  # tt-metal's moreh_cumsum device operation, before PR #24575 (not modelled)
    FOUR_TILE = "four_tile"  # SRC, ACC, START, DST of 4 tiles each
    ONE_TILE_ACC = "one_tile_acc"  # SRC 4, a 1-tile ACC (float32 unless integer), DST 4


class Conv1dLowering(Enum):
    """How tt-mlir lowers torch-xla's 1-D convolution, a 2-D one of height 1 (devices/
    software.toml `conv1d_lowering`; the tt-mlir frontend's convert_conv.py)."""

    CONV2D = "conv2d"  # ttnn.conv2d of [N, C, 1, L], as any 2-D convolution
    NATIVE = "native"  # ttnn.conv1d (convert_conv1d)


class GatherLowering(Enum):
    """How torch.gather reaches the device (devices/software.toml `gather_lowering`; the
    tt-mlir frontend's `convert_gather_elements`)."""

    EMBEDDING = "embedding"  # stablehlo.gather decomposed to ttnn.embedding
    GATHER = "gather"  # tt-xla's tenstorrent.gather composite, ttnn.gather


class ArgmaxLowering(Enum):
    """How tt-mlir runs an argmax (devices/software.toml `argmax_lowering`; the tt-mlir
    frontend's `convert_argmax`)."""

    RANK4_SINGLE = "rank4_single"  # reshaped to rank 4, row-major, single-core
    SINGLE = "single"  # row-major, single-core
    MULTI = "multi"  # row-major, multi-core


class SumPrecision(Enum):
    """The data type tt-metal's generic sum writes between the stages of a bfloat16 sum
    over several dimensions (devices/software.toml `sum_precision`; ops/tt_reduce.py)."""

    STAGE_DTYPE = "stage_dtype"  # every stage writes the input's data type
    FP32_CHAIN = "fp32_chain"  # PR #43367: float32 between stages, bfloat16 from the last


class MeanScale(Enum):
    """Where tt-metal's mean over several dimensions applies 1 / count (devices/
    software.toml `mean_scale`; ops/tt_reduce.py)."""

    RESCALE_AFTER = "rescale_after"  # a ttnn.mul_sfpu program after the last step
    FIRST_STEP = "first_step"  # PR #28869: the first step's scaler


class RmsNormFusion(Enum):
    """Which RMS norms tt-xla's FX fusion hands tt-mlir as one `ttnn.rms_norm`, by build
    (devices/software.toml `rms_norm_fusion`; the tt-mlir frontend's fusion.py
    `fuse_rms_norm`). A norm not fused stays torch's decomposition, in float32."""

    NONE = "none"  # no FX fusion pass yet
    ALL = "all"  # every norm with a weight
    NARROW = "narrow"  # only weights up to 3,968 wide (tt-xla's match filter)

    def fuses(self, width: int) -> bool:
        """Whether a norm with a weight of `width` features is fused."""
        return self is RmsNormFusion.ALL or (self is RmsNormFusion.NARROW and width <= RMS_NORM_FILTER_WIDTH)


#: tt-xla fusion_providers.py `RMSNormFusionProvider.match_filter` UPPER_BOUND ("the last
#: multiple of 32 that worked"; 347fe104d, 2026-01-26, to dede8c41f, 2026-03-26)
RMS_NORM_FILTER_WIDTH = 3968


class NormLargeTensor(Enum):
    """Which norms tt-metal's interleaved LayerNorm factory moves to its large-tensor
    kernels when their circular buffers would pass 95 % of L1 (devices/software.toml
    `norm_large_tensor`; ops/tt_norm.py `interleaved_program`)."""

    LAYER_NORM = "layer_norm"  # LayerNorm only; a row of 60 tiles (weights or float32), else 120
    WITH_RMS = "with_rms"  # RMSNorm too; 56 / 112 tiles, c_26's one-tile accumulator, c_24 kept


class GroupNormLowering(Enum):
    """What a torch GroupNorm becomes on the device by build (devices/software.toml
    `group_norm_lowering`; the tt-mlir frontend's `convert_group_norm`)."""

    UNKNOWN = "unknown"  # no tt-xla torch backend known this early
    TORCH = "torch"  # tt-xla decomposes aten.native_group_norm (var_mean in float32)
    FUSED = "fused"  # tt-xla's tenstorrent.group_norm composite, ttnn.group_norm at every level
    DECOMPOSED = "decomposed"  # the composite; level 0 decomposes ttnn.group_norm
    DECOMPOSED_ANY_C = "decomposed_any_c"  # and C need not be a multiple of 32
    DECOMPOSED_UNALIGNED = "decomposed_unaligned"  # and H*W need not be: such a norm is decomposed at every level

    @property
    def decomposes(self) -> bool:
        """Whether tt-mlir's TTNN decomposition pass splits ttnn.group_norm."""
        return self not in (GroupNormLowering.UNKNOWN, GroupNormLowering.TORCH, GroupNormLowering.FUSED)

    @property
    def takes_rank3(self) -> bool:
        """Whether a rank-3 [N, C, L] input is reshaped to rank 4 (tt-mlir d7345b6def)."""
        return self.decomposes

    @property
    def checks_channels(self) -> bool:
        """Whether ttnn.group_norm's verifier wants C a multiple of 32 (to tt-mlir 67b4364aff)."""
        return self in (GroupNormLowering.FUSED, GroupNormLowering.DECOMPOSED)

    @property
    def checks_height(self) -> bool:
        """Whether ttnn.group_norm's verifier wants N * H * W a multiple of 32 (to tt-mlir bb71bc74a0)."""
        return self is not GroupNormLowering.DECOMPOSED_UNALIGNED


class ReaderIndicesCb(Enum):
    """How the build sizes conv2d's READER_INDICES CB (devices/software.toml
    `reader_indices_cb`). WORST_CASE: `get_cb_info`'s page, 2 B an output row, for the
    tensors in DRAM, checked against the tensor ("CB page size {} should be greater than
    the config tensor page size {}"); in L1_SMALL the tensor's own page, unchecked.
    ACTUAL (tt-metal PR #43193, 2026-04-27, "Reader Indices CB Sizing Fix for Pool /
    Conv"): the tensor's own page either way, checked against the worst case ("Reader
    indices buffer page size {} exceeds worst-case CB size {}": tt-xla's dots.ocr patch
    embedding, 132 against 64)."""

    WORST_CASE = "worst_case"
    ACTUAL = "actual"


class SlidingWindowFormat(Enum):
    """The sliding-window config tensors' format (devices/software.toml
    `sliding_window_format`; ops/tt_sliding_window.py ports SEGMENTS). LEGACY: one reader
    index an output stick and the halo's pad / local / remote configs (sliding_window.cpp
    before tt-metal PRs #23025 and #23825, June 2025), not ported: the tt-mlir frontend
    refuses convolutions and pools on such builds."""

    LEGACY = "legacy"
    SEGMENTS = "segments"


class BlockGrids(Enum):
    """A block-sharded conv2d's grids (devices/software.toml `conv_block_grids`; ops/
    tt_conv_grid.py). SHARED: one grid for input and output, its channel cores dividing
    both channel counts (conv2d_utils.cpp `determine_parallel_config` before tt-metal PR
    #27767). DECOUPLED (PR #27767, "Conv2d decouple input and output shard grids"): the
    input's channel cores from its own channel blocks, the output's from its own channel
    tiles, the conv program on their union."""

    SHARED = "shared"
    DECOUPLED = "decoupled"


class Conv3dRule(Enum):
    """The Conv3dConfig tt-mlir gives `ttnn.experimental.conv3d` (devices/software.toml
    `conv3d_config`; the tt-mlir frontend's convert_conv3d.py)."""

    NONE = "none"  # no TTIR conv3d: a 3-D convolution does not legalize
    UNMODELLED = "unmodelled"  # a config tileplan does not model (tt-metal's own of the build)
    BLOCKING = "blocking"  # C_out_block 32, C_in_block the largest of 128/96/64/32 dividing C_in
    TILE = "tile"  # C_out_block = C_in_block = 32
    MINIMAL = "minimal"  # C_out_block 32, C_in_block the smallest valid for the kernel


class TraceAlignment(Enum):
    """What L1BankingAllocator::generate_config aligns trace_region_size to."""

    DRAM = "dram"
    DRAM_X_BANKS = "dram_x_banks"


@dataclass(frozen=True, slots=True)
class Software:
    """tt-metal's behaviour at one build date and one stack's defaults for it.

    Invariants: non-negative default sizes; a trace page maximum of 1,024 B or more."""

    date: str
    stack: Stack
    oom_message: OomForm
    core_range_text: CoreRangeForm
    trace_rule: TraceRule
    trace_alignment: TraceAlignment
    trace_page_max: int
    dynamic_trace: bool
    trace_device_word: str
    conv_transpose2d_dram_path: bool
    matmul_fusion: MatmulFusion
    #: the widest fused output SharedLHSMatmulFusion makes (0: no cap)
    shared_lhs_max_width: int
    #: the data types tt-mlir's runtime tilizes on the device when it uploads a
    #: row-major host argument (the tt-mlir frontend's `stage_uploads`)
    device_tilize: frozenset[DataType]
    #: whether const-eval inputs stay in host memory (else they move to device DRAM on
    #: first use and stay: the tt-mlir frontend's `retain_const_eval_inputs`)
    const_eval_inputs_on_host: bool
    #: the Conv3dConfig tt-mlir gives ttnn.experimental.conv3d
    conv3d_config: Conv3dRule
    where_broadcast: WhereBroadcast
    cumsum_lowering: CumsumLowering
    conv1d_lowering: Conv1dLowering
    gather_lowering: GatherLowering
    argmax_lowering: ArgmaxLowering
    #: what tt-mlir's Conv2dConfig says of reallocate_halo_output and config_tensors_in_dram
    conv_reallocate_halo: bool
    conv_config_tensors_in_dram: bool
    #: what tt-mlir gives ttnn.max_pool2d / avg_pool2d of config_tensor_in_dram (ops/tt_pool.py)
    pool_config_tensors_in_dram: bool
    #: how tt-metal sizes conv2d's READER_INDICES CB and checks it (tt_conv_config.py)
    reader_indices_cb: ReaderIndicesCb
    #: whether a block-sharded conv2d's output takes its own channel cores (tt_conv_grid.py)
    conv_block_grids: BlockGrids
    #: the sliding-window config tensors' format (tt_sliding_window.py ports SEGMENTS)
    sliding_window_format: SlidingWindowFormat
    accumulation_cbs: Accumulation
    sum_precision: SumPrecision
    mean_scale: MeanScale
    group_norm_lowering: GroupNormLowering
    norm_large_tensor: NormLargeTensor
    rms_norm_fusion: RmsNormFusion
    sdpa_lowering: SdpaLowering
    sdpa_fusing: SdpaFusing
    #: how many of the largest legal sharded layouts tt-mlir keeps per operation
    legal_layouts_cap: int
    legal_layout_grid: LegalLayoutGrid
    matmul_program_config: MatmulConfigSource
    reshard_candidates: ReshardRule
    erase_inverse_ops: EraseInverseOps
    l1_small_size: int
    trace_region_size: int
    dispatch: DispatchCoreType
    #: whether the device keeps a program cache: a cached program holds the config
    #: tensors its factory made (the halo's and a conv's sliding-window configs) for as
    #: long as it is cached, one set for every distinct program (plan.py)
    program_cache: bool
    sources: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        assert self.l1_small_size >= 0 and self.trace_region_size >= 0, self
        assert self.trace_page_max >= TRACE_PAGE_MIN, self
        assert self.legal_layouts_cap >= 1, self

    def source(self, what: str) -> str:
        """Where the value of knob `what` comes from."""
        return dict(self.sources)[what]


#: the smallest trace buffer page (tt-metal trace/dispatch.cpp kExecBufPageMin; PR #47766
#: kMinTraceBufPageSize)
TRACE_PAGE_MIN = 1024

_KNOBS = ("oom_message", "core_range_text", "trace_rule", "trace_alignment", "trace_page_max", "dynamic_trace",
          "trace_device_word", "conv_transpose2d_dram_path", "matmul_fusion", "shared_lhs_max_width", "device_tilize",
          "const_eval_inputs_on_host", "conv3d_config", "where_broadcast",
          "cumsum_lowering", "accumulation_cbs", "conv1d_lowering",
          "gather_lowering", "argmax_lowering", "conv_reallocate_halo", "conv_config_tensors_in_dram",
          "pool_config_tensors_in_dram", "reader_indices_cb", "conv_block_grids",
          "sliding_window_format",
          "sum_precision", "mean_scale", "group_norm_lowering", "norm_large_tensor", "rms_norm_fusion",
          "sdpa_lowering", "sdpa_fusing", "legal_layouts_cap", "legal_layout_grid",
          "matmul_program_config", "reshard_candidates", "erase_inverse_ops")
_STACK_KNOBS = ("l1_small_size", "trace_region_size", "dispatch", "program_cache")


@lru_cache(maxsize=1)
def _changes() -> tuple[dict[str, Any], ...]:
    text = resources.files("tileplan.targets.tenstorrent").joinpath("devices/software.toml").read_text()
    data = tomllib.loads(text)
    assert data.get("schema") == 1, "devices/software.toml: schema 1 expected"
    changes = tuple(sorted(data["change"], key=lambda c: c["since"]))
    for change in changes:
        assert {"since", "what", "value", "source"} <= set(change), change
    return changes


def software_at(date: str, stack: Stack) -> Software:
    """Every knob's value on `date` (YYYY-MM-DD) for `stack`: the latest change on or
    before the date. A date before a knob's first change is an error naming it."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for change in _changes():
        if change["since"] > date:
            break
        what = change["what"]
        if "." in what:
            what, who = what.split(".", 1)
            if who != stack.value:
                continue
        values[what] = change["value"]
        sources[what] = f"{change['source']} (since {change['since']})"
    missing = [k for k in (*_KNOBS, *_STACK_KNOBS) if k not in values]
    if missing:
        raise InputError(f"build date {date}: tileplan knows no {', '.join(missing)} for {stack.value} that early; "
                         "pick a later version")
    return Software(
        date=date, stack=stack, oom_message=OomForm(values["oom_message"]),
        core_range_text=CoreRangeForm(values["core_range_text"]), trace_rule=TraceRule(values["trace_rule"]),
        trace_alignment=TraceAlignment(values["trace_alignment"]), trace_page_max=int(values["trace_page_max"]),
        dynamic_trace=bool(values["dynamic_trace"]), trace_device_word=str(values["trace_device_word"]),
        conv_transpose2d_dram_path=bool(values["conv_transpose2d_dram_path"]),
        matmul_fusion=MatmulFusion(values["matmul_fusion"]),
        shared_lhs_max_width=int(values["shared_lhs_max_width"]),
        device_tilize=frozenset(map(DataType, values["device_tilize"])),
        const_eval_inputs_on_host=bool(values["const_eval_inputs_on_host"]),
        conv3d_config=Conv3dRule(values["conv3d_config"]),
        where_broadcast=WhereBroadcast(values["where_broadcast"]),
        cumsum_lowering=CumsumLowering(values["cumsum_lowering"]),
        conv1d_lowering=Conv1dLowering(values["conv1d_lowering"]),
        gather_lowering=GatherLowering(values["gather_lowering"]),
        argmax_lowering=ArgmaxLowering(values["argmax_lowering"]),
        conv_reallocate_halo=bool(values["conv_reallocate_halo"]),
        conv_config_tensors_in_dram=bool(values["conv_config_tensors_in_dram"]),
        pool_config_tensors_in_dram=bool(values["pool_config_tensors_in_dram"]),
        reader_indices_cb=ReaderIndicesCb(values["reader_indices_cb"]),
        conv_block_grids=BlockGrids(values["conv_block_grids"]),
        sliding_window_format=SlidingWindowFormat(values["sliding_window_format"]),
        accumulation_cbs=Accumulation(values["accumulation_cbs"]),
        sum_precision=SumPrecision(values["sum_precision"]), mean_scale=MeanScale(values["mean_scale"]),
        group_norm_lowering=GroupNormLowering(values["group_norm_lowering"]),
        norm_large_tensor=NormLargeTensor(values["norm_large_tensor"]),
        rms_norm_fusion=RmsNormFusion(values["rms_norm_fusion"]),
        sdpa_lowering=SdpaLowering(values["sdpa_lowering"]), sdpa_fusing=SdpaFusing(values["sdpa_fusing"]),
        legal_layouts_cap=int(values["legal_layouts_cap"]),
        legal_layout_grid=LegalLayoutGrid(values["legal_layout_grid"]),
        matmul_program_config=MatmulConfigSource(values["matmul_program_config"]),
        reshard_candidates=ReshardRule(values["reshard_candidates"]),
        erase_inverse_ops=EraseInverseOps(values["erase_inverse_ops"]),
        l1_small_size=int(values["l1_small_size"]), trace_region_size=int(values["trace_region_size"]),
        dispatch=DispatchCoreType(values["dispatch"]), program_cache=bool(values["program_cache"]),
        sources=tuple(sorted(sources.items())))
