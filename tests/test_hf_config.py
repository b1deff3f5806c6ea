"""Models from a Hugging Face config.json (architecture only; nothing downloaded)."""

import json

import pytest

from tileplan.cli.main import main
from tileplan.builtins import siglip

# the vision part of google/siglip-so400m-patch14-384's config.json
SO400M = {
    "_name_or_path": "google/siglip-so400m-patch14-384",
    "model_type": "siglip",
    "text_config": {"hidden_size": 1152, "model_type": "siglip_text_model"},
    "vision_config": {"hidden_size": 1152, "image_size": 384, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14},
}


def test_a_siglip_config_gives_the_named_configuration(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SO400M))
    cfg = siglip.config(str(path))
    named = siglip.config("siglip-so400m-patch14-384")
    assert cfg.name == "google/siglip-so400m-patch14-384"
    assert (cfg.hidden, cfg.mlp, cfg.heads, cfg.layers, cfg.image, cfg.patch, cfg.channels, cfg.map_head) == \
        (named.hidden, named.mlp, named.heads, named.layers, named.image, named.patch, named.channels, named.map_head)


def test_plan_from_a_config_json_equals_the_named_plan(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SO400M))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["plan", str(path), "--layers", "2", "--no-what-if", "-o", str(a)]) == 0
    assert main(["plan", "siglip-so400m-patch14-384", "--layers", "2", "--no-what-if", "-o", str(b)]) == 0
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert da["program"].pop("name") == "google/siglip-so400m-patch14-384"
    db["program"].pop("name")
    assert da == db


def test_a_vision_config_without_the_head(tmp_path):
    path = tmp_path / "vision.json"
    path.write_text(json.dumps({**SO400M["vision_config"], "vision_use_head": False, "num_hidden_layers": 2}))
    cfg = siglip.config(str(path))
    assert cfg.layers == 2 and cfg.map_head is False


@pytest.mark.parametrize("doc,message", [
    ({"model_type": "no-such-architecture"}, "transformers cannot build a 'no-such-architecture' configuration"),
    ({"model_type": "bert", "num_hidden_layers": 10**9}, "num_hidden_layers must be in [1, 1000], found 1000000000"),
    ({"model_type": "bert", "hidden_size": 2 ** 40}, "hidden_size must be in [1, 16777216]"),
    ({**SO400M, "vision_config": {**SO400M["vision_config"], "hidden_size": "big"}},
     'vision_config: hidden_size must be a positive integer, found "big"'),
    ({**SO400M, "vision_config": {k: v for k, v in SO400M["vision_config"].items() if k != "patch_size"}},
     "patch_size must be a positive integer, found null"),
    ({**SO400M, "vision_config": {**SO400M["vision_config"], "num_attention_heads": 7}},
     "hidden 1152 is not divisible by 7 heads"),
    ([1, 2], "expected a JSON object"),
])
def test_bad_configs_are_one_line_errors(tmp_path, capsys, doc, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    assert main(["plan", str(path), "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_default_output_name_comes_from_the_model_name(tmp_path, monkeypatch, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SO400M, "vision_config": {**SO400M["vision_config"], "num_hidden_layers": 1}}))
    monkeypatch.chdir(tmp_path)
    assert main(["plan", str(path), "--no-what-if"]) == 0
    assert (tmp_path / "siglip-so400m-patch14-384.json").exists()


def test_plan_in_a_checkpoint_folder_never_overwrites_its_config(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "so400m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(SO400M))
    monkeypatch.chdir(folder)
    assert main(["plan", "config.json", "--layers", "1", "--no-what-if", "-f"]) == 0
    assert json.loads((folder / "config.json").read_text()) == SO400M  # untouched
    assert (folder / "siglip-so400m-patch14-384.json").exists()  # named after _name_or_path
    assert main(["plan", "config.json", "-o", "config.json", "-f"]) == 2
    assert "is the model's own file" in capsys.readouterr().err


def test_a_config_with_a_billion_layers_is_a_one_line_error(tmp_path, capsys):
    doc = {**SO400M, "vision_config": {**SO400M["vision_config"], "num_hidden_layers": 10**9}}
    (tmp_path / "config.json").write_text(json.dumps(doc))
    assert main(["plan", str(tmp_path / "config.json"), "-o", str(tmp_path / "out.json")]) == 2
    assert "layers must be in [1, 1000], found 1000000000" in capsys.readouterr().err


def test_plan_prints_precisions_as_people_write_them(tmp_path, capsys):
    assert main(["plan", "--layers", "1", "--no-what-if", "-o", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "F8 E4M3 x2^-4" in out and "scale_exponent" not in out
