"""The Tenstorrent target's application layer: its request, its report's builder, its
what-if rows and its planning entry (the seam's `TARGET`, app/targets.py)."""
