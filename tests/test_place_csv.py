"""Reading placement CSV: a byte-order mark and CRLF line ends accepted, special files
refused before a byte is read, a bounded size, names from the file quoted so that an
error is one line, and the quick column reader agreeing with the row-by-row one."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileplan.cli.main import main
from tileplan.errors import InputError
from tileplan.placement import Buffer, Problem, csvfile, parse_csv, read_csv, render_csv
from tileplan.placement.csvfile import _quick, _rows, parse_text


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_spreadsheet_csv_with_bom_and_crlf_is_placed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "sheet.csv"
    src.write_bytes(b"\xef\xbb\xbfid,lower,upper,size\r\na,0,4,100\r\nb,2,6,50\r\nc,4,8,100\r\n")
    assert main(["place", str(src), "--capacity", "150"]) == 0
    assert "height 150 within capacity 150" in capsys.readouterr().out
    assert (tmp_path / "sheet.placed.csv").read_text().splitlines()[1:] == ["a,0,4,100,0", "b,2,6,50,100",
                                                                            "c,4,8,100,0"]


def test_bom_and_crlf_with_quoted_fields_take_the_row_by_row_reader(tmp_path: Path) -> None:
    src = tmp_path / "quoted.csv"
    src.write_bytes('\ufeff"id","lower","upper","size"\r\n"a,1",0,4,100\r\n"b",2,6,50\r\n'.encode())
    problem = read_csv(str(src))
    assert problem.ids == ("a,1", "b") and [b.size for b in problem.buffers] == [100, 50]


def test_a_bom_in_lines_given_to_parse_csv() -> None:
    problem = parse_csv(["\ufeffid,lower,upper,size\r\n", "a,0,4,1\r\n"], "lines")
    assert problem.ids == ("a",)


def test_a_fifo_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(main(["place", str(fifo), "--capacity", "10"])),
                              daemon=True)
    worker.start()
    worker.join(timeout=30)  # opening a FIFO with no writer blocks: the thread would still be waiting
    assert not worker.is_alive() and codes == [2]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a FIFO" in err and str(fifo) in err


def test_a_link_to_dev_zero_is_refused_without_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "zero.csv"
    link.symlink_to("/dev/zero")
    tracemalloc.start()
    try:
        err = one_line_error(capsys, ["place", str(link), "--capacity", "10"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "character device" in err and peak < 8 << 20


def test_a_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "a folder" in one_line_error(capsys, ["place", str(tmp_path), "--capacity", "10"])


def test_a_file_over_the_limit_is_refused_naming_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "big.csv"
    src.write_text("id,lower,upper,size\n" + "".join(f"b{i},0,1,1\n" for i in range(100)))
    assert len(read_csv(str(src))) == 100
    monkeypatch.setattr(csvfile, "MAX_CSV_BYTES", 512)
    err = one_line_error(capsys, ["place", str(src), "--capacity", "10"])
    assert "larger than" in err and "512" in err and str(src) in err
    assert csvfile.MAX_CSV_BYTES == 512 and 256 << 20 == 268435456  # README and docs name 256 MiB


@pytest.mark.parametrize("text, message", [
    ('id,lower,upper,size\n"a\nb",0,4,1\n"a\nb",1,2,1\n', r"row 4: duplicate id 'a\nb' (first on row 2)"),
    ('id,"low\ner",upper,size\na,0,4,1\n', r"row 1: missing column 'lower' (header has 'id,low\ner,upper,size')"),
    ('id,lower,upper,size,"x\ny"\na,0,4,1,2\n', r"row 1: unexpected or repeated column in header"),
    ('id,lower,upper,size\na,0,"4\nx",1\n', r"row 2: upper must be an integer, found '4\nx'"),
])
def test_names_from_the_file_are_quoted_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    text: str, message: str) -> None:
    src = tmp_path / "p.csv"
    src.write_text(text)
    err = one_line_error(capsys, ["place", str(src), "--capacity", "10"])
    assert message in err


def test_a_path_with_a_line_break_is_quoted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "p\nq.csv"
    src.write_text("id,lower,upper,size\na,0,4,-1\n")
    err = one_line_error(capsys, ["place", str(src), "--capacity", "10", "-o", str(tmp_path / "out.csv")])
    assert "row 2: size must be >= 0" in err and repr(str(src)) in err


def test_blank_lines_and_padding_are_read_by_the_quick_path() -> None:
    text = "ID, Lower ,upper,size\n a ,0,4, 100\nb,2,6,50\t\n\n\n"
    problem = _quick(text, "t")
    assert problem is not None and problem == _rows(iter(text.splitlines(keepends=True)), "t")
    assert problem.ids == ("a", "b") and render_csv(problem, (0, 100)) == "id,lower,upper,size,offset\n" \
        "a,0,4,100,0\nb,2,6,50,100\n"


ODD = st.sampled_from(["", " 7", "7 ", "+7", "1_0", "0x1", "\u0663", "-", "-1", "00000000000000000000000007",
                       "3.5", "a,b", '"q"', str(2**62), str(2**63), "\u00e9t\u00e9", " a ", "a"])


@st.composite
def row(draw: st.DrawFn, width: int) -> list[str]:
    """A valid row (lower < upper, size >= 0, alignment >= 1) with sometimes one odd field."""
    lower = draw(st.integers(0, 9))
    fields = [draw(st.sampled_from(["a", "\u00e9t\u00e9", "x y"])) + str(draw(st.integers(0, 40))), str(lower),
              str(lower + draw(st.integers(1, 5))), str(draw(st.integers(0, 2**40))), str(draw(st.integers(1, 8)))]
    fields = fields[:width]
    if draw(st.integers(0, 3)) == 0:
        fields[draw(st.integers(0, width - 1))] = draw(ODD)
    if draw(st.integers(0, 9)) == 0:
        fields = fields[:-1]
    return fields


@given(data=st.data(), alignment=st.booleans(), ending=st.sampled_from(["\n", "\r\n", "\n\n"]))
def test_the_quick_reader_agrees_with_the_row_by_row_reader(data: st.DataObject, alignment: bool,
                                                          ending: str) -> None:
    rows = data.draw(st.lists(row(5 if alignment else 4), max_size=8))
    header = "id,lower,upper,size" + (",alignment" if alignment else "")
    text = ending.join([header] + [",".join(r) for r in rows]) + ending
    try:
        expected = _rows(iter(text.splitlines(keepends=True)), "t")
    except InputError as e:
        expected_error = str(e)
        with pytest.raises(InputError) as got:
            parse_text(text, "t")
        assert str(got.value) == expected_error
        return
    quick = _quick(text, "t")
    assert quick is None or (quick == expected and quick.ids == expected.ids)
    assert parse_text(text, "t") == expected


@pytest.mark.parametrize("ids", [("a", "b c", "d"), ("a,1", 'q"2', "x\ny")])
def test_rendered_rows_read_back(ids: tuple[str, str, str]) -> None:
    problem = Problem(tuple(Buffer(name, k, k + 2, 8, alignment=8 if k == 1 else 1) for k, name in enumerate(ids)))
    text = render_csv(problem, (0, 8, 16))
    back = parse_text(text, "t")
    assert back == problem and back.ids == ids
    assert text.splitlines()[0] == "id,lower,upper,size,alignment,offset"


def test_an_output_path_with_a_line_break_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "p.csv"
    src.write_text("id,lower,upper,size\na,0,4,1\n")
    taken = tmp_path / "out\nput.csv"
    taken.write_text("keep")
    err = one_line_error(capsys, ["place", str(src), "--capacity", "10", "-o", str(taken)])
    assert "out\\nput.csv" in err and "pass -f" in err and taken.read_text() == "keep"
    missing = tmp_path / "no\nfolder" / "out.csv"
    assert "no\\nfolder" in one_line_error(capsys, ["place", str(src), "--capacity", "10", "-o", str(missing)])
