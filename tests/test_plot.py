"""`tileplan plot`: the liveness chart as a PNG that opens and shows the chart."""

import numpy as np
import pytest
from matplotlib import image

from tileplan.cli.main import main
from tileplan.render.plot import DPI, HEIGHT_IN, WIDTH_IN, plain, tick_step


pytest_plugins = ["report_fixtures"]


RED = np.array([0xCF, 0x22, 0x2E]) / 255  # the budget line


def load(path):
    pixels = image.imread(str(path))  # raises unless the file is a PNG
    return pixels[..., :3]


def test_plot_writes_the_chart_beside_the_report(f16_path, tmp_path, capsys):
    report = tmp_path / "model.json"
    report.write_text(f16_path.read_text())
    assert main(["plot", str(report)]) == 0
    png = tmp_path / "model.png"
    assert f"wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rgb = load(png)
    assert rgb.shape[:2] == (int(HEIGHT_IN * DPI), int(WIDTH_IN * DPI)) == (800, 1300)
    # not blank: a good part of the canvas is drawn, in many colours
    drawn = (rgb < 0.97).any(axis=2)
    assert drawn.mean() > 0.15
    colours = {tuple(c) for c in (rgb[::4, ::4].reshape(-1, 3) * 255).round().astype(int)}
    assert len(colours) > 30
    # the budget line crosses the chart: a row that is red across most of the plot width
    red = (np.abs(rgb - RED) < 0.08).all(axis=2)
    assert red.sum(axis=1).max() > 0.6 * rgb.shape[1]


def test_plot_of_a_stopped_plan_draws_the_known_part(rejected_path, tmp_path):
    out = tmp_path / "stopped.png"
    assert main(["plot", str(rejected_path), "-o", str(out)]) == 0
    rgb = load(out)
    assert (rgb < 0.97).any(axis=2).mean() > 0.05


def test_plot_refuses_other_formats_and_overwrites_only_with_force(f16_path, tmp_path, capsys):
    assert main(["plot", str(f16_path), "-o", str(tmp_path / "chart.svg")]) == 2
    assert "give a path ending in .png" in capsys.readouterr().err
    out = tmp_path / "chart.png"
    out.write_bytes(b"old")
    assert main(["plot", str(f16_path), "-o", str(out)]) == 2
    assert out.read_bytes() == b"old"
    assert main(["plot", str(f16_path), "-o", str(out), "-f"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("high,count,step", [(600 * 1024, 5, 200 * 1024), (450 * 1024, 2, 250 * 1024),
                                             (90, 3, 50), (10 * 1024**2, 5, 2 * 1024**2)])
def test_tick_steps_are_round_in_the_displayed_unit(high, count, step):
    assert tick_step(high, count) == step
    assert high / tick_step(high, count) <= count


def test_names_are_drawn_as_text_not_math(hostile_path, tmp_path):
    # a value named `input $\\frac$ ...` would stop matplotlib's mathtext parser
    assert plain("input $\\frac$") == "input \\$\\frac\\$"
    out = tmp_path / "hostile.png"
    assert main(["plot", str(hostile_path), "-o", str(out)]) == 0
    assert load(out).shape[:2] == (800, 1300)
