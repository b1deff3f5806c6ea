import pytest

from tileplan.errors import InputError, TextSyntaxError
from tileplan.model.precision import Precision, from_option


@pytest.mark.parametrize("text,nbytes", [
    ("F32", 4), ("F16", 2), ("BF16", 2), ("I8", 1), ("U16", 2), ("I32", 4), ("U64", 8),
    ("F8F143 { scale_exponent: -4 }", 1), ("F8F152 { scale_exponent: 31 }", 1),
])
def test_bytes_and_round_trip(text, nbytes):
    p = Precision.from_text(text)
    assert p.bytes == nbytes
    assert p.to_text() == text


def test_fp8_scale_range_is_checked():
    with pytest.raises(InputError, match=r"scale_exponent must be in \[-31, 31\], found 32"):
        Precision("F8F143", 32)
    with pytest.raises(InputError, match="takes no scale_exponent"):
        Precision("F16", 0)


def test_unknown_precision_names_the_choices():
    with pytest.raises(InputError, match=r"unknown precision 'F12'; expected one of F32"):
        Precision.from_text("F12")


def test_fp8_text_needs_its_field():
    with pytest.raises(TextSyntaxError, match="expected F8F143"):
        Precision.from_text("F8F143")


def test_command_line_form():
    assert from_option("f8f143:-4") == Precision("F8F143", -4)
    assert from_option("f16") == Precision("F16")
    with pytest.raises(InputError, match="only F8F143/F8F152 take"):
        from_option("f16:3")
    with pytest.raises(InputError, match="FP8 needs its scale exponent after ':', e.g. f8f143:-4"):
        from_option("f8f143")
