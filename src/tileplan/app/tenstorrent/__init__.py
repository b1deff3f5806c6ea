"""The Tenstorrent target's application layer: its request, its report's builder, its
what-if rows and its planning entry (the seam's `TARGET`, app/targets.py). The
frontends' hooks into the application (model names through its importers, a hub id's
config.json) are registered by `run`, the planning run every entry goes through."""
