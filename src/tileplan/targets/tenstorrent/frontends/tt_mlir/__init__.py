"""The tt-mlir frontend: a model as tt-xla and tt-mlir compile it for one Tenstorrent chip
(`lower`), its options (`TtMlirOptions`) and the frontend contract value (`FRONTEND`)."""

from tileplan.targets.tenstorrent.frontends.tt_mlir.frontend import FRONTEND
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import TtMlirOptions

__all__ = ["FRONTEND", "TtMlirOptions", "lower"]
