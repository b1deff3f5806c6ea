"""tt-metal's tt-transformers as a Tenstorrent frontend: decoder LLMs (Llama 3.x, Mistral,
Qwen2.5 / Qwen3, Phi-3 / Phi-4, Gemma-3) lowered to the TTNN program one chip runs, with
tt-transformers' own memory and program configs, precisions, KV cache and tensor
parallelism (lower.py). `FRONTEND` is what `tileplan plan --frontend tt-transformers`
calls (frontend.py)."""

from tileplan.targets.tenstorrent.frontends.tt_transformers.frontend import FRONTEND, read_config
from tileplan.targets.tenstorrent.frontends.tt_transformers.lower import build
from tileplan.targets.tenstorrent.frontends.tt_transformers.options import Mode, Preset, TtTransformersOptions

__all__ = ["FRONTEND", "Mode", "Preset", "TtTransformersOptions", "build", "read_config"]
