import re
from dataclasses import fields
from pathlib import Path

import pytest

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.model.machine import IPU21, Machine, machine

TOML = """
name = "ipu-1216"
class_prefix = "Ipu21"
tile_count = 1216
tile_bytes = 638976
non_interleaved_bytes = 212992
interleaved_bytes = 425984
support_reserve_bytes = 49152
standard_budget_bytes = 162080
interleaved_budget_bytes = 424880
element_pair_bytes = 32768
exchange_row_bytes = 16

[[amp]]
multiply = "F8F143"
input_channels = 32
output_channels = 16
accumulate = "F16"
"""


def test_ipu21_preset_budgets():
    assert IPU21.budget_bytes == 586960
    assert IPU21.standard_budget_bytes == 212992 - 49152 - 1760
    assert IPU21.interleaved_budget_bytes == 425984 - 1104
    assert IPU21.tile_bytes == 638976 == IPU21.non_interleaved_bytes + IPU21.interleaved_bytes


def test_machine_from_toml_plans_on_1216_tiles(tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text(TOML)
    m = machine(str(path))
    assert m.tile_count == 1216 and m.amp[0].input_channels == 32
    out = tmp_path / "r.json"
    assert main(["plan", "--machine", str(path), "--layers", "2", "--no-what-if", "-o", str(out)]) == 0
    assert main(["check", str(out)]) == 0
    assert '"tile_count":1216' in out.read_text()


@pytest.mark.parametrize("change,message", [
    (lambda t: t.replace("tile_count = 1216\n", ""), "missing machine field 'tile_count'"),
    (lambda t: "colour = 3\n" + t, "unknown machine field 'colour'"),
    (lambda t: t + "colour = 3\n", "amp[0]: unknown field 'colour'"),
    (lambda t: t.replace("interleaved_budget_bytes = 424880", "interleaved_budget_bytes = 500000"),
     "interleaved budget 500000 exceeds the interleaved region 425984"),
    (lambda t: t.replace("tile_count = 1216", "tile_count = 0"), "tile_count must be positive, found 0"),
    (lambda t: t.replace("tile_count = 1216", "tile_count = \"many\""), "tile_count must be an integer"),
    (lambda t: t.replace("[[amp]]", "[[amp"), "not valid TOML"),
    (lambda t: t.replace('accumulate = "F16"', 'accumulate = "F12"'), "accumulate must be a precision name"),
])
def test_bad_machine_files_are_one_line_errors(tmp_path, capsys, change, message):
    path = tmp_path / "bad.toml"
    path.write_text(change(TOML))
    with pytest.raises(InputError, match=re.escape(message)):
        Machine.from_toml(str(path))
    assert main(["plan", "--machine", str(path), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err


def test_preset_fields_are_all_documented():
    text = (Path(__file__).parents[1] / "docs" / "machine-and-model.md").read_text()
    for f in fields(Machine):
        if f.name != "amp":
            assert f"`{f.name}`" in text, f.name


@pytest.mark.parametrize("change,message", [
    (lambda t: t.replace('multiply = "F8F143"', "multiply = 5"), "amp[0]: AMP geometry: multiply must be a precision"),
    (lambda t: t.replace('class_prefix = "Ipu21"', "class_prefix = 7"), "class_prefix must be a string"),
    (lambda t: t.replace('class_prefix = "Ipu21"', 'class_prefix = ""'), "class_prefix must be a string"),
    (lambda t: t.replace("input_channels = 32", 'input_channels = "32"'), "input_channels must be an integer"),
    (lambda t: t.replace('accumulate = "F16"', 'accumulate = "F8F143"'), "accumulate must not be FP8"),
    (lambda t: t.replace('name = "ipu-1216"', "name = 3"), "name must be a string"),
    (lambda t: t + t[t.index("[[amp]]"):], "amp lists F8F143 twice"),
    (lambda t: t.replace("tile_count = 1216", "tile_count = 100000000"), "tile_count must be in [0, 65536]"),
])
def test_machine_fields_of_the_wrong_type_are_named(tmp_path, capsys, change, message):
    path = tmp_path / "bad.toml"
    path.write_text(change(TOML))
    assert main(["plan", "--machine", str(path), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and err.count("\n") == 1


def test_presets_for_the_ipu_generations_users_have(tmp_path, capsys):
    from tileplan.cli.main import main
    from tileplan.model.machine import PRESETS

    assert set(PRESETS) == {"ipu21", "mk2", "bow", "mk1"}
    assert (PRESETS["mk2"].tile_count, PRESETS["mk2"].tile_bytes) == (1472, 638976)
    assert (PRESETS["mk1"].tile_count, PRESETS["mk1"].tile_bytes) == (1216, 262144)
    assert not any(g.multiply.startswith("F8") for name in ("mk2", "bow", "mk1") for g in PRESETS[name].amp)
    assert main(["plan", "--machine", "mk2", "--layers", "2", "--no-what-if", "-o", str(tmp_path / "a.json")]) == 0
    assert '"weights":"F16"' in (tmp_path / "a.json").read_text()  # the default where the AMP has no FP8
    assert main(["plan", "--machine", "mk2", "--weights", "f8f143:-4", "-o", str(tmp_path / "b.json")]) == 2
    assert "machine mk2 has no AMP geometry for F8F143" in capsys.readouterr().err
