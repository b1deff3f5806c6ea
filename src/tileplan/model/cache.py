"""How a decoding step keeps its key/value cache (`--kv-cache-kind`), a value every layer
that plans a decoding step reads: the importers build the step so (importers/decode.py),
a frontend lowers its writes so (tt-mlir's fill_cache / update_cache).

- `dynamic`: transformers' `DynamicCache`: the step's keys and values are concatenated
  to the cache, the attention reads `length + tokens` positions.
- `static`: transformers' `StaticCache` (tt-xla's LLM benchmark): one buffer of
  `max_cache_len` positions a layer, the step's keys and values written into it at
  `cache_position`, the attention reads the whole buffer.

Worked example: `CacheKind.parse("Static")` is `CacheKind.STATIC`; `CacheKind.parse("paged")`
is a one-line error naming the two kinds.
"""

from __future__ import annotations

from enum import Enum

from tileplan.errors import InputError, option


class CacheKind(Enum):
    """How a decoding step keeps its key/value cache (see the module docstring)."""

    DYNAMIC = "dynamic"
    STATIC = "static"

    @classmethod
    def parse(cls, text: "str | CacheKind") -> "CacheKind":
        """A kind from its flag's spelling (`static`, `dynamic`); one line otherwise."""
        if isinstance(text, CacheKind):
            return text
        for kind in cls:
            if kind.value == str(text).strip().lower():
                return kind
        raise InputError(f"{option('kv_cache_kind', str(text))}: expected "
                         f"{' or '.join(k.value for k in cls)} (transformers' DynamicCache or StaticCache)")
