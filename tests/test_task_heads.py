"""A config.json plans the class its `architectures` names: the task head is
part of the plan, and the report says which class was built."""

from __future__ import annotations

import json

from tileplan.cli.main import main

TINY_BERT = {"model_type": "bert", "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
             "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 64}


def _plan(tmp_path, capsys, doc: dict) -> dict:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    assert main(["plan", str(path), "--no-what-if", "-o", str(tmp_path / "r.json")]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return json.loads((tmp_path / "r.json").read_text())


def test_the_architecture_a_config_names_is_planned_with_its_head(tmp_path, capsys):
    report = _plan(tmp_path, capsys, {**TINY_BERT, "architectures": ["BertForQuestionAnswering"]})
    names = {v["name"] for v in report["timeline"]["values"]}
    assert {"qa_outputs.weight", "qa_outputs.bias"} <= names
    assert "pooler.dense.weight" not in names  # the QA model has no pooler
    assert report["program"]["architecture"] == "BertForQuestionAnswering"


def test_without_architectures_the_base_model_is_planned_and_named(tmp_path, capsys):
    report = _plan(tmp_path, capsys, TINY_BERT)
    names = {v["name"] for v in report["timeline"]["values"]}
    assert "pooler.dense.weight" in names and not any(n.startswith("qa_outputs") for n in names)
    assert report["program"]["architecture"] == "BertModel"


def test_an_architecture_transformers_does_not_build_falls_back_to_the_base_model_and_says_so(tmp_path, capsys):
    report = _plan(tmp_path, capsys, {**TINY_BERT, "architectures": ["LlamaForCausalLM"]})
    assert report["program"]["architecture"].startswith("BertModel (architectures names 'LlamaForCausalLM'")
