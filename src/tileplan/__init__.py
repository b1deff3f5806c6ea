"""tileplan: will a tensor program fit in the per-tile SRAM of a tiled accelerator?

`tileplan.plan(model, example_inputs=(x,), weights="f8f143:-4")` plans a PyTorch
module, an ExportedProgram, an ONNX file, a Hugging Face config.json or a built-in
tower (see `tileplan.app.api`). Packages import one way, top to bottom, as
docs/architecture.md lists them (tests/test_import_cycles.py holds the order).
"""

from tileplan.version import __version__

__all__ = ["__version__", "plan"]


def plan(*args, **kwargs):
    """`tileplan.app.api.plan` (imported on first use: the package itself stays light)."""
    from tileplan.app.api import plan as _plan
    return _plan(*args, **kwargs)
