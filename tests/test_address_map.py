"""The address map of a placed tile (render/address_map.py): one rectangle per
buffer at the height of its offset, every name escaped, the size bounded, the same
bytes for the same input."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tileplan.render.address_map import LEFT, MAX_NAME, PLOT_HEIGHT, PLOT_WIDTH, TOP, address_map_svg

SVG = "{http://www.w3.org/2000/svg}"


def tile(buffers: list[list], capacity: int = 1000, peak_step: int = 2) -> dict:
    height = max((b[5] + b[6] for b in buffers if isinstance(b, list) and type(b[5]) is int), default=0)
    return {"tile": 7, "why": "worst tile (total)", "capacity": capacity, "height": height, "lower_bound": height,
            "peak_step": peak_step, "largest_free": capacity - height, "buffers": buffers}


def rects(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == "buffer"]


BUFFERS = [["group", 0, "standard", 0, 4, 400, 0], ["group", 1, "interleaved", 2, 6, 300, 600],
           ["scratch", None, "standard", 3, 4, 100, 400], ["exchange", None, "standard", 0, 6, 50, 950]]


def test_one_rectangle_per_buffer_with_its_hover_text() -> None:
    svg = address_map_svg(tile(BUFFERS), {0: "layer.0.weight", 1: "layer.0.qkv"})
    found = rects(svg)
    assert len(found) == len(BUFFERS)
    titles = sorted(r.find(f"{SVG}title").text or "" for r in found)
    assert any(t.startswith("layer.0.weight\nstandard region, 400 B") and "at offset 0" in t for t in titles)
    assert any(t.startswith("layer.0.qkv\ninterleaved region, 300 B") and "steps 2 to 5" in t for t in titles)
    assert any(t.startswith("scratch\n") for t in titles) and any(t.startswith("exchange\n") for t in titles)
    assert "capacity 1000 B" in svg and "peak step 2" in svg


def test_y_positions_reflect_offsets_and_x_the_steps() -> None:
    found = rects(address_map_svg(tile(BUFFERS), {}))
    by_offset = {}
    for r in found:
        offset = int(re.search(r"at offset ([\d,]+)", r.find(f"{SVG}title").text or "").group(1).replace(",", ""))
        by_offset[offset] = r
    for *_, lower, _upper, size, offset in BUFFERS:
        r = by_offset[offset]
        top = TOP + PLOT_HEIGHT * (1 - (offset + size) / 1000)  # the map's top is the capacity here
        assert float(r.get("y")) == pytest.approx(top, abs=0.01)
        assert float(r.get("height")) == pytest.approx(max(PLOT_HEIGHT * size / 1000, 0.5), abs=0.02)
        assert float(r.get("x")) == pytest.approx(LEFT + PLOT_WIDTH * lower / 6, abs=0.01)
    # a higher offset is drawn higher up (smaller y)
    ys = [float(by_offset[o].get("y")) for o in sorted(by_offset)]
    assert ys == sorted(ys, reverse=True)


def test_a_buffer_above_the_capacity_is_drawn_and_marked() -> None:
    svg = address_map_svg(tile([["group", 0, "standard", 0, 2, 600, 600]], capacity=1000), {0: "big"})
    (r,) = rects(svg)
    assert r.get("fill") == "#e15759" and float(r.get("y")) == pytest.approx(TOP, abs=0.01)


@pytest.mark.parametrize("hostile", ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "a&b",
                                     "]]><x/>", "\x00\x1b[31m\ud800", "x" * 10_000])
def test_hostile_names_are_escaped(hostile: str) -> None:
    data = tile([["group", 0, "standard", 0, 2, 10, 0], ["group", 1, hostile, 0, 2, 10, 10]])
    data["why"] = hostile
    svg = address_map_svg(data, {0: hostile})
    assert "<script" not in svg and "<img" not in svg and "<x/>" not in svg and "\x00" not in svg
    assert len(svg) < 20_000  # long names are cut
    found = rects(svg)  # parses: nothing closed an element early
    assert len(found) == 2
    assert all(len(r.find(f"{SVG}title").text or "") < 3 * MAX_NAME for r in found)


def test_many_buffers_are_bounded_and_the_caption_counts_the_rest() -> None:
    buffers = [["group", i, "standard", i % 50, i % 50 + 1 + i % 7, 8 + i, 16 * i] for i in range(5000)]
    svg = address_map_svg(tile(buffers, capacity=10**6), {}, max_buffers=300)
    found = rects(svg)
    assert len(found) == 300
    assert "300 of 5000 buffers drawn" in svg and "4700 smaller ones (by bytes x steps) left out" in svg
    areas = sorted(((8 + i) * (1 + i % 7), i) for i in range(5000))
    kept = {i for _, i in areas[-300:]}
    drawn = {int(re.search(r"at offset ([\d,]+)", r.find(f"{SVG}title").text or "").group(1).replace(",", "")) // 16
             for r in found}
    assert drawn == kept
    assert len(svg) < 300 * 400 + 5000
    assert len(address_map_svg(tile(buffers, capacity=10**6), {})) < 2000 * 400 + 5000


def test_same_input_same_bytes_and_malformed_rows_are_skipped() -> None:
    buffers = BUFFERS + [["group", 2, "standard", 5, 5, 10, 0], "junk", ["group", True, "standard", 0, 1, 1, 0],
                         ["group", 3, "standard", 0, 1, -4, 0], ["group", 4, "standard", 0, 1, 1.5, 0]]
    first = address_map_svg(tile(buffers), {0: "a"})
    assert first == address_map_svg(tile(list(buffers)), {0: "a"})
    assert len(rects(first)) == len(BUFFERS) and "5 malformed rows skipped" in first


def test_the_region_boundary_and_empty_tiles() -> None:
    svg = address_map_svg(tile(BUFFERS), {}, boundary=500)
    assert "interleaved region from 500 B" in svg and 'stroke-dasharray="6 4"' in svg
    empty = address_map_svg({"buffers": []}, {})
    assert rects(empty) == [] and "0 of 0 buffers drawn" in empty
    with pytest.raises(ValueError):
        address_map_svg(tile(BUFFERS), {}, max_buffers=-1)
