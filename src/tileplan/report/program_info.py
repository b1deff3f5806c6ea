"""A program's typed info (`tileplan.model.info.ProgramInfo`) as the report says it:
its `program` entries and, for one IPU of a pipeline, its `pipeline` section.

The entries are the report's words for the info's fields (docs/report-format.md,
"Sections"); a field the info does not state is left out, as before the info was
typed. A training program adds `"mode": "training"` and how it trains; an inference
program says no mode.
"""

from __future__ import annotations

from tileplan.model.info import ProgramInfo
from tileplan.report.sections import Pipeline, Scalar


def program_entries(info: ProgramInfo) -> dict[str, Scalar]:
    """The report's `program` entries of `info` but name, machine and policy (the
    report orders them by key)."""
    out: dict[str, Scalar] = {}
    stated: tuple[tuple[str, Scalar], ...] = (
        ("source", info.source), ("architecture", info.architecture),
        ("weights", None if info.weights is None else info.weights.to_text()),
        ("activations", None if info.activations is None else info.activations.to_text()),
        ("batch", info.shape.batch), ("sequence_length", info.shape.sequence_length),
        ("image_size", info.shape.image_size), ("layers", info.shape.layers), ("kv_cache", info.shape.kv_cache),
        ("map_head", info.map_head), ("unroll", True if info.unroll else None),
        ("note", "; ".join(info.notes) if info.notes else None),
    )
    out.update((k, v) for k, v in stated if v is not None)
    if info.synthetic is not None:
        s = info.synthetic
        out.update(values=s.values, rows=s.rows, hidden=s.hidden, mlp=s.mlp, shared=s.shared)
    if info.serialization is not None:
        z = info.serialization
        if z.embedding_factor > 1:
            out["embedding_serialization_factor"] = z.embedding_factor
        if z.embedding_splits_per_ipu is not None:
            out["serialized_embedding_splits_per_ipu"] = _joined(z.embedding_splits_per_ipu)
        if z.projection_factor > 1:
            out["projection_serialization_factor"] = z.projection_factor
    if info.training is not None:
        t = info.training.setup
        out.update(mode=info.mode.value, optimizer=t.optimizer, optimizer_preset=t.preset,
                   accumulator_precision=t.accumulator.to_text(), first_order_precision=t.first_order.to_text(),
                   second_order_precision=t.second_order.to_text(), gradient_accumulation=t.gradient_accumulation,
                   recompute=t.recompute, optimizer_state_offchip=t.optimizer_state_offchip,
                   replication_factor=t.replication_factor, replicated_tensor_sharding=t.replicated_tensor_sharding,
                   stages=_joined(info.training.stages), stash_depths=_joined(info.training.stash_depths))
    return out


def pipeline_section(info: ProgramInfo) -> Pipeline | None:
    """The `pipeline` section of one IPU of a pipeline (None for a whole program)."""
    stage = info.pipeline
    if stage is None:
        return None
    return Pipeline(ipu=stage.ipu, ipus=stage.ipus, layers_per_ipu=stage.layers_per_ipu, layers=stage.layers)


def _joined(numbers: tuple[int, ...]) -> str:
    """`0,3`: numbers as the report's entries write a list (an entry is a scalar)."""
    return ",".join(str(n) for n in numbers)
