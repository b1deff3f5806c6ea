import pytest

from tileplan.errors import LayoutError, TextSyntaxError
from tileplan.model.layout import (
    AMP_TRANSPOSED_LEFT, LINEAR, ROW_MAJOR, Axis, AxisTiling, Layout, MemoryClass, Padding,
    TensorTiling, block_major,
)


def test_every_reference_layout_round_trips(reference_values):
    texts = {v["layout"] for v in reference_values}
    assert len(texts) == 7  # the distinct layouts of the reference
    for text in texts:
        assert Layout.from_text(text).to_text() == text


def test_reference_layouts_parse_to_the_expected_structure(reference_values):
    patches = Layout.from_text(reference_values[0]["layout"])
    assert patches.order == block_major(160, 16)
    assert patches.tiling.replicas == 8
    first, second = patches.tiling.axes
    assert first.axis == Axis.from_end(2) and first.partitions == 46 and first.tile_stride == 1
    assert second.axis == Axis.from_end(1) and second.block_size == 160 and second.tile_stride is None
    assert patches.memory_class == MemoryClass("Ipu21", "Standard")
    weight = Layout.from_text(reference_values[1]["layout"])
    assert weight.order == AMP_TRANSPOSED_LEFT and weight.tiling.replicas == 46
    partials = Layout.from_text(reference_values[70]["layout"])
    assert partials.memory_class.is_interleaved
    assert [a.axis for a in partials.tiling.axes] == [Axis.from_start(2), Axis.from_start(3), Axis.from_start(0)]
    assert partials.tiling.axes[2].padding is Padding.REJECT


def test_constructed_layout_prints_like_the_reference(reference_values):
    layout = Layout(ROW_MAJOR, TensorTiling(1472, 1, (AxisTiling(LINEAR, 1472, block_size=4, padding_multiple=4,
                                                                  padding=Padding.REJECT),)),
                    MemoryClass("Ipu21", "Standard"))
    assert layout.to_text() == reference_values[2]["layout"]


def test_partitions_times_replicas_must_be_tile_count():
    with pytest.raises(LayoutError, match=r"partitions \(46 x 4\) x replicas 4 = 736, expected tile_count 1472"):
        TensorTiling(1472, 4, (AxisTiling(Axis.from_end(2), 46), AxisTiling(Axis.from_end(1), 4)))


def test_zero_partitions_is_rejected():
    with pytest.raises(LayoutError, match="partitions must be >= 1, found 0"):
        AxisTiling(LINEAR, 0)


def test_linear_must_be_alone_and_axes_distinct():
    with pytest.raises(LayoutError, match="Linear axis must be the only axis"):
        TensorTiling(4, 1, (AxisTiling(LINEAR, 2), AxisTiling(Axis.from_end(1), 2)))
    with pytest.raises(LayoutError, match="tiled twice"):
        TensorTiling(4, 1, (AxisTiling(Axis.from_end(1), 2), AxisTiling(Axis.from_end(1), 2)))


@pytest.mark.parametrize("text,message", [
    ("Layout { order: RowMajor }", "Layout expects fields"),
    ("Layout { order: ColumnMajor, tiling: TensorTiling { tile_count: 1, replicas: 1, axes: [] }, "
     "memory_class: Ipu21Standard }", "unknown order ColumnMajor"),
    ("Layout { order: RowMajor, tiling: TensorTiling { tile_count: 1, replicas: 1, axes: [] }, "
     "memory_class: Ipu21Sram }", "expected <Machine>Standard or <Machine>Interleaved"),
    ("Layout { order: RowMajor, tiling: TensorTiling { tile_count: 1, replicas: 1, axes: [] }", "expected"),
    ("Layout { order: RowMajor; }", "unexpected character ';'"),
])
def test_bad_layout_text_names_the_problem(text, message):
    with pytest.raises(TextSyntaxError, match=message):
        Layout.from_text(text)
