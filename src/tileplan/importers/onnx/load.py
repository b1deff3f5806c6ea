"""Reading an ONNX file: the model, bounded in size, its graph checked to assign each
tensor once; what a node says about itself (attributes, the module it belongs to)
and the element class of a tensor type. Nothing here computes or plans.
"""

from __future__ import annotations

import ast
import math
import os
import stat
from typing import Any

import numpy as np

from tileplan.errors import InputError, ModelError
from tileplan.ioutil import read_bytes

#: the largest ONNX file read: protobuf's own limit for one message (a larger model keeps
#: its weights as external data, which tileplan never reads)
MAX_ONNX_BYTES = 2 << 30

_FLOAT_TYPES = {1, 10, 11, 16, 17, 18, 19, 20, 23}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16, FLOAT8*, FLOAT4
_INT_TYPES = {2, 3, 4, 5, 6, 7, 12, 13, 21, 22}
_BOOL_TYPES = {9}


def load_model(path: str) -> Any:
    """The ModelProto of the file at `path` (a regular file of at most 2 GiB; external
    data is never read), or one line saying why not."""
    import onnx
    from google.protobuf.message import DecodeError

    data = read_bytes(path, MAX_ONNX_BYTES)  # a regular file of at most 2 GiB, or one line
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError, OSError, UnicodeDecodeError, TypeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"not a readable ONNX model ({first[:120]}): expected a protobuf ModelProto file; "
                         "is it truncated or another format?", path) from None
    if not model.HasField("graph") or not model.graph.node:
        raise InputError("the ONNX model has no graph nodes: expected a ModelProto with a graph", path)
    return model


def check_single_assignment(graph: Any, path: str) -> None:
    """ONNX graphs assign each tensor once (the IR's static single assignment rule): no
    output written by two nodes, nor a node writing a graph input or an initializer."""
    writer: dict[str, str] = {t.name: "an initializer" for t in graph.initializer}
    writer.update((i.name, "a graph input") for i in graph.input if i.name not in writer)
    for k, node in enumerate(graph.node):
        here = f"node {node.name or k!r} ({node.op_type})"
        for out in node.output:
            if not out:
                continue
            if out in writer:
                raise ModelError(f"tensor {out!r} is written by {here} and by {writer[out]}: an ONNX graph "
                                 "assigns each tensor once (is the file hand-edited?)", path)
            writer[out] = here


def onnx_precision(elem_type: int) -> str:
    """The precision tileplan plans a floating ONNX type in: FLOAT and DOUBLE "F32",
    the 16-bit and 8-bit floats "F16" (IPUs compute in IEEE half)."""
    return "F32" if elem_type in (1, 11) else "F16"


def elem_class(elem_type: int, where: str) -> str:
    """The graph builder's element class of an ONNX tensor type."""
    if elem_type in _FLOAT_TYPES:
        return "float"
    if elem_type in _INT_TYPES:
        return "int"
    if elem_type in _BOOL_TYPES:
        return "bool"
    raise ModelError(f"element type {elem_type} is not a number or boolean: expected float, int or bool tensors",
                     where)


def np_class(a: np.ndarray) -> str:
    """The element class of a value known at import time."""
    if a.dtype == np.bool_:
        return "bool"
    return "int" if np.issubdtype(a.dtype, np.integer) else "float"


def attributes(node: Any) -> dict[str, Any]:
    """A node's attributes by name; tensors are kept as protos, read where used."""
    from onnx import helper

    out = {}
    for a in node.attribute:
        if a.type in (4, 9):  # TENSOR, TENSORS: read where used
            out[a.name] = a.t if a.type == 4 else list(a.tensors)
            continue
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def module_of(node: Any) -> str | None:
    """The module path the node belongs to: the dynamo exporter's name scopes, else the
    legacy exporter's `/a/b.0/c/Op` node name."""
    meta = {p.key: p.value for p in node.metadata_props}
    scopes = meta.get("pkg.torch.onnx.name_scopes")
    if scopes:
        try:
            parts = ast.literal_eval(scopes)
        except (ValueError, SyntaxError):
            parts = None
        if isinstance(parts, list) and len(parts) >= 2:
            mods = [p for p in parts[:-1] if isinstance(p, str) and p]
            if mods:
                return mods[-1]
    name = node.name
    if name.startswith("/") and name.count("/") >= 2:
        return ".".join(p for p in name.strip("/").split("/")[:-1] if p) or None
    return None


def stated_shapes(graph: Any) -> dict[str, tuple[int, ...]]:
    """The static shapes the file states for its values (`value_info`, which the dynamo
    exporter writes for every value, and the graph's outputs): only those whose every
    dimension is a fixed size >= 1 (rank 0 allowed)."""
    out: dict[str, tuple[int, ...]] = {}
    for info in (*graph.value_info, *graph.output):
        if not info.type.HasField("tensor_type") or not info.type.tensor_type.HasField("shape"):
            continue
        dims = info.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            out[info.name] = tuple(int(d.dim_value) for d in dims)
    return out


#: the most bytes read from a model's external data in all (its small integer initializers)
MAX_EXTERNAL_BYTES = 64 << 20


class ExternalData:
    """The small integer initializers a model keeps in external data files, read when
    those files are beside it: only a regular file inside the model's folder (no
    absolute path, no `..`, no symlink out of it), only the tensor's own bytes (at its
    offset, of its length), at most `MAX_EXTERNAL_BYTES` in all. Floating tensors
    (weights) are never read. `missing`: the data files named but absent."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.realpath(folder)
        self.missing: set[str] = set()
        self.read = 0

    def missing_text(self) -> str:
        names = sorted(self.missing)
        listed = ", ".join(repr(n[:80]) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return f"its external data {listed} {'is' if len(names) == 1 else 'are'} absent"

    def ints(self, tensor: Any, dims: tuple[int, ...]) -> np.ndarray | None:
        """The values of an integer initializer held in external data, or None when
        they cannot be read within these rules (then they are not known)."""
        from onnx import helper

        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
            offset, length = int(info.get("offset", 0)), info.get("length")
        except (ValueError, TypeError, KeyError):
            return None
        size = math.prod(dims) * dtype.itemsize
        if length is not None and int(length) != size or offset < 0 or self.read + size > MAX_EXTERNAL_BYTES:
            return None
        path = self._inside(location)
        if path is None:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            self.missing.add(location)
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.pread(fd, size, offset)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) != size:
            return None
        self.read += size
        return np.frombuffer(data, dtype=dtype).reshape(dims).astype(dtype.newbyteorder("="))

    def _inside(self, location: str) -> str | None:
        """The path of a data file named `location`, when it lies inside the folder."""
        if not location or "\0" in location or os.path.isabs(location) or location.startswith(("/", "\\")):
            return None
        parts = location.replace("\\", "/").split("/")
        if any(p in ("..", "") for p in parts):
            return None
        path = os.path.realpath(os.path.join(self.folder, *parts))
        if os.path.commonpath([path, self.folder]) != self.folder:
            return None
        return path
