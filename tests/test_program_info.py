"""What a program says about itself (`tileplan.model.info.ProgramInfo`), typed: its
invariants, its mode and pipeline stage, and the report's `program` entries and
`pipeline` section written from it (tileplan.report.program_info)."""

from __future__ import annotations

import pytest

from tileplan.builtins import siglip
from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic
from tileplan.model.info import (
    Mode, ModelShape, PipelineStage, ProgramInfo, Serialization, SyntheticSize, TrainingInfo,
)
from tileplan.model.precision import F16, F32, from_option
from tileplan.model.stages import split_program
from tileplan.model.training import TrainingSetup
from tileplan.report.program_info import pipeline_section, program_entries

BASE = "siglip-base-patch16-224"


def test_a_pipeline_stage_is_its_ipus_own_range_of_layers():
    stage = PipelineStage.of(1, (2, 3, 1))
    assert (stage.ipu, stage.ipus, stage.layers) == (1, 3, (2, 5))
    with pytest.raises(ValueError, match="runs layers \\[2, 5\\), found \\[0, 3\\]"):
        PipelineStage(1, 3, (2, 3, 1), (0, 3))
    with pytest.raises(ValueError, match="expected 0 <= ipu < ipus"):
        PipelineStage(3, 3, (2, 3, 1), (6, 6))
    with pytest.raises(ValueError, match="expected 0 <= ipu < ipus"):
        PipelineStage(0, 2, (2, 3, 1), (0, 2))
    with pytest.raises(ValueError, match="must be >= 0"):
        PipelineStage.of(0, (2, -1))


def test_program_info_invariants():
    assert ProgramInfo().mode is Mode.INFERENCE
    training = TrainingInfo(TrainingSetup(), (0,), (0,))
    assert ProgramInfo(training=training).mode is Mode.TRAINING
    with pytest.raises(ValueError, match="one stash depth"):
        TrainingInfo(TrainingSetup(), (0, 1), (3,))
    with pytest.raises(ValueError, match="neither trains nor"):
        ProgramInfo(synthetic=SyntheticSize(100, 64, 128, 256, 4), training=training)
    with pytest.raises(ValueError, match="neither trains nor"):
        ProgramInfo(synthetic=SyntheticSize(100, 64, 128, 256, 4), pipeline=PipelineStage.of(0, (1, 1)))
    with pytest.raises(ValueError, match="state its map_head"):
        ProgramInfo(unroll=True)
    with pytest.raises(ValueError, match="must say something"):
        ProgramInfo(notes=("",))
    with pytest.raises(ValueError, match="batch must be >= 1"):
        ModelShape(batch=0)
    with pytest.raises(ValueError, match="factors must be >= 1"):
        Serialization(projection_factor=0)


def test_a_towers_entries_omit_its_defaults():
    cfg = siglip.config(BASE, layers=2)
    plain = siglip.build_vit(cfg, from_option("f8f143:-4"))
    assert program_entries(plain.info) == {"layers": 2, "map_head": True, "weights": "F8F143 { scale_exponent: -4 }"}
    flat = siglip.build_vit(siglip.config(BASE, layers=2, batch=3), F16, unroll=True, activations=F32)
    assert program_entries(flat.info) == {"layers": 2, "map_head": True, "weights": "F16", "batch": 3,
                                          "unroll": True, "activations": "F32"}
    assert flat.info.mode is Mode.INFERENCE and pipeline_section(flat.info) is None


def test_a_synthetic_chains_entries_are_its_size():
    program = build_synthetic(SyntheticConfig(200))
    assert program_entries(program.info) == {"weights": "F16", "values": 200, "rows": 64, "hidden": 128,
                                             "mlp": 256, "shared": 4}


def test_a_training_programs_entries_say_how_it_trains():
    setup = TrainingSetup(optimizer="lamb", gradient_accumulation=5, recompute="pipeline", preset="optimum",
                          accumulator=F16)
    info = ProgramInfo(source="m/config.json", architecture="BertForQuestionAnswering", weights=F16,
                       shape=ModelShape(batch=2, sequence_length=16),
                       serialization=Serialization(4, (2, 2), 1), training=TrainingInfo(setup, (0, 3), (5, 0)),
                       pipeline=PipelineStage.of(0, (2, 2)))
    assert program_entries(info) == {
        "source": "m/config.json", "architecture": "BertForQuestionAnswering", "weights": "F16", "batch": 2,
        "sequence_length": 16, "embedding_serialization_factor": 4, "serialized_embedding_splits_per_ipu": "2,2",
        "mode": "training", "optimizer": "lamb", "optimizer_preset": "optimum", "accumulator_precision": "F16",
        "first_order_precision": "F32", "second_order_precision": "F32", "gradient_accumulation": 5,
        "recompute": "pipeline", "optimizer_state_offchip": False, "replication_factor": 1,
        "replicated_tensor_sharding": False, "stages": "0,3", "stash_depths": "5,0"}
    section = pipeline_section(info)
    assert section is not None and section.to_json() == {"ipu": 0, "ipus": 2, "layers_per_ipu": [2, 2],
                                                         "layers": [0, 2]}


def test_each_stage_of_a_split_carries_its_pipeline_stage_and_shifted_layers():
    program = siglip.build_vit(siglip.config(BASE, layers=6), F16)
    stages = split_program(program, (2, 3, 1))
    assert [s.info.pipeline for s in stages] == [PipelineStage.of(k, (2, 3, 1)) for k in range(3)]
    assert all(s.info.shape == program.info.shape for s in stages)
    # a stage's block starts at its first layer: its body's layer says so
    firsts = [{op.layer for op in s.operations() if op.layer is not None} for s in stages]
    assert firsts == [{0}, {2}, {5}]
