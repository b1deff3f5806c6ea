"""Lowering: every operation into tile-level steps with chosen layouts. The driver
(`program.py`) asks each operator of the registry for its plan and its fragment, and
numbers (`replay.py`) and names (`naming.py`) the values; `policy.py` says where the
declared tensors rest."""
