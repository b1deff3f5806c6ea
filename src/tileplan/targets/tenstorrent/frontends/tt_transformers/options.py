"""The tt-transformers frontend's options: one frozen, hashable value (a what-if row is
its request with one option turned).

What tt-transformers takes at run time and tileplan plans:
- `mode`: one prefill chunk (`prefill_chunk` tokens, a multiple of 32; the default is
  tt-transformers' own `max_prefill_chunk_size` for the model and device, model_config.py
  `MAX_PREFILL_CHUNK_SIZES_DIV1024`) or one decode step;
- `kv_cache`: the positions the KV cache holds per user (`ModelArgs(max_seq_len=...)`;
  a paged cache holds batch x kv_cache positions in `page_block_size`-token blocks, as
  simple_text_demo.py's `page_params` size it);
- `batch`: `max_batch_size`, one of 1, 2, 4, 8, 16, 32 (model_config.py "Batch size {}
  not supported"): a decode step's users; a prefill runs one user, the batch sizing the
  caches beside it;
- `preset`: `DecodersPrecision.performance` or `.accuracy` (model_config.py);
- `paged`: paged attention (the demo's and vLLM's) or one cache per user;
- `vllm`: the KV caches allocated after the whole model, layer by layer (vLLM's
  `allocate_kv_cache`, generator_vllm.py), not with each layer's weights (the demo's
  attention.py `init_kv_cache`): which allocation runs out of DRAM first;
- `vision`: the model is Llama-3.2-Vision (set from its config.json): the prefill is
  its whole prompt with one image (simple_vision_demo.py's `create_multimodal_model`).

Worked example: `TtTransformersOptions(Mode.PREFILL, prefill_chunk=4096,
kv_cache=65536)` plans the first 4,096-token chunk of a prompt on a 64k-position paged
cache, batch 1, performance precisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.tiles import TILE

#: `max_batch_size` values ModelArgs takes (model_config.py `supported_batches`)
SUPPORTED_BATCHES = (1, 2, 4, 8, 16, 32)
#: simple_text_demo.py `page_params`: the batch-1 demo's 32-token blocks
DEFAULT_PAGE_BLOCK = 32
#: the longest context tt-transformers serves (ModelArgs `max_seq_len` default 128 x 1024)
MAX_CONTEXT = 128 * 1024


class Mode(Enum):
    """What one planned step runs."""

    PREFILL = "prefill"
    DECODE = "decode"


class Preset(Enum):
    """`DecodersPrecision.performance` / `.accuracy` (model_config.py)."""

    PERFORMANCE = "performance"
    ACCURACY = "accuracy"

    @classmethod
    def parse(cls, text: str) -> "Preset":
        for p in cls:
            if p.value == text.strip().lower():
                return p
        raise InputError(f"precision preset {text!r}: expected performance or accuracy (tt-transformers' "
                         "DecodersPrecision.performance / .accuracy)")


@dataclass(frozen=True, slots=True)
class TtTransformersOptions:
    """How tt-transformers runs the model (see the module docstring). `prefill_chunk`
    None: tt-transformers' own largest chunk for the model and device. Invariants:
    kv_cache >= 32 and a multiple of 32; a chunk a multiple of 32 and >= 32, at most the
    cache; batch one of 1, 2, 4, 8, 16, 32. A prefill runs one user's chunk
    (generator.py prefill_forward_text prefills user by user); the batch sizes the caches
    and the decode rotary matrices it shares the device with."""

    mode: Mode = Mode.PREFILL
    prefill_chunk: int | None = None
    kv_cache: int = MAX_CONTEXT
    batch: int = 1
    preset: Preset = Preset.PERFORMANCE
    paged: bool = True
    page_block_size: int = DEFAULT_PAGE_BLOCK
    vllm: bool = False
    vision: bool = False

    def __post_init__(self) -> None:
        for name in ("kv_cache", "batch", "page_block_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(f"{name} {value!r}: expected a whole number")
        if self.kv_cache < TILE or self.kv_cache % TILE:
            raise InputError(f"kv_cache {self.kv_cache}: expected a multiple of 32 tokens, at least 32")
        if self.batch not in SUPPORTED_BATCHES:
            raise InputError(f"batch {self.batch}: tt-transformers' ModelArgs takes max_batch_size "
                             f"{', '.join(map(str, SUPPORTED_BATCHES))} (model_config.py 'Batch size not supported')")
        if self.page_block_size < TILE or self.page_block_size % TILE:
            raise InputError(f"page_block_size {self.page_block_size}: expected a multiple of 32 tokens")
        chunk = self.prefill_chunk
        if chunk is not None:
            if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < TILE or chunk % TILE:
                raise InputError(f"prefill_chunk {chunk!r}: expected a multiple of 32 tokens, at least 32 "
                                 "(tt-transformers pads a prefill to whole tiles)")
            if chunk > self.kv_cache:
                raise InputError(f"prefill_chunk {chunk}: a chunk's keys and values go into the cache, which holds "
                                 f"{self.kv_cache} positions; hint: kv_cache >= {chunk}")

    @property
    def kv_positions(self) -> int:
        """Positions the cache holds over all users (a paged pool: batch x kv_cache)."""
        return self.batch * self.kv_cache

    @property
    def max_num_blocks(self) -> int:
        """Blocks of a paged cache (`PagedAttentionConfig.max_num_blocks`)."""
        return -(-self.kv_positions // self.page_block_size)
