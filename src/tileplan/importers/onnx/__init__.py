"""The ONNX importer: `from_onnx(path)` reads an ONNX file's graph (never its weights)
and builds a `Graph` of registry operators. `load` reads the file, `fold` computes
what constants and shapes determine, `mappers` maps ONNX operators onto the
registry's, `importer` walks the graph."""

from tileplan.importers.onnx.importer import from_onnx, place_views_beside_readers

__all__ = ["from_onnx", "place_views_beside_readers"]
