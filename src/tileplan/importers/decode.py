"""One decoding step of a decoder with a key/value cache (`--kv-cache L`, `kv_cache=`).

A transformers decoder is run once on the meta device with one token and its cache on
(`use_cache=True`) to learn the cache's shape per layer (keys and values [batch,
key/value heads, positions, head size]: whatever the architecture's attention keeps).
Then each layer's cache of `length` positions is made a buffer of that layer
(`model.layers.3.kv_cache_key`, `...kv_cache_value`): resident, like a parameter,
for the whole step. The step is exported with `tokens` new tokens a sequence
(`input_ids` [batch, tokens]): each layer's attention reads its cache and the step's
own keys and values (transformers' `DynamicCache` concatenates them), at position
`length`. The module is left as it was.
"""

from __future__ import annotations

from typing import Any

from tileplan.errors import ModelError, option
from tileplan.importers.graph import Graph

#: the buffers each layer holds its cache in
KEY, VALUE = "kv_cache_key", "kv_cache_value"


def cache_shapes(model: Any, batch: int, name: str) -> list[tuple[Any, Any]]:
    """Each layer's (keys, values) with one position (meta tensors: their shapes and
    dtypes), from one step on the meta device; a one-line error when the model keeps no
    such cache."""
    import torch

    ids = torch.zeros(batch, 1, dtype=torch.long, device="meta")
    try:
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True)
    except Exception as e:  # transformers raises many types; one line names the cause
        raise ModelError(f"{option('kv_cache')}: a step with the cache on failed ({type(e).__name__}: "
                         f"{' '.join(str(e).split())[:160]}); expected a transformers decoder", name) from None
    cache = getattr(out, "past_key_values", None)
    layers = getattr(cache, "layers", None)
    shapes: list[tuple[Any, Any]] = []
    for layer in layers or ():
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor) or keys.dim() != 4:
            shapes = []
            break
        shapes.append((keys, values))
    if not shapes:
        raise ModelError(f"{option('kv_cache')}: {type(model).__name__} returns no key/value cache of [batch, heads, "
                         "positions, size] per layer: expected a decoder (a causal language model)", name)
    return shapes


def _layers(model: Any, count: int, name: str) -> list[Any]:
    """The decoder's layers: the module list of `count` modules (the first one found)."""
    import torch

    for _, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            return list(module)
    raise ModelError(f"{option('kv_cache')}: no list of {count} layers found in {type(model).__name__}", name)


def decode_step(model: Any, length: int, batch: int = 1, tokens: int = 1, name: str | None = None) -> Graph:
    """The graph of one step of `model` (a transformers decoder) generating `tokens`
    tokens a sequence after `length` cached positions (see the module docstring)."""
    import torch
    from transformers import DynamicCache

    from tileplan.importers.torch_export import from_torch, takes

    name = name or type(model).__name__
    model.eval()
    shapes = cache_shapes(model, batch, name)
    layers = _layers(model, len(shapes), name)
    config = getattr(model, "config", None)
    keyword = "cache" if takes(model, "cache") else "past_key_values"  # transformers 5 renames it

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decoder = model

        def forward(self, input_ids: torch.Tensor) -> Any:
            cache = DynamicCache(config=config) if config is not None else DynamicCache()
            for i, layer in enumerate(layers):
                cache.update(getattr(layer, KEY), getattr(layer, VALUE), i)
            out = self.decoder(input_ids=input_ids, **{keyword: cache}, use_cache=True)
            logits = getattr(out, "logits", None)
            return logits if logits is not None else out.last_hidden_state

    added = []
    try:
        for layer, (k, v) in zip(layers, shapes):
            for key, one in ((KEY, k), (VALUE, v)):
                cached = torch.zeros(*one.shape[:2], length, one.shape[3], dtype=one.dtype, device="meta")
                layer.register_buffer(key, cached, persistent=False)
                added.append((layer, key))
        ids = torch.zeros(batch, tokens, dtype=torch.long, device="meta")
        return from_torch(Step(), (ids,), name, strip="decoder.")
    finally:
        for layer, key in added:
            del layer._buffers[key]
