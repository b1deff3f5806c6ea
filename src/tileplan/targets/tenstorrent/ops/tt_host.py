"""A host tensor written to the device between operations: `ttnn.from_torch` /
`ttnn.as_tensor` with a device (ttnn/ttnn/operations/core.py `from_torch`: the tensor is
made on the host in its layout and data type, tilized there when asked for TILE, then
`ttnn.to_device(tensor, device, memory_config)`: ttnn/cpp/ttnn/tensor/tensor_impl.cpp
`to_device` allocates its buffer (`allocate_buffer_on_device`) and writes it; no device
program runs, so it opens no circular buffers).

A frontend uses it where the model's Python uploads a tensor after operations already
ran (tt-transformers' Llama-3.2-Vision makes the prompt's embeddings and masks on the
host after the vision encoder: llama_vision_model.py `prepare_inputs_prefill`); tensors
uploaded before the first operation are the program's uploads instead.

Worked example: FROM_TORCH with HostWriteAttrs(TensorSpec((1, 1, 8192, 2048), bf16,
TILE, DRAM interleaved)) allocates one 33,554,432-B DRAM buffer, 8,192 tiles of 2,048 B
round-robin over the banks, and runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.targets.tenstorrent.memory import TensorSpec
from tileplan.targets.tenstorrent.ops.base import OpPlan, OpRequest, output_buffers, require
from tileplan.targets.tenstorrent.ops.kinds import OpKind


@dataclass(frozen=True, slots=True)
class HostWriteAttrs:
    """The tensor written: its shape, data type, layout and memory config."""

    spec: TensorSpec


def plan_from_torch(kind: OpKind, req: OpRequest, attrs: HostWriteAttrs) -> OpPlan:
    """ttnn.from_torch onto the device (see the module docstring): no inputs, no program,
    one output buffer of `attrs.spec` in the memory asked for."""
    op = kind.value
    require(not req.inputs, op, "a host tensor written to the device reads no device tensor")
    require(attrs.spec.memory == req.out.memory(), op, "the tensor's memory config is the one asked for")
    return OpPlan(op, (), (attrs.spec,), output_buffers((attrs.spec,), req.target, 0))
