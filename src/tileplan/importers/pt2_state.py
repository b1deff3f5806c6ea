"""A `.pt2`'s state declarations, checked against its graph: the archive's weights and
constants configs (`data/weights/model_weights_config.json`,
`data/constants/model_constants_config.json`, written by `torch.export.save`) state
each parameter's, buffer's and constant's tensor metadata beside the program's own.
tileplan plans from the graph's shapes and never reads the tensors, so a config that
declares another shape for a tensor the graph names (`fc.weight` as [2^31, 2^31] where
the graph has [4, 8]) is an inconsistent file: it is refused, in one line naming the
tensor and both shapes, rather than planned with one of them. Only these JSON configs
are read (bounded by `MAX_CONFIG_BYTES`); the weights themselves never are.
"""

from __future__ import annotations

from typing import Any

from tileplan.errors import InputError
from tileplan.ioutil import parse_json

#: the largest weights or constants config read, in bytes (one entry of about 400 B a
#: tensor: a model of 100,000 tensors)
MAX_CONFIG_BYTES = 64 << 20
#: the configs, by the kind of state they declare
CONFIGS = (("weight", "data/weights/model_weights_config.json"),
           ("constant", "data/constants/model_constants_config.json"))


def graph_shapes(doc: dict[str, Any]) -> dict[str, list[Any]]:
    """Each parameter's, buffer's and constant's shape as the program's graph states it
    (its `sizes`, `as_int` entries read as they are), by its dotted name."""
    module = doc["graph_module"]
    tensors = module["graph"].get("tensor_values", {})
    out: dict[str, list[Any]] = {}
    for spec in module["signature"].get("input_specs", []):
        kind, body = next(iter(spec.items()))
        if kind not in ("parameter", "buffer", "tensor_constant") or not isinstance(body, dict):
            continue
        arg, name = body.get("arg"), body.get(f"{kind}_name")
        meta = tensors.get(arg.get("name")) if isinstance(arg, dict) and isinstance(arg.get("name"), str) else None
        if isinstance(name, str) and isinstance(meta, dict):
            out[name] = sizes(meta.get("sizes"))
    return out


def sizes(items: Any) -> list[Any]:
    """A tensor metadata's `sizes` as a list of its `as_int` values (anything else as is)."""
    if not isinstance(items, list):
        return [items]
    return [d.get("as_int") if isinstance(d, dict) and "as_int" in d else d for d in items]


def check_state_configs(configs: dict[str, bytes], doc: dict[str, Any], path: str) -> None:
    """Refuse a config entry whose shape differs from the graph's for the same tensor
    (see the module docstring); `configs`: each config of `CONFIGS` the archive holds,
    its bytes by member name. Entries the graph does not name are not planned."""
    shapes = graph_shapes(doc)
    for kind, member in CONFIGS:
        if member not in configs:
            continue
        try:
            text = configs[member].decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{member} is not UTF-8 (byte {e.start})", path) from None
        config = parse_json(text, f"{path}: {member}")
        entries = config.get("config") if isinstance(config, dict) else None
        if not isinstance(entries, dict):
            raise InputError(f"{member}: expected an object with a `config` object", path)
        for name, entry in entries.items():
            if name not in shapes:
                continue
            meta = entry.get("tensor_meta") if isinstance(entry, dict) else None
            declared = sizes(meta.get("sizes") if isinstance(meta, dict) else None)
            if declared != shapes[name]:
                raise InputError(f"{kind} {name[:200]}: {member} declares the shape {_shown(declared)}, the program's "
                                 f"graph {_shown(shapes[name])}; an inconsistent file (tileplan reads no weights to "
                                 "tell which is right)", path)


def _shown(shape: list[Any]) -> str:
    return "[" + ", ".join(str(d)[:24] for d in shape[:8]) + (", ..." if len(shape) > 8 else "") + "]"
