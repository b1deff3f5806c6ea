"""Read a saved ExportedProgram (`torch.export.save`, a `.pt2` file) without running
anything from the file.

`torch.export.load` unpickles the archive's sample inputs and any weight or constant
stored with `use_pickle` (`torch.load(..., weights_only=False)`), and its deserializer
evaluates symbolic-shape expressions with `sympy.sympify` (an `eval`), resolves any
`torch.<attribute>` path as an operation's target (which `run_decompositions` then
calls) and generates Python source from the graph's names. A `.pt2` from a model hub
is untrusted input, and tileplan needs only the program: its graph, signature and
tensor metadata. So this module reads the archive itself:

1. `open_archive`: a regular file only (FIFOs and devices refused before opening), a
   zip archive whose central directory holds at most `MAX_MEMBERS` entries in at most
   `MAX_DIRECTORY_BYTES`, in the PT2 archive format (`<root>/archive_format` = `pt2`,
   PyTorch 2.6 and later);
2. `read_member`: the serialized program (`<root>/models/model.json`), its size
   checked before inflating and the inflation itself stopped at `MAX_PROGRAM_BYTES`,
   and the weights' and constants' JSON configs (`tileplan.importers.pt2_state`: a
   shape they declare must be the graph's); the sample inputs, weights and constants
   are never read;
3. `check_program`: run-time assertions on computed values (`assert
   lengths.max().item() <= slen`) are erased with what only they read, before any
   expression is looked at; a region that runs with gradients or autocast switched
   (`torch.no_grad()` in a model's forward: the higher-order operators
   `wrap_with_set_grad_enabled` and `wrap_with_autocast`) is inlined, its sub-graph's
   nodes in its place (nothing of such a switch holds memory); then the JSON
   document is refused unless every node's target is an ATen
   operator (`torch.ops.aten.<name>.<overload>`) or `_operator.getitem`, every name
   is a Python identifier, every shape is static (no `expr_str`: a symbolic expression
   would be `sympify`-ed), no custom objects are inputs; metadata is cut to
   `nn_module_stack` (the module names tileplan shows) and the guards' code dropped;
4. `deserialize`: torch's deserializer on that checked document, with meta tensors
   (shape, strides and dtype from the graph's own tensor metadata, no bytes) for the
   parameters, buffers and constants, and no example inputs.

Every refusal is one `InputError` naming the file and the rule.
"""

from __future__ import annotations

import json
import os
import re
import stat
import zipfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from tileplan.errors import InputError
from tileplan.importers.pt2_state import CONFIGS, MAX_CONFIG_BYTES, check_state_configs
from tileplan.ioutil import parse_json

#: the most entries a .pt2's zip directory may list (a real archive holds a few per weight)
MAX_MEMBERS = 1_000_000
#: the largest zip central directory read, in bytes
MAX_DIRECTORY_BYTES = 256 << 20
#: the largest serialized program (models/model.json) inflated, in bytes; a 7B decoder's
#: is about 10 MB
MAX_PROGRAM_BYTES = 512 << 20
#: the small text members (archive_format) read
MAX_SMALL_MEMBER = 4096
#: the most characters of one name (a node, a tensor, a module path) accepted
MAX_NAME = 1024

_ATEN_TARGET = re.compile(r"torch\.ops\.aten\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")
#: besides ATen: tuple reads, and transformers' grouped matmul of a mixture of experts
#: (an operator transformers registers when imported; nothing of it is in the file)
_ALLOWED_TARGETS = frozenset({"_operator.getitem", "torch.ops.transformers.grouped_mm_fallback.default"})
#: higher-order operators that run their sub-graph in place with a mode switched: inlined
_INLINED = frozenset({"torch.ops.higher_order.wrap_with_set_grad_enabled",
                      "torch.ops.higher_order.wrap_with_autocast"})
#: the deepest nesting of such regions read
MAX_INLINE_DEPTH = 8
_FQN = re.compile(r"[A-Za-z0-9_.\-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _refuse(message: str, path: str) -> InputError:
    return InputError(message, path)


def open_archive(path: str) -> tuple[zipfile.ZipFile, str]:
    """The archive and its root folder (`name/`), after the checks of step 1."""
    if "\0" in path:
        raise InputError("a path must not contain a NUL character", repr(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError("expected a regular file (a .pt2 archive), found a special file or a folder", path)
    fh: BinaryIO = os.fdopen(fd, "rb")
    try:
        end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]  # the end record, read before the directory
        if not end:
            raise _refuse("not a torch.export archive (.pt2): not a zip file", path)
        entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]
        if entries > MAX_MEMBERS or size > MAX_DIRECTORY_BYTES:
            raise _refuse(f"the zip directory lists {entries} entries in {size} bytes, more than the "
                          f"{MAX_MEMBERS} entries or {MAX_DIRECTORY_BYTES} bytes tileplan reads", path)
        fh.seek(0)
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as e:
            raise _refuse(f"not a torch.export archive (.pt2): a broken zip file ({e})", path) from None
    except BaseException:
        fh.close()
        raise
    roots = sorted({n[: -len("archive_format")] for n in archive.namelist()
                    if n.endswith("archive_format") and n.count("/") <= 1})
    if len(roots) != 1:
        names = archive.namelist()
        archive.close()
        old = any(n.endswith("serialized_exported_program.json") or n == "version" or n.endswith("/version")
                  for n in names[:10_000])
        hint = ("an archive of torch.export.save before PyTorch 2.6: save it again with PyTorch 2.6 or later"
                if old else "expected one <name>/archive_format member, as torch.export.save writes")
        raise _refuse(f"not a torch.export archive (.pt2): {hint}", path)
    root = roots[0]
    kind = read_member(archive, root + "archive_format", MAX_SMALL_MEMBER, path).decode("utf-8", "replace").strip()
    if kind != "pt2":
        archive.close()
        raise _refuse(f"archive_format is {kind[:40]!r}, expected 'pt2' (a torch.export.save archive)", path)
    return archive, root


def read_member(archive: zipfile.ZipFile, name: str, limit: int, path: str) -> bytes:
    """One member's bytes, refused when its stated size is over `limit` and cut off
    (refused) when its inflation passes `limit` whatever the stated size."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise _refuse(f"the archive has no {name!r}; expected a torch.export.save archive", path) from None
    if info.file_size > limit:
        raise _refuse(f"member {name!r} inflates to {info.file_size} bytes, more than the {limit} tileplan reads",
                      path)
    try:
        with archive.open(info) as member:
            data = member.read(limit + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as e:
        raise _refuse(f"member {name!r} cannot be read: {e}", path) from None
    except Exception as e:  # zlib.error and friends
        raise _refuse(f"member {name!r} cannot be inflated: {type(e).__name__}", path) from None
    if len(data) > limit:
        raise _refuse(f"member {name!r} inflates past {limit} bytes, the most tileplan reads", path)
    return data


def read_program(path: str) -> dict[str, Any]:
    """The checked serialized program of the archive at `path` (steps 1-3)."""
    archive, root = open_archive(path)
    with archive:
        name = root + "models/model.json"
        models = [n for n in archive.namelist() if n.startswith(root + "models/") and n.endswith(".json")]
        if name not in models:
            raise _refuse("the archive holds no models/model.json (the program torch.export.save writes)", path)
        raw = read_member(archive, name, MAX_PROGRAM_BYTES, path)
        present = set(archive.namelist())
        configs = {m: read_member(archive, root + m, MAX_CONFIG_BYTES, path) for _, m in CONFIGS if root + m in present}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _refuse(f"models/model.json is not UTF-8 (byte {e.start})", path) from None
    doc = parse_json(text, f"{path}: models/model.json")
    del raw, text
    if not isinstance(doc, dict):
        raise _refuse(f"models/model.json: expected an object, found {type(doc).__name__}", path)
    check_program(doc, path)
    check_state_configs(configs, doc, path)
    return doc


def _where(place: str, path: str) -> str:
    return f"{path}: models/model.json: {place}"


def _name(value: Any, place: str, path: str) -> str:
    if not isinstance(value, str) or not value.isidentifier() or len(value) > MAX_NAME:
        shown = repr(value)[:80]
        raise InputError(f"expected a Python identifier as a name, found {shown}", _where(place, path))
    return value


def _obj(value: Any, place: str, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"expected an object, found {type(value).__name__}", _where(place, path))
    return value


def _list(value: Any, place: str, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"expected a list, found {type(value).__name__}", _where(place, path))
    return value


def check_program(doc: dict[str, Any], path: str) -> None:
    """Refuse what would run code or what tileplan cannot plan (step 3); cut the
    metadata tileplan does not read. Mutates `doc`."""
    _drop_runtime_asserts(doc, path)
    _no_expressions(doc, path)
    module = _obj(doc.get("graph_module"), "graph_module", path)
    graph = _obj(module.get("graph"), "graph_module.graph", path)
    _inline_regions(graph, graph, "graph", path, 0)
    for key in ("tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"):
        table = graph.get(key, {})
        if not isinstance(table, dict):
            raise InputError("expected an object", _where(f"graph.{key}", path))
        for name in table:
            _name(name, f"graph.{key}", path)
    if graph.get("custom_obj_values"):
        raise InputError("the program holds custom objects (TorchBind): tileplan plans ATen programs only",
                         _where("graph.custom_obj_values", path))
    unknown: dict[str, int] = {}
    for i, entry in enumerate(_list(graph.get("nodes"), "graph.nodes", path)):
        node = _obj(entry, f"graph.nodes[{i}]", path)
        target = node.get("target")
        if not isinstance(target, str) or not (_ATEN_TARGET.fullmatch(target) or target in _ALLOWED_TARGETS):
            shown = repr(target)[:60] if not isinstance(target, str) else target[:60]
            unknown[shown] = unknown.get(shown, 0) + 1
        if "name" in node and node["name"] not in ("", None):
            _name(node["name"], f"graph.nodes[{i}].name", path)
        _names_in(node.get("inputs"), f"graph.nodes[{i}].inputs", path)
        _names_in(node.get("outputs"), f"graph.nodes[{i}].outputs", path)
        node["metadata"] = _metadata(node.get("metadata"), f"graph.nodes[{i}].metadata", path)
    if unknown:
        listed = ", ".join(f"{t} x{n}" for t, n in sorted(unknown.items())[:8])
        more = f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""
        raise InputError(f"operations that are not ATen operators: {listed}{more}; tileplan plans programs of "
                         "ATen operators only and calls nothing else from a file", _where("graph.nodes", path))
    _names_in(graph.get("inputs"), "graph.inputs", path)
    _names_in(graph.get("outputs"), "graph.outputs", path)
    signature = _obj(module.get("signature"), "graph_module.signature", path)
    for i, entry in enumerate(_list(signature.get("input_specs", []), "signature.input_specs", path)):
        spec = _obj(entry, f"signature.input_specs[{i}]", path)
        for kind, value in spec.items():
            if kind == "constant_input" and _plain_constant(value):
                continue  # a keyword fixed at export (use_cache=False): a number, a truth value or None
            if kind in ("custom_obj", "token", "constant_input"):
                raise InputError(f"an input of kind {kind!r}: tileplan plans tensor programs only",
                                 _where(f"signature.input_specs[{i}]", path))
            body = _obj(value, f"signature.input_specs[{i}].{kind}", path)
            _names_in(body.get("arg"), f"signature.input_specs[{i}].arg", path)
            for key in ("parameter_name", "buffer_name", "tensor_constant_name"):
                if key in body and not (isinstance(body[key], str) and _FQN.fullmatch(body[key])
                                        and len(body[key]) <= MAX_NAME):
                    raise InputError(f"expected a dotted name of letters, digits and _, found {body[key]!r:.80}",
                                     _where(f"signature.input_specs[{i}].{key}", path))
    module["metadata"] = {}
    doc["guards_code"] = []


#: the checks a program makes at run time on values it computes (`assert
#: lengths.max().item() <= slen` in FlauBERT and XLM), by ATen name: nothing of them is
#: memory (`torch_export.drop_runtime_asserts` erases them in process, `_drop_runtime_asserts`
#: in a file)
RUNTIME_ASSERTS = frozenset({"aten._assert_scalar.default", "aten._assert_async.default", "aten._assert_async.msg",
                             "aten.sym_constrain_range_for_size.default", "aten.sym_constrain_range.default"})
_ASSERT_TARGETS = frozenset(f"torch.ops.{name}" for name in RUNTIME_ASSERTS)


def _is_name(key: str, value: Any) -> bool:
    """Whether an object's entry holds a value name (`name` of a tensor, `as_name` of a
    symbol)."""
    return key in ("name", "as_name") and isinstance(value, str)


def _entries(item: Any) -> Iterator[tuple[dict[str, Any], str, Any]]:
    """Each (object, key, value) below `item`, depth first without recursion, not
    descending into a name."""
    stack = [item]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for key, value in x.items():
                yield x, key, value
                if not _is_name(key, value):
                    stack.append(value)
        elif isinstance(x, list):
            stack.extend(x)


def _name_fields(item: Any) -> list[tuple[dict[str, Any], str]]:
    """Each (object, key) below `item` that holds a value name."""
    return [(x, key) for x, key, value in _entries(item) if _is_name(key, value)]


def _value_names(item: Any) -> set[str]:
    """The value names below `item`."""
    return {owner[key] for owner, key in _name_fields(item)}


def _drop_runtime_asserts(doc: dict[str, Any], path: str) -> None:
    """The run-time assertions of the program (FlauBERT's and XLM's `assert
    lengths.max().item() <= slen`) erased with what only they read (the comparison,
    the `.item()`, the reduction) and the symbolic values no node reads any more,
    before any expression is looked at: the file's expressions are never evaluated,
    and one still read is refused as before (`_no_expressions`)."""
    module = _obj(doc.get("graph_module"), "graph_module", path)
    graph = _obj(module.get("graph"), "graph_module.graph", path)
    nodes = _list(graph.get("nodes"), "graph.nodes", path)
    removed = {i for i, n in enumerate(nodes) if isinstance(n, dict) and n.get("target") in _ASSERT_TARGETS}
    if not removed:
        return
    def inputs(n: Any) -> set[str]:
        items = n.get("inputs") if isinstance(n, dict) else None
        return _value_names([a.get("arg") for a in items if isinstance(a, dict)] if isinstance(items, list) else [])
    producer: dict[str, int] = {}
    readers: dict[str, set[int]] = {}
    for i, n in enumerate(nodes):
        for name in _value_names(n.get("outputs") if isinstance(n, dict) else None):
            producer[name] = i
        for name in inputs(n):
            readers.setdefault(name, set()).add(i)
    kept = _value_names(graph.get("outputs"))
    stack = list(removed)
    while stack:
        for name in inputs(nodes[stack.pop()]):
            p = producer.get(name)
            if p is None or p in removed:
                continue
            made = _value_names(nodes[p].get("outputs"))
            if not made & kept and all(readers.get(m, set()) <= removed for m in made):
                removed.add(p)
                stack.append(p)
    graph["nodes"] = [n for i, n in enumerate(nodes) if i not in removed]
    read = kept | _value_names(graph.get("inputs")) | {m for n in graph["nodes"] for m in inputs(n)}
    for key in ("sym_int_values", "sym_bool_values", "sym_float_values"):
        table = graph.get(key)
        if isinstance(table, dict):
            graph[key] = {k: v for k, v in table.items() if k in read}


def _inline_regions(graph: dict[str, Any], top: dict[str, Any], place: str, path: str, depth: int) -> None:
    """Each node of `graph` that is a mode-switched region (`_INLINED`) replaced by its
    sub-graph's nodes: their values renamed apart (`<region>_<name>`), the sub-graph's
    inputs read as the node's arguments, its outputs written as the node's outputs, its
    tensor metadata moved into `top`'s. Mutates both."""
    nodes = _list(graph.get("nodes"), f"{place}.nodes", path)
    if not any(isinstance(n, dict) and n.get("target") in _INLINED for n in nodes):
        return
    if depth >= MAX_INLINE_DEPTH:
        raise InputError(f"regions nested more than {MAX_INLINE_DEPTH} deep", _where(place, path))
    flat: list[Any] = []
    for i, entry in enumerate(nodes):
        if isinstance(entry, dict) and entry.get("target") in _INLINED:
            flat.extend(_inlined(entry, top, f"{place}.nodes[{i}]", path, depth))
        else:
            flat.append(entry)
    graph["nodes"] = flat


def _tensor_names(items: Any, place: str, path: str) -> list[str]:
    """The tensor names of a list of arguments or outputs (`as_tensor`, `as_tensors`)."""
    names: list[str] = []
    for item in _list(items, place, path):
        body = item.get("arg", item) if isinstance(item, dict) else None
        if isinstance(body, dict) and isinstance(body.get("as_tensor"), dict):
            names.append(_name(body["as_tensor"].get("name"), place, path))
        elif isinstance(body, dict) and isinstance(body.get("as_tensors"), list):
            names.extend(_name(t.get("name") if isinstance(t, dict) else None, place, path)
                         for t in body["as_tensors"])
        else:
            raise InputError("a region's arguments and results must be tensors", _where(place, path))
    return names


def _inlined(node: dict[str, Any], top: dict[str, Any], place: str, path: str, depth: int) -> list[Any]:
    """The nodes of the region `node`, renamed into the graph around it."""
    inputs = _list(node.get("inputs"), f"{place}.inputs", path)
    at = next((k for k, a in enumerate(inputs)
               if isinstance(a, dict) and isinstance(a.get("arg"), dict) and "as_graph" in a["arg"]), None)
    if at is None:
        raise InputError("a region without its sub-graph", _where(place, path))
    body = _obj(inputs[at]["arg"]["as_graph"], f"{place}.as_graph", path)
    region = _name(body.get("name"), f"{place}.as_graph.name", path)
    sub = _obj(body.get("graph"), f"{place}.as_graph.graph", path)
    _inline_regions(sub, sub, f"{place}.as_graph.graph", path, depth + 1)
    for key in ("sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"):
        if sub.get(key):
            raise InputError("a region with symbolic values or custom objects", _where(place, path))
    arguments = _tensor_names(inputs[at + 1:], f"{place}.inputs", path)
    parameters = _tensor_names(sub.get("inputs"), f"{place}.as_graph.graph.inputs", path)
    results = _tensor_names(sub.get("outputs"), f"{place}.as_graph.graph.outputs", path)
    outputs = _tensor_names(node.get("outputs"), f"{place}.outputs", path)
    if len(arguments) != len(parameters) or len(results) != len(outputs) or set(results) & set(parameters):
        raise InputError("a region whose arguments or results do not match its sub-graph's (or that returns an "
                         "argument unchanged)", _where(place, path))
    table = _obj(top.setdefault("tensor_values", {}), "graph.tensor_values", path)
    renamed = {**dict(zip(parameters, arguments)), **dict(zip(results, outputs))}
    values = _obj(sub.get("tensor_values", {}), f"{place}.as_graph.graph.tensor_values", path)
    for name, meta in values.items():
        if name in parameters:
            continue
        new = renamed.get(name)
        if new is None:
            new = f"{region}_{name}"
            while new in table:
                new += "_"
            renamed[name] = new
        table[new] = meta
    nodes = _list(sub.get("nodes"), f"{place}.as_graph.graph.nodes", path)
    for entry in nodes:
        if isinstance(entry, dict):
            if isinstance(entry.get("name"), str) and entry["name"]:
                entry["name"] = f"{region}_{entry['name']}"
            for item in entry.get("inputs") or ():
                if isinstance(item, dict):
                    _rename(item.get("arg"), renamed)
            _rename(entry.get("outputs"), renamed)
    return nodes


def _rename(item: Any, renamed: dict[str, str]) -> None:
    """Every value name below `item` as `renamed` maps it."""
    for owner, key in _name_fields(item):
        owner[key] = renamed.get(owner[key], owner[key])


def _plain_constant(body: Any) -> bool:
    """A constant input the program was exported with that is a plain value: an
    identifier's name and a bool, an int, a float or None (`{"as_bool": false}`)."""
    if not isinstance(body, dict) or set(body) != {"name", "value"} or not isinstance(body["name"], str):
        return False
    value = body["value"]
    if not isinstance(value, dict) or len(value) != 1 or not body["name"].isidentifier():
        return False
    (key, v), = value.items()
    return (key == "as_none" or (key == "as_bool" and isinstance(v, bool))
            or (key in ("as_int", "as_float") and isinstance(v, (int, float)) and not isinstance(v, bool)))


def _names_in(node: Any, place: str, path: str) -> None:
    """Every `name` (and `as_name`) field below `node` is an identifier."""
    for _, key, value in _entries(node):
        if _is_name(key, value):
            _name(value, place, path)
        elif key == "as_graph":
            raise InputError("a sub-graph argument (a higher-order operator): tileplan plans flat ATen "
                             "programs", _where(place, path))


def _metadata(meta: Any, place: str, path: str) -> dict[str, str]:
    """Only `nn_module_stack` kept (the names of the modules that ran a node), free of
    control characters."""
    if not isinstance(meta, dict):
        return {}
    stack = meta.get("nn_module_stack")
    if not isinstance(stack, str) or len(stack) > 64 * MAX_NAME:
        return {}
    if _CONTROL.search(stack):
        raise InputError("a module path holds a control character (a newline, say)", _where(place, path))
    return {"nn_module_stack": stack}


_META = {"type": "meta", "index": None}


def _no_expressions(doc: Any, path: str) -> None:
    """No symbolic expression anywhere (torch parses `expr_str` with sympy.sympify);
    every device made `meta`, where tileplan's stand-ins for the weights live."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "expr_str" in item or "as_expr" in item:
                raise InputError("the program has symbolic (dynamic) shapes; tileplan plans static shapes: export "
                                 "again without dynamic_shapes", _where("graph", path))
            for key in ("device", "as_device"):
                if isinstance(item.get(key), dict):
                    item[key] = dict(_META)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _meta_tensor(torch: Any, meta: dict[str, Any], place: str, path: str) -> Any:
    from torch._export.serde.serialize import _SERIALIZE_TO_TORCH_DTYPE
    dtype = _SERIALIZE_TO_TORCH_DTYPE.get(meta.get("dtype"))
    if dtype is None:
        raise InputError(f"unknown dtype code {meta.get('dtype')!r:.20}", _where(place, path))

    def ints(key: str) -> list[int]:
        items = meta.get(key)
        if not isinstance(items, list) or len(items) > 64:
            raise InputError(f"expected a list of at most 64 {key}", _where(place, path))
        out = []
        for d in items:
            v = d.get("as_int") if isinstance(d, dict) else None
            if type(v) is not int or not 0 <= v < 1 << 62:
                raise InputError(f"{key}: expected non-negative integers below 2**62, found {d!r:.40}",
                                 _where(place, path))
            out.append(v)
        return out
    sizes, strides = ints("sizes"), ints("strides")
    if len(sizes) != len(strides):
        raise InputError("sizes and strides differ in length", _where(place, path))
    try:
        return torch.empty_strided(sizes, strides, dtype=dtype, device="meta")
    except (RuntimeError, ValueError, OverflowError) as e:
        raise InputError(f"not a tensor shape torch accepts: {str(e).splitlines()[0][:120]}",
                         _where(place, path)) from None


def deserialize(doc: dict[str, Any], path: str) -> Any:
    """An ExportedProgram from a checked document, with meta tensors for its state
    (step 4)."""
    import torch
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    graph = doc["graph_module"]["graph"]
    tensors = graph.get("tensor_values", {})
    state: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    for i, spec in enumerate(doc["graph_module"]["signature"].get("input_specs", [])):
        kind, body = next(iter(spec.items()))
        if kind not in ("parameter", "buffer", "tensor_constant"):
            continue
        arg = body.get("arg", {})
        arg_name = arg.get("name") if isinstance(arg, dict) else None
        fqn = body.get(f"{kind}_name")
        meta = tensors.get(arg_name) if isinstance(arg_name, str) else None
        if not isinstance(fqn, str) or not isinstance(meta, dict):
            raise InputError("an input spec without a name or tensor metadata",
                             _where(f"signature.input_specs[{i}]", path))
        tensor = _meta_tensor(torch, meta, f"graph.tensor_values.{arg_name}", path)
        if kind == "parameter":
            state[fqn] = torch.nn.Parameter(tensor, requires_grad=bool(meta.get("requires_grad")))
        elif kind == "buffer" and body.get("persistent", True):
            state[fqn] = tensor
        else:
            constants[fqn] = tensor
    _plain_outputs(doc)
    try:
        program = _dict_to_dataclass(schema.ExportedProgram, doc)
        return ExportedProgramDeserializer().deserialize(program, state, constants, None)
    except InputError:
        raise
    except Exception as e:  # torch's deserializer raises many kinds; one line names the cause
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        raise InputError(f"torch cannot read this program: {type(e).__name__}: {json.dumps(first)[1:-1]}",
                         path) from None


#: the containers a program's output structure may name (any other is read as a tuple)
_CONTAINERS = frozenset({"builtins.tuple", "builtins.list", "builtins.dict", None})


def _plain_outputs(doc: dict[str, Any]) -> None:
    """The output structure of each module call (a tree of containers) with every
    container of a class read as a tuple of its children: a model's output class
    (DETR's `DetrModelOutput`) is registered only when its module is imported, which
    the file does not decide; the plan needs the output tensors, not their class."""
    for entry in doc["graph_module"].get("module_call_graph", []):
        signature = entry.get("signature") if isinstance(entry, dict) else None
        if not isinstance(signature, dict) or not isinstance(signature.get("out_spec"), str):
            continue
        spec = signature["out_spec"]
        try:
            tree = json.loads(spec)
        except ValueError:
            continue
        stack = [tree[1]] if isinstance(tree, list) and len(tree) == 2 and isinstance(tree[1], dict) else []
        while stack:
            node = stack.pop()
            if node.get("type") not in _CONTAINERS:
                node["type"], node["context"] = "builtins.tuple", "null"
            stack.extend(c for c in node.get("children_spec") or () if isinstance(c, dict))
        signature["out_spec"] = json.dumps(tree)


def load_program(path: str) -> Any:
    """The ExportedProgram saved at `path`, read as the module docstring says."""
    return deserialize(read_program(path), path)
