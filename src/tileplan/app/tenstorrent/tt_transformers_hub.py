"""The tt-transformers frontend reads a `config.json`; a MODEL given as a Hugging Face
hub id is found through the application's lookup (app/sources.py: the local cache,
else the hub), which this module registers with the frontend (the target layer sits
below the application and cannot import it)."""

from __future__ import annotations

from tileplan.app.sources import is_hub_id, locate
from tileplan.targets.tenstorrent.frontends.tt_transformers.frontend import register_hub


def lookup(model: str) -> str | None:
    """`model`'s config.json path when it is a hub id, else None."""
    return locate(model) if is_hub_id(model) else None


register_hub(lookup)
