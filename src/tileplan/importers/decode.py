"""One decoding step of a decoder with a key/value cache (`--kv-cache L`, `kv_cache=`).

A transformers decoder is run once on its own device (the meta device for a model built
there, as tileplan's importers build one) with one token and its cache on
(`use_cache=True`) to learn the cache's shape per layer (keys and values [batch,
key/value heads, positions, head size]: whatever the architecture's attention keeps).
Then each layer's cache of `length` positions is made a buffer of that layer
(`model.layers.3.kv_cache_key`, `...kv_cache_value`): resident, like a parameter,
for the whole step. The step is exported with `tokens` new tokens a sequence
(`input_ids` [batch, tokens]): each layer's attention reads its cache and the step's
own keys and values (transformers' `DynamicCache` concatenates them), at position
`length`. The cache buffers and the inputs are made on the model's device (left
uninitialised: only their shapes and dtypes are exported). The module is left as it was.

The cache's kind (`CacheKind`, tileplan/model/cache.py; `--kv-cache-kind`):

- `dynamic` (the default): as above, transformers' `DynamicCache`; the attention reads
  `length + tokens` positions, made by concatenating the step's keys to the cache.
- `static`: transformers' `StaticCache` as tt-xla's LLM benchmark builds it
  (tests/benchmark/llm_utils/decode_utils.py `init_static_cache`: [batch, key/value
  heads, max_cache_len, head size] per layer, allocated once) and as its step runs it
  (benchmarks/llm_benchmark.py `construct_inputs`: `input_ids` [batch, tokens] and
  `cache_position` [tokens], a model input; `LLMSamplingWrapper.forward` passes
  `position_ids = cache_position.unsqueeze(0)`). The step writes its keys and values
  into the cache at `cache_position` (transformers' `StaticLayer.update`:
  `index_copy_` along the positions) and the attention reads the whole cache, `length`
  positions, under the causal mask of the cache's length (`StaticLayer.get_mask_sizes`).
  The write is imported as `scatter` along axis 2 of the cache buffer (the
  `index_copy` as a function: the new cache is what the attention reads); a frontend
  that writes in place (tt-mlir's fill_cache / update_cache) says so. The prefill of
  P tokens is `tokens=P` (positions 0..P-1), a decode step `tokens=1` (position P).
"""

from __future__ import annotations

from typing import Any

from tileplan.errors import InputError, ModelError, option
from tileplan.importers.graph import Graph
from tileplan.model.cache import CacheKind

#: the buffers each layer holds its cache in
KEY, VALUE = "kv_cache_key", "kv_cache_value"


def model_device(model: Any) -> Any:
    """The device of the model's parameters (meta when it has none)."""
    import torch

    return next((p.device for p in model.parameters()), torch.device("meta"))


def cache_shapes(model: Any, batch: int, name: str) -> list[tuple[Any, Any]]:
    """Each layer's (keys, values) with one position (their shapes and dtypes), from one
    step on the model's device; a one-line error when the model keeps no such cache."""
    import torch

    ids = torch.zeros(batch, 1, dtype=torch.long, device=model_device(model))
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


def decode_step(model: Any, length: int, batch: int = 1, tokens: int = 1, name: str | None = None,
                kind: CacheKind = CacheKind.DYNAMIC) -> Graph:
    """The graph of one step of `model` (a transformers decoder) generating `tokens`
    tokens a sequence after `length` cached positions, or (a static cache) writing
    `tokens` positions into a cache of `length` (see the module docstring)."""
    import torch
    from transformers import DynamicCache

    from tileplan.importers.torch_export import from_torch, takes

    name = name or type(model).__name__
    model.eval()
    if kind is CacheKind.STATIC and tokens > length:
        raise InputError(f"{option('kv_cache', str(length))}: a static cache of {length} positions cannot take a "
                         f"step of {tokens} tokens (transformers' StaticCache holds max_cache_len positions)", name)
    device = model_device(model)
    shapes = cache_shapes(model, batch, name)
    layers = _layers(model, len(shapes), name)
    config = getattr(model, "config", None)
    keyword = "cache" if takes(model, "cache") else "past_key_values"  # transformers 5 renames it

    if kind is CacheKind.STATIC:
        step: torch.nn.Module = _static_step(model, layers, keyword)
        example: tuple[Any, ...] = (torch.zeros(batch, tokens, dtype=torch.long, device=device),
                                    torch.arange(tokens, dtype=torch.long, device=device))
    else:
        step, example = None, ()  # type: ignore[assignment]

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
                cached = torch.empty(*one.shape[:2], length, one.shape[3], dtype=one.dtype, device=device)
                layer.register_buffer(key, cached, persistent=False)
                added.append((layer, key))
        if step is not None:
            return from_torch(step, example, name, strip="decoder.")
        ids = torch.zeros(batch, tokens, dtype=torch.long, device=device)
        return from_torch(Step(), (ids,), name, strip="decoder.")
    finally:
        for layer, key in added:
            del layer._buffers[key]


def _static_step(model: Any, layers: list[Any], keyword: str) -> Any:
    """The step over a static cache: (input_ids, cache_position) -> logits, each layer's
    cache written at `cache_position` (`index_copy` along the positions, as transformers'
    StaticLayer.update) and read whole (the mask over max_cache_len positions)."""
    import torch
    from transformers.cache_utils import Cache, StaticLayer

    class Layer(StaticLayer):
        """One layer's static cache, its buffers the layer's; the write a function."""

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, positions: torch.Tensor) -> None:
            super().__init__(max_cache_len=keys.shape[2])
            self.keys, self.values, self.positions = keys, values, positions
            self.is_initialized = True

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
                   ) -> tuple[torch.Tensor, torch.Tensor]:
            keys, values = self.keys, self.values
            assert keys is not None and values is not None  # set in __init__
            self.keys = torch.index_copy(keys, 2, self.positions, key_states)
            self.values = torch.index_copy(values, 2, self.positions, value_states)
            return self.keys, self.values

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decoder = model

        def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> Any:
            cache = Cache(layers=[Layer(getattr(layer, KEY), getattr(layer, VALUE), cache_position)
                                  for layer in layers])
            out = self.decoder(input_ids=input_ids, **{keyword: cache}, position_ids=cache_position.unsqueeze(0),
                               cache_position=cache_position, use_cache=True)
            logits = getattr(out, "logits", None)
            return logits if logits is not None else out.last_hidden_state

    return Step()
