"""tileplan: will a tensor program fit in the per-tile SRAM of a tiled accelerator?

`tileplan.plan(model, example_inputs=(x,), weights="f8f143:-4")` plans a PyTorch
module, an ExportedProgram, an ONNX file, a Hugging Face config.json or a built-in
tower (see `tileplan.api`). Layers import one way: model -> ops -> lowering ->
planner -> report -> cli; importers build programs from models.
"""

__version__ = "0.1.0"


def plan(*args, **kwargs):
    """`tileplan.api.plan` (imported on first use: the package itself stays light)."""
    from tileplan.api import plan as _plan
    return _plan(*args, **kwargs)
