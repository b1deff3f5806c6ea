"""The operator registry: one entry per operator (shape and dtype rules, attributes,
weight inputs, commutativity, view-ness, a pure plan and a pure lowering together),
one module per family. Importing this package registers them all; `REGISTRY` maps
each operator's name to its `OpDef`."""

from tileplan.ops import (  # noqa: F401
    attention, conv, elementwise, gather, gradients, matmul, norm, reduce, training, views,
)
from tileplan.ops.base import REGISTRY, InputInfo, OpDef, OpPlan, infer_dtype, infer_shape
from tileplan.ops.validate import check_program

__all__ = ["REGISTRY", "InputInfo", "OpDef", "OpPlan", "check_program", "infer_dtype", "infer_shape"]
