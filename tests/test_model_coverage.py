"""The coverage table over transformers' model families: every
architecture of `tests/model_zoo.py` (a small configuration: 2 layers, hidden sizes of
32) planned through torch.export on the meta device, a subset through each ONNX
exporter (graph-only files), as a saved `.pt2` and on a Tenstorrent n150, each cell checked against
`docs/model-coverage.md` (written by `benchmarks/model_coverage.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from model_zoo import (BY_NAME, CASES, COLUMNS, DOC, ONNX_SUBSET, PT2_SUBSET, read_doc, run_n150, run_onnx, run_pt2,
                        run_torch)


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, str]]:
    return read_doc(DOC)


def test_the_table_holds_forty_architectures_of_the_families_asked_for(table):
    assert [c.name for c in CASES] == list(table) and len(table) >= 40
    for name in ("BERT", "LLaMA", "Mistral", "Qwen2", "T5", "mT5", "BART", "Whisper", "ViT", "Swin", "ConvNeXt",
                 "ResNet", "MobileNetV2", "EfficientNet", "SegFormer", "DETR", "wav2vec2", "HuBERT", "CLIP", "SigLIP"):
        assert name in table, name
    for row in table.values():  # every cell plans or says why not
        assert all(row[c].startswith(("plans", "does not plan: ", "export fails", "fits (", "does not fit: "))
                   for c in COLUMNS), row


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_torch_export(table, name):
    assert run_torch(BY_NAME[name]) == table[name]["torch.export"]


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_n150(table, name):
    assert run_n150(BY_NAME[name]) == table[name]["n150 (tt-mlir)"]


@pytest.mark.parametrize("exporter, name", [(e, n) for e, names in ONNX_SUBSET.items() for n in names])
def test_onnx_graph_only(table, tmp_path: Path, exporter: str, name: str):
    assert run_onnx(BY_NAME[name], exporter, tmp_path) == table[name][f"ONNX {exporter}"]


@pytest.mark.parametrize("name", PT2_SUBSET)
def test_pt2_of_a_meta_device_model(table, tmp_path: Path, name: str):
    assert run_pt2(BY_NAME[name], tmp_path) == table[name][".pt2"]
