"""Lowering: every operation into tile-level steps with chosen layouts."""
