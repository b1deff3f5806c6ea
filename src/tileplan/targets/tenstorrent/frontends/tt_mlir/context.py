"""The state one lowering carries: which TTNN tensor holds each model value, which model
values are compile-time constants, and the data types tt-mlir gives them.

Constants (tt-mlir lib/Transforms/ConstEvalHoist.cpp `ConstEvalHoistTransform`): every
value computed only from parameters, buffers and constants (never from the model's
inputs) is hoisted into a const-eval function, run once and cached on the device; its
inputs move to host memory (TTNNConstEvalInputsToSystemMemory, tt-mlir #6198, 2025-12-11;
tt-xla's `enable_const_eval_inputs_to_system_memory`, on by default), and tt-xla runs it
on the host from a61e65c78 (2026-03-23, `enable_const_eval_on_cpu`), on the device before.
Not modelled: on builds before 2025-12-11 the inputs migrate to device DRAM on first use
and stay beside the results; an on-device const-eval's own temporaries. So a constant
reaches the device only where a computed operation reads it, and then as the layout and
data type that operation
asks for: a matmul weight as a DRAM-interleaved TILE tensor (in bfloat8_b under
`experimental_weight_dtype=bfp_bf8`), an embedding table as a ROW_MAJOR bfloat16 one
(the embedding workaround, lib/Dialect/TTNN/IR/TTNNWorkaroundsPass.cpp
`createEmbeddingOpOperandsWorkarounds`), a causal mask as a TILE bfloat16 one. Each such
form is one upload (`constant`), made once.

Data types (tt-mlir ElementTypeNormalization, include/ttmlir/Dialect/TTCore/IR/
TTCoreOpsTypes.h `toTTMLIRSupportedDataType`): f32 and f64 are float32, bf16 and f16
bfloat16 (TTNN has no float16 buffers), every integer int32 (i64 normalised), bool
bfloat16 ("hardware doesn't support bool").

The model's inputs are the arguments tt-xla passes typed `input`: DRAM interleaved and
ROW_MAJOR (tt-mlir lib/Dialect/TTNN/Transforms/TTNNLayout.cpp `shouldForceInputRowMajor`);
an operation needing TILE gets a `ttnn.to_layout` first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tileplan.errors import ModelError
from tileplan.model.ir import Operation, Program, RepeatBlock, family_member
from tileplan.model.precision import Precision
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontends.tt_mlir.graph import GraphBuilder, Value
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, TensorSpec
from tileplan.targets.tenstorrent.ops.base import OpTarget, OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.program import Tensor
from tileplan.targets.tenstorrent.ops.tt_data_movement import PermuteAttrs, ReshapeAttrs
from tileplan.targets.tenstorrent.tiles import DataType, Layout

_FLOAT = {"F32": DataType.FLOAT32, "F16": DataType.BFLOAT16, "BF16": DataType.BFLOAT16}
_INT = {"U32": DataType.UINT32, "U16": DataType.UINT16, "U8": DataType.UINT8}
#: TTNNDecomposeLayouts.cpp `isFloatFamily`: one to_layout tilizes and casts between them
_FLOAT_TYPES = frozenset({DataType.FLOAT32, DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B})


def dtype_of(precision: Precision) -> DataType:
    """The TTNN data type tt-mlir holds a model precision in (see the module docstring)."""
    if precision.name in _FLOAT:
        return _FLOAT[precision.name]
    if precision.name == "Bool":
        return DataType.BFLOAT16
    if precision.is_fp8:
        raise ModelError(f"precision {precision}: tt-mlir has no FP8 tensors; plan the model in bf16 or f32")
    return _INT.get(precision.name, DataType.INT32)


def unroll(program: Program) -> tuple[Operation, ...]:
    """The program's operations in execution order with every repeat block written out:
    iteration j of a block reads its family members `first + j`, the carried tensor of
    the iteration before, and writes its own names (`{i}` replaced)."""
    out: list[Operation] = []
    renamed: dict[str, str] = {}
    index = 0
    for item in program.items:
        if isinstance(item, Operation):
            out.append(_renamed(item, index, renamed, None, 0))
            index += 1
            continue
        block: RepeatBlock = item
        for j in range(block.count):
            member = block.first + j
            carried = renamed.get(block.carried_in or "", block.carried_in)
            if j > 0 and block.carried_out is not None:
                carried = family_member(block.carried_out, member - 1)
            local = dict(renamed)
            if block.carried_in is not None and carried is not None:
                local[block.carried_in] = carried
            for op in block.body:
                out.append(_renamed(op, index, local, member, j))
                index += 1
        if block.carried_out is not None:
            renamed[block.carried_out] = family_member(block.carried_out, block.first + block.count - 1)
    return tuple(out)


def _renamed(op: Operation, index: int, renamed: dict[str, str], member: int | None, step: int) -> Operation:
    def name(n: str) -> str:
        n = renamed.get(n, n)
        return family_member(n, member) if member is not None else n
    layer = op.layer + step if op.layer is not None and member is not None else op.layer
    return Operation(op.origin, index, op.kind, name(op.name), tuple(name(i) for i in op.inputs), name(op.output),
                     op.output_shape, op.output_precision, op.attrs, op.module, layer, op.role)


@dataclass
class Lowering:
    """One lowering's state (mutable; `lower` owns it): the builder, each model value's
    TTNN tensor, the constants, the options, the device facts the rules read."""

    program: Program
    options: TtMlirOptions
    device: Device
    target: OpTarget
    builder: GraphBuilder
    operations: tuple[Operation, ...]
    #: constants a fusion made (fusion.py `fuse_shared_lhs`): name -> (the constants
    #: concatenated, its shape)
    fused_weights: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    precisions: dict[str, Precision] = field(default_factory=dict)
    roles: dict[str, Role] = field(default_factory=dict)
    constant: set[str] = field(default_factory=set)
    producers: dict[str, Operation] = field(default_factory=dict)
    readers: dict[str, list[Operation]] = field(default_factory=dict)
    tensor_of: dict[str, int] = field(default_factory=dict)
    forms: dict[tuple[str, Layout, DataType, tuple[int, ...]], int] = field(default_factory=dict)
    flat: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    nchw_of: dict[str, int] = field(default_factory=dict)
    #: converts one model operation by the frontend's converter table (lower.py sets it)
    dispatch: Callable[[Lowering, Operation], None] | None = None
    #: the names of the model's declared tensors (its inputs, parameters and buffers)
    declared: frozenset[str] = field(init=False)
    #: the framework's shape of each declared tensor the importer declared permuted
    source_shapes: dict[str, tuple[int, ...]] = field(init=False)

    def __post_init__(self) -> None:
        self.declared = frozenset(t.name for t in self.program.tensors)
        self.source_shapes = {t.name: t.source_shape for t in self.program.tensors if t.source_shape is not None}
        for t in self.program.tensors:
            self.shapes[t.name] = t.shape
            self.precisions[t.name] = t.precision
            self.roles[t.name] = t.role
            if t.role is not Role.INPUT:
                self.constant.add(t.name)
        for name, (parts, shape) in self.fused_weights.items():
            self.shapes[name] = shape
            self.precisions[name] = self.precisions[parts[0]]
            self.roles[name] = self.roles.get(parts[0], Role.WEIGHT)
            self.constant.add(name)
        for op in self.operations:
            self._know(op)

    def _know(self, op: Operation) -> None:
        """Operation `op`'s output: its shape, precision, producer, readers, and whether
        it is a constant (every input is)."""
        self.shapes[op.output] = op.output_shape
        self.precisions[op.output] = op.output_precision
        self.producers[op.output] = op
        for i in op.inputs:
            self.readers.setdefault(i, []).append(op)
        if all(i in self.constant for i in op.inputs):
            self.constant.add(op.output)
            # a const-eval result of a weight is a weight (its transpose, its typecast)
            weighty = any(self.roles.get(i) is Role.WEIGHT for i in op.inputs)
            self.roles[op.output] = Role.WEIGHT if weighty else Role.BUFFER

    def lower_too(self, ops: tuple[Operation, ...]) -> None:
        """Model operations a converter wrote in the model's vocabulary for one of the
        program's (torch_sdpa.py): each known as the program's are, and converted by
        `dispatch` unless it is a constant (made where it is read)."""
        assert self.dispatch is not None, "lower.py sets the dispatch before converting"
        for op in ops:
            self._know(op)
            if op.output not in self.constant:
                self.dispatch(self, op)

    # -- data types ----------------------------------------------------------------------
    def dtype(self, name: str) -> DataType:
        """The data type tt-mlir holds model value `name` in: a float activation in the
        `activations` option's (else the model's), a float parameter in the model's weight
        dtype (`weights` bf16 / f32), integers int32, booleans bfloat16."""
        p = self.precisions[name]
        d = dtype_of(p)
        if p.name in _FLOAT:
            if self.roles.get(name) in (Role.WEIGHT, Role.BUFFER) and self.options.model_weights is not None:
                return self.options.model_weights
            if self.options.activations is not None:
                return self.options.activations
        return d

    def float_dtype(self) -> DataType:
        """The activations' float type: the option's, else that of most float tensors."""
        if self.options.activations is not None:
            return self.options.activations
        counts: dict[DataType, int] = {}
        for t in self.program.tensors:
            if t.precision.name in _FLOAT:
                counts[_FLOAT[t.precision.name]] = counts.get(_FLOAT[t.precision.name], 0) + t.elements
        return max(sorted(counts, key=lambda d: d.value), key=counts.__getitem__) if counts else DataType.BFLOAT16

    # -- values --------------------------------------------------------------------------
    def value(self, tid: int) -> Value:
        return self.builder.values[tid]

    def is_constant(self, name: str) -> bool:
        return name in self.constant

    def const_eval_inputs(self, name: str) -> tuple[str, ...]:
        """The declared parameters and buffers constant `name` is computed from (itself
        when declared), in first-reached order; none for a constant made from nothing (a
        scale, an arange)."""
        found: list[str] = []
        todo, seen = [name], set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.declared:
                if self.roles.get(n) is not Role.INPUT:
                    found.append(n)
            elif n in self.fused_weights:
                todo.extend(reversed(self.fused_weights[n][0]))
            elif n in self.producers:
                todo.extend(reversed(self.producers[n].inputs))
        return tuple(found)

    def is_argument(self, tensor: Tensor) -> bool:
        """Whether an upload is a parameter or buffer of the model as tt-xla passes it: a
        TILE tensor of the declared name, shape and data type. Another form (a typecast,
        a reshape, the embedding workaround's row-major table) is a const-eval result."""
        spec = tensor.spec
        return (spec is not None and tensor.role is not Role.INPUT and tensor.name in self.declared
                and spec.layout is Layout.TILE and spec.shape == self.shapes[tensor.name]
                and spec.dtype is self.dtype(tensor.name))

    def constant_form(self, name: str, layout: Layout = Layout.TILE, dtype: DataType | None = None,
                      shape: tuple[int, ...] | None = None) -> int:
        """The device tensor of constant `name` in `layout` and `dtype`: an argument as
        tt-xla uploads it, or a const-eval result (see the module docstring)."""
        dt = dtype or self.dtype(name)
        dims = shape or self.shapes[name]
        key = (name, layout, dt, dims)
        if key in self.forms:
            return self.forms[key]
        if layout is Layout.ROW_MAJOR and dt.block_float:
            raise ModelError(f"{name}: {dt.value} has no row-major form")
        role = self.roles.get(name, Role.BUFFER)
        if role is Role.INPUT:
            role = Role.BUFFER
        variants = sum(1 for k in self.forms if k[0] == name)
        label = name if variants == 0 else f"{name}:{variants + 1}"
        spec = TensorSpec(dims, dt, layout, DRAM_INTERLEAVED)
        tid = self.builder.upload(label, role, spec, module_of(name))
        self.forms[key] = tid
        return tid

    def input_tensor(self, name: str) -> int:
        """A model input as tt-xla passes it (DRAM interleaved, ROW_MAJOR)."""
        if name not in self.tensor_of:
            spec = TensorSpec(self.shapes[name], self.dtype(name), Layout.ROW_MAJOR, DRAM_INTERLEAVED)
            self.tensor_of[name] = self.builder.upload(name, Role.INPUT, spec)
        return self.tensor_of[name]

    def tensor(self, name: str, layout: Layout | None = Layout.TILE, dtype: DataType | None = None,
               at: Operation | None = None) -> int:
        """Model value `name` as an operation reads it: in `layout` (None: as it is) and
        `dtype` (None: as it is); a computed value is converted by `ttnn.to_layout` and
        `ttnn.typecast` operations (TTNNDecomposeLayouts), a constant is uploaded so."""
        if name in self.constant and name not in self.tensor_of:
            return self.constant_form(name, layout or Layout.TILE, dtype)
        if self.roles.get(name) is Role.INPUT:
            tid = self.input_tensor(name)
        elif name in self.flat:
            tid = self.nchw(name, at)
        elif name in self.tensor_of:
            tid = self.tensor_of[name]
        else:
            raise ModelError(f"value {name!r} is read before it is made (no TTNN operation made it)")
        return self.convert(tid, layout, dtype, at, name)

    # -- convolutions' flattened NHWC form ------------------------------------------------
    def nchw(self, name: str, at: Operation | None) -> int:
        """A value held flattened ([1, 1, N*H*W, C], what ttnn.conv2d reads and writes) in
        the model's [N, C, H, W] form: reshape to [N, H, W, C], permute back (the TMs
        tt-mlir's flattening (TTIRFlattenSlidingWindow) and NHWC conversion leave where a
        reader needs NCHW)."""
        if name not in self.nchw_of:
            n, h, w, c = self.flat[name]
            tid = self.convert(self.tensor_of[name], Layout.TILE, None, at, name)
            v = self.value(tid)
            tid = self.builder.one(OpKind.RESHAPE, f"{name}.unflatten", (tid,), v.with_(shape=(n, h, w, c)),
                                   attrs=ReshapeAttrs((n, h, w, c)), **self.where(at))
            tid = self.builder.one(OpKind.PERMUTE, f"{name}.to_nchw", (tid,), v.with_(shape=(n, c, h, w)),
                                   attrs=PermuteAttrs((0, 3, 1, 2)), **self.where(at))
            model = self.shapes[name]
            if len(model) == 3:  # a 1-D convolution's [N, C, L]: torch-xla's squeeze of [N, C, 1, L]
                tid = self.builder.one(OpKind.RESHAPE, f"{name}.squeeze", (tid,), v.with_(shape=model),
                                       attrs=ReshapeAttrs(model), **self.where(at))
            self.nchw_of[name] = tid
        return self.nchw_of[name]

    def flat_tensor(self, name: str, layout: Layout | None = Layout.TILE, at: Operation | None = None) -> int:
        """Model value `name` ([N, C, H, W]) flattened to [1, 1, N*H*W, C]: as it is when a
        convolution made it, else permuted to NHWC and reshaped (tt-mlir's conv2d
        conversion, TTIRFlattenSlidingWindow). A 1-D convolution's [N, C, L] is first
        reshaped to [N, C, 1, L], the 2-D convolution torch-xla makes of it."""
        if name in self.flat:
            return self.convert(self.tensor_of[name], layout, None, at, name)
        tid = self.tensor(name, at=at)
        v = self.value(tid)
        if len(self.shapes[name]) == 3:  # [N, C, L] as torch-xla hands a 1-D convolution: [N, C, 1, L]
            n, c, w = self.shapes[name]
            h = 1
            tid = self.builder.one(OpKind.RESHAPE, f"{name}.unsqueeze", (tid,), v.with_(shape=(n, c, h, w)),
                                   attrs=ReshapeAttrs((n, c, h, w)), **self.where(at))
        else:
            n, c, h, w = self.shapes[name]
        tid = self.builder.one(OpKind.PERMUTE, f"{name}.to_nhwc", (tid,), v.with_(shape=(n, h, w, c)),
                               attrs=PermuteAttrs((0, 2, 3, 1)), **self.where(at))
        tid = self.builder.one(OpKind.RESHAPE, f"{name}.flatten", (tid,), v.with_(shape=(1, 1, n * h * w, c)),
                               attrs=ReshapeAttrs((1, 1, n * h * w, c)), **self.where(at))
        return self.convert(tid, layout, None, at, name)

    def define_flat(self, op: Operation, tid: int, dims: tuple[int, int, int, int]) -> None:
        """Model value `op.output` ([N, C, H, W]) is held flattened in tensor `tid`."""
        self.tensor_of[op.output] = tid
        self.flat[op.output] = dims

    def convert(self, tid: int, layout: Layout | None, dtype: DataType | None, at: Operation | None,
                label: str) -> int:
        """Tensor `tid` in `layout` and `dtype`, as tt-mlir's TTNNDecomposeLayouts.cpp
        (`layoutAndDtypeTransformations`) orders it on the device: a dtype change alone is
        a `ttnn.typecast`, a layout change alone a `ttnn.to_layout`; both, one
        `ttnn.to_layout` for a float tilize, else tilize then typecast (row-major input)
        or typecast then untilize (TILE input)."""
        v = self.value(tid)
        want_layout = layout or v.layout
        want_dtype = dtype or v.dtype
        where = self.where(at)
        b = self.builder

        def typecast(t: int) -> int:
            return b.one(OpKind.TYPECAST, f"{label}.typecast", (t,), self.value(t).with_(dtype=want_dtype),
                         out=OutputRequest(dtype=want_dtype), **where)

        def relayout(t: int, out_dtype: DataType | None = None) -> int:
            value = self.value(t).with_(layout=want_layout, dtype=out_dtype or self.value(t).dtype)
            return b.one(OpKind.TO_LAYOUT, f"{label}.to_layout", (t,), value,
                         out=OutputRequest(dtype=out_dtype), **where)

        if v.layout is want_layout:
            return tid if v.dtype is want_dtype else typecast(tid)
        if v.dtype is want_dtype:
            return relayout(tid)
        if v.layout is Layout.ROW_MAJOR:
            if v.dtype in _FLOAT_TYPES and want_dtype in _FLOAT_TYPES:
                return relayout(tid, want_dtype)
            return typecast(relayout(tid))
        return relayout(typecast(tid))

    def where(self, op: Operation | None) -> dict[str, object]:
        """A node's provenance fields from the model operation it lowers."""
        if op is None:
            return {}
        return {"module": op.module, "layer": op.layer, "source": op.index}

    def define(self, op: Operation, tid: int) -> None:
        """Model value `op.output` is now TTNN tensor `tid`."""
        self.tensor_of[op.output] = tid


def module_of(name: str) -> str | None:
    """A parameter's module: its name without the last part (`fc1.weight` -> `fc1`); for
    a fused parameter (fusion.py joins its parts with `+`: `mlp.gate_proj.weight+mlp.up_proj.weight`)
    the deepest module holding every part (`mlp`)."""
    paths = [part.split(".")[:-1] for part in name.split("+")]
    common: list[str] = []
    for parts in zip(*paths):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ".".join(common) or None
