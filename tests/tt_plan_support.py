"""Small hand-built TTNN programs for the Tenstorrent planner's tests: tensors by
spec, operations by kind, the frees after each, made into a `TtProgram`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tileplan.model.role import Role
from tileplan.targets.tenstorrent.memory import (
    DRAM_INTERLEAVED, L1_INTERLEAVED, BufferType, CoreRangeSet, MemoryConfig, MemoryLayout, ShardSpec, TensorSpec)
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.ops.tt_data_movement import ReshapeAttrs
from tileplan.targets.tenstorrent.ops.tt_reduce import ReduceAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul import MatmulAttrs
from tileplan.targets.tenstorrent.ops.tt_matmul_config import MatmulMultiCoreReuseMultiCast1DProgramConfig
from tileplan.targets.tenstorrent.program import Frontend, Op, Tensor, TtProgram
from tileplan.targets.tenstorrent.tiles import DataType, Layout


L1 = OutputRequest(BufferType.L1)


def tile(shape: tuple[int, ...], memory: MemoryConfig = DRAM_INTERLEAVED,
         dtype: DataType = DataType.BFLOAT16) -> TensorSpec:
    return TensorSpec(shape, dtype, Layout.TILE, memory)


def l1_tiles_per_bank(tiles: int, banks: int = 72) -> TensorSpec:
    """An L1-interleaved bf16 tensor of `tiles` tiles in each of `banks` banks."""
    return tile((1, 1, 32 * tiles, 32 * banks), L1_INTERLEAVED)


@dataclass
class Builder:
    """Tensors, uploads and operations added in program order."""

    name: str = "test"
    tensors: list[Tensor] = field(default_factory=list)
    uploads: list[int] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    frees: list[tuple[int, ...]] = field(default_factory=list)
    traces: list[tuple[int, int]] = field(default_factory=list)

    def upload(self, name: str, spec: TensorSpec, role: Role = Role.WEIGHT) -> int:
        t = len(self.tensors)
        self.tensors.append(Tensor(t, name, role, spec, module=name.rsplit(".", 1)[0]))
        self.uploads.append(t)
        return t

    def op(self, kind: OpKind, name: str, inputs: tuple[int, ...], out: OutputRequest | None = None,
           attrs: object = None, free: tuple[int, ...] = ()) -> int:
        """One operation with one output (DRAM interleaved unless `out` says); its id."""
        return self.multi(kind, name, inputs, 1, out, attrs, free)[0]

    def multi(self, kind: OpKind, name: str, inputs: tuple[int, ...], outputs: int, out: OutputRequest | None = None,
              attrs: object = None, free: tuple[int, ...] = ()) -> tuple[int, ...]:
        made = []
        for k in range(outputs):
            t = len(self.tensors)
            self.tensors.append(Tensor(t, name if outputs == 1 else f"{name}.{k}", Role.ACTIVATION))
            made.append(t)
        self.ops.append(Op(len(self.ops), kind, name, inputs, tuple(made), out or OutputRequest(), attrs,
                           module=name))
        self.frees.append(free)
        return tuple(made)

    def program(self, outputs: tuple[int, ...] = ()) -> TtProgram:
        return TtProgram(self.name, Frontend.TT_MLIR, tuple(self.tensors), tuple(self.uploads), tuple(self.ops),
                         tuple(self.frees), outputs, tuple(self.traces))


# -- programs the tests plan ------------------------------------------------------------

def mlp() -> Builder:
    """x @ w into L1, then relu into L1 (fits)."""
    b = Builder("mlp")
    x = b.upload("x", tile((1, 1, 1024, 1024)), Role.INPUT)
    w = b.upload("mlp.w", tile((1, 1, 1024, 1024)))
    h = b.op(OpKind.MATMUL, "mlp.matmul", (x, w), L1, free=(x,))
    b.op(OpKind.RELU, "mlp.relu", (h,), L1, free=(h,))
    return b


def reduce_both() -> Builder:
    """A reduction over W then H: an intermediate between its two programs."""
    b = Builder("reduce")
    x = b.upload("x", tile((1, 1, 256, 256)), Role.INPUT)
    b.op(OpKind.SUM, "sum", (x,), L1, ReduceAttrs((-1, -2)))
    return b


def view_then_relu() -> Builder:
    """A reshape that is a view, then relu: the view names its input's buffer."""
    b = Builder("view")
    x = b.upload("x", tile((1, 1, 64, 1024), L1_INTERLEAVED), Role.INPUT)
    v = b.op(OpKind.RESHAPE, "view", (x,), L1, ReshapeAttrs((1, 2, 32, 1024)), free=(x,))
    b.op(OpKind.RELU, "relu", (v,), L1, free=(v,))
    return b


def falcon_8044() -> Builder:
    """tt-mlir #8044's state on n150 (2026-04-21 build): 417,792 B a bank allocated in two
    blocks around a 522,240-B hole, 389,856 B free at the bottom; then 48 height shards
    of 270 tiles (552,960 B) asked: a fragmentation OOM."""
    b = Builder("falcon")
    b.upload("a", l1_tiles_per_bank(102))
    hole = b.upload("hole", l1_tiles_per_bank(255), Role.INPUT)
    b.upload("b", l1_tiles_per_bank(102))
    x = b.upload("x", tile((1, 1, 414720, 32)), Role.INPUT)
    w = b.upload("w", tile((1, 1, 32, 32)))
    b.op(OpKind.RELU, "to_dram", (hole,), free=(hole,))
    config = MatmulMultiCoreReuseMultiCast1DProgramConfig((8, 6), 1, 1, 1, 270, 1, mcast_in0=False)
    b.op(OpKind.MATMUL, "lm.matmul", (x, w), OutputRequest(BufferType.L1, MemoryLayout.HEIGHT_SHARDED),
         MatmulAttrs(config))
    b.op(OpKind.RELU, "never", (x,))
    return b


def bloom_dram() -> Builder:
    """Ten 102,400,000-B-a-bank weights, then Bloom's 250,880 x 2,048 bf16 embedding
    (85,635,072 B a bank): a DRAM capacity OOM on n150."""
    b = Builder("bloom")
    for k in range(10):
        b.upload(f"layer{k}", tile((1, 1, 32 * 50_000, 32 * 12)))
    b.upload("word_embeddings", tile((250880, 2048)))
    return b


def cb_grow() -> Builder:
    """A 1-D matmul config of 400 tile rows a core: CBs past L1."""
    b = Builder("grow")
    a = b.upload("a", tile((1, 1, 400 * 32 * 8, 32)), Role.INPUT)
    w = b.upload("w", tile((1, 1, 32, 32)))
    config = MatmulMultiCoreReuseMultiCast1DProgramConfig((8, 1), 1, 1, 1, 400, 1, mcast_in0=False)
    b.op(OpKind.MATMUL, "mm", (a, w), OutputRequest(), MatmulAttrs(config))
    return b


def cb_clash() -> Builder:
    """649 tiles a bank of L1 leave 736 B above the base: a unary's CBs reach it."""
    b = Builder("clash")
    b.upload("resident", l1_tiles_per_bank(649))
    x = b.upload("x", tile((1, 1, 32, 32)), Role.INPUT)
    b.op(OpKind.RELU, "relu", (x,))
    return b


def too_many_shards() -> Builder:
    b = Builder("shards")
    spec = tile((1, 1, 80 * 32, 32), MemoryConfig(BufferType.L1, MemoryLayout.HEIGHT_SHARDED,
                                                   ShardSpec(CoreRangeSet.from_count(80, 8, 10), (32, 32))))
    b.upload("x", spec, Role.INPUT)
    return b


#: every program above, by name
PROGRAMS = {"mlp": mlp, "reduce": reduce_both, "view": view_then_relu, "falcon_8044": falcon_8044,
            "bloom": bloom_dram, "grow": cb_grow, "clash": cb_clash, "shards": too_many_shards}


def small_config(l1_small_tiles: int = 20) -> Builder:
    """A config tensor in L1_SMALL (20 tiles a bank: 40,960 B) and an activation in L1."""
    b = Builder("small")
    b.upload("halo.config", tile((1, 1, 32 * l1_small_tiles, 32 * 72), MemoryConfig(BufferType.L1_SMALL)))
    x = b.upload("x", tile((1, 1, 1024, 1024)), Role.INPUT)
    b.op(OpKind.RELU, "relu", (x,), L1)
    return b


def clash_by_activation() -> Builder:
    """An operation's L1 output of 649 tiles a bank leaves 736 B above the base: its own
    program's CBs clash with it."""
    b = Builder("activation_clash")
    x = b.upload("x", tile((1, 1, 32 * 649, 32 * 72)), Role.INPUT)
    h = b.op(OpKind.RELU, "big.relu", (x,), L1, free=(x,))
    b.op(OpKind.RELU, "next.relu", (h,), free=(h,))
    return b


PROGRAMS.update({"small": small_config, "activation_clash": clash_by_activation})


def traced(stream_bytes: int = 5000) -> Builder:
    """The mlp with a trace of `stream_bytes` captured after its last operation."""
    b = mlp()
    b.traces.append((1, stream_bytes))
    return b


PROGRAMS["traced"] = traced


def staged(tiles_per_bank: tuple[int, ...], name: str = "staged") -> Builder:
    """L1-interleaved bf16 weights of the given tiles a bank (n150: 72 banks), each first
    uploaded row-major (`Tensor.staged`: the same bytes a bank for multiples of 9 tiles)."""
    b = Builder(name)
    for k, n in enumerate(tiles_per_bank):
        spec = l1_tiles_per_bank(n)
        t = b.upload(f"w{k}", spec)
        b.tensors[t] = replace(b.tensors[t], staged=replace(spec, layout=Layout.ROW_MAJOR))
    return b


def staged_row_major_fails() -> Builder:
    """w2's row-major form finds free L1 in three holes, none large enough."""
    return staged((99, 198, 252), "staged_row_major_fails")


def staged_tile_fails() -> Builder:
    """w2's row-major form is placed; its TILE form then finds no block."""
    return staged((27, 63, 252), "staged_tile_fails")


PROGRAMS.update({"staged_row_major_fails": staged_row_major_fails, "staged_tile_fails": staged_tile_fails})

