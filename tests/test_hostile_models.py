"""Model files and names from elsewhere: ONNX files that break the format's rules or
the size budget, Hugging Face configs transformers refuses, names that are not text,
and models named by their hub ids. Each bad input is exit 2 and one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tileplan.cli.main import main
from tileplan.app import sources
from tileplan.importers import hf_models
from tileplan.ioutil import MAX_CONFIG_BYTES

TINY_BERT = {"model_type": "bert", "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
             "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 64}


def _plan(capsys, *args: str) -> tuple[int, list[str], str]:
    code = main(["plan", *args, "--no-what-if"])
    captured = capsys.readouterr()
    return code, captured.err.splitlines(), captured.out


def _relu_graph(path: Path, twice: bool = False) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="first")]
    if twice:
        nodes.append(helper.make_node("Relu", ["x"], ["y"], name="second"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def test_an_onnx_graph_that_writes_a_tensor_twice_is_refused(tmp_path, capsys):
    code, err, _ = _plan(capsys, str(_relu_graph(tmp_path / "two.onnx", twice=True)), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1
    assert "tensor 'y' is written by node 'second' (Relu) and by node 'first' (Relu)" in err[0]
    assert "assigns each tensor once" in err[0]
    code, err, _ = _plan(capsys, str(_relu_graph(tmp_path / "one.onnx")), "-o", str(tmp_path / "r.json"))
    assert code == 0, err


def test_an_onnx_node_writing_a_graph_input_is_refused(tmp_path, capsys):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["x"], name="loop")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])])
    path = tmp_path / "self.onnx"
    onnx.save(helper.make_model(graph), path)
    code, err, _ = _plan(capsys, str(path), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1 and "by a graph input" in err[0]


def test_a_huge_sparse_onnx_file_is_refused_before_reading(tmp_path, capsys):
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as fh:
        fh.truncate(5 << 30)  # 5 GiB of holes: no disk, and nothing may be read
    code, err, _ = _plan(capsys, str(path), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1
    assert f"{5 << 30} bytes, larger than the {2 << 30}" in err[0]


def test_an_onnx_fifo_is_refused_without_blocking(tmp_path, capsys):
    path = tmp_path / "pipe.onnx"
    os.mkfifo(path)
    code, err, _ = _plan(capsys, str(path), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1 and "FIFO" in err[0]


def test_an_impossible_config_is_one_line_whatever_library_raises(tmp_path, capsys):
    path = tmp_path / "llama.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 7,
                                "intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 100}))
    code, err, _ = _plan(capsys, str(path), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1
    assert "hidden size (64) is not a multiple of the number of attention heads (7)" in err[0]


@pytest.mark.parametrize("name", ["a\0b", "two\nlines\ntileplan: error: forged", "\x1b[31mred"])
def test_a_model_name_that_is_not_printable_is_escaped(tmp_path, capsys, monkeypatch, name):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**TINY_BERT, "_name_or_path": name}))
    monkeypatch.chdir(tmp_path)
    code, err, out = _plan(capsys, "ckpt/config.json")
    assert code == 0 and err == []
    report = json.loads((tmp_path / "ckpt.json").read_text())
    shown = report["program"]["name"]
    assert "\n" not in shown and "\0" not in shown and "\x1b" not in shown
    assert shown == name.replace("\0", "\\x00").replace("\n", "\\n").replace("\x1b", "\\x1b")


def test_a_config_json_has_one_name_from_inside_and_outside_its_folder(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_BERT))
    monkeypatch.chdir(tmp_path)
    assert _plan(capsys, "ckpt/config.json")[0] == 0
    monkeypatch.chdir(folder)
    assert _plan(capsys, "config.json")[0] == 0
    assert (tmp_path / "ckpt.json").exists() and (folder / "ckpt.json").exists()
    names = {json.loads(p.read_text())["program"]["name"] for p in (tmp_path / "ckpt.json", folder / "ckpt.json")}
    assert names == {"ckpt"}


def test_a_config_over_the_size_limit_is_refused(tmp_path, capsys):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({**TINY_BERT, "padding": "x" * MAX_CONFIG_BYTES}))
    code, err, _ = _plan(capsys, str(path), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1 and f"larger than the {MAX_CONFIG_BYTES}" in err[0]


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache folder holding `org/tiny-bert`'s config.json, as the hub
    client lays it out (refs/main names the snapshot); the machine taken offline."""
    cache = tmp_path / "hub"
    repo = cache / "models--org--tiny-bert"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    (repo / "snapshots" / "0123abcd").mkdir(parents=True)
    (repo / "snapshots" / "0123abcd" / "config.json").write_text(json.dumps(TINY_BERT))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for cached in (sources.locate, sources._kind_of):
        cached.cache_clear()
    yield cache
    for cached in (sources.locate, sources._kind_of):
        cached.cache_clear()


def test_a_hub_id_in_the_local_cache_plans_its_config(hub_cache, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err, out = _plan(capsys, "org/tiny-bert")
    assert code == 0, err
    report = json.loads((tmp_path / "tiny-bert.json").read_text())
    assert report["program"]["name"] == "org/tiny-bert" and report["program"]["source"] == "org/tiny-bert"
    assert any(v["name"].startswith("embeddings.word_embeddings") for v in report["timeline"]["values"])
    assert "tileplan plan org/tiny-bert" in out


def test_a_hub_id_not_cached_while_offline_says_what_to_do_in_one_line(hub_cache, tmp_path, capsys):
    code, err, _ = _plan(capsys, "meta-llama/Llama-2-7b-hf", "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1
    assert "unknown model 'meta-llama/Llama-2-7b-hf': not a built-in model (siglip-" in err[0]
    assert "offline" in err[0] and "config.json" in err[0]


def test_names_that_are_not_hub_ids_are_not_looked_up(hub_cache):
    assert not sources.is_hub_id("siglip-so400m-patch14-384")  # built in
    assert not sources.is_hub_id("synthetic:1000")
    assert not sources.is_hub_id("a/b/c") and not sources.is_hub_id("../x") and not sources.is_hub_id("x y")
    assert sources.is_hub_id("bert-base-uncased") and sources.is_hub_id("google/siglip-so400m-patch14-384")


@pytest.mark.parametrize("doc, message", [
    ({"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 100000,
                                             "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 128}},
     "text_config.num_hidden_layers is 100000, more than the 1000 layers"),
    ({**TINY_BERT, "model_type": "llama", "head_dim": 1 << 30}, "head_dim is 1073741824, more than the 16777216"),
    ({"model_type": "vit", "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
      "num_hidden_layers": 2, "image_size": -32}, "image_size must be an integer in [1, 65536], found -32"),
])
def test_sizes_are_bounded_in_every_sub_configuration(tmp_path, capsys, doc, message):
    """A composite model's text_config with 100,000 layers used to build for minutes and
    gigabytes; a negative image size ended in torch's traceback."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    code, err, _ = _plan(capsys, str(path), "-o", str(tmp_path / "r.json"))
    assert code == 2 and len(err) == 1 and message in err[0], err


def test_every_default_configuration_of_transformers_passes_the_size_bounds():
    from transformers import CONFIG_MAPPING

    checked = 0
    for name, cls in CONFIG_MAPPING.items():
        try:
            config = cls()
        except Exception:  # some need arguments: nothing to check
            continue
        hf_models.check_sizes(config.to_dict(), name)
        checked += 1
    assert checked > 300
