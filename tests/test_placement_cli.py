"""`tileplan place`: rows written back with offsets, exit codes 0/3/2, one-line errors
naming the row and the rule, no overwrite without -f."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tileplan.cli.main import main

PROBLEM = "id,lower,upper,size\na,0,4,100\nb,2,6,50\nc,4,8,100\n"


def write(tmp_path: Path, text: str, name: str = "p.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_placed_within_capacity_writes_offsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, PROBLEM)
    assert main(["place", src, "--capacity", "150"]) == 0
    out = capsys.readouterr().out
    assert "height 150 within capacity 150" in out and "optimal" in out
    with open(tmp_path / "p.placed.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    offsets = {r["id"]: int(r["offset"]) for r in rows}
    assert offsets["a"] + 100 <= offsets["b"] or offsets["b"] + 50 <= offsets["a"]
    assert offsets["c"] + 100 <= offsets["b"] or offsets["b"] + 50 <= offsets["c"]


def test_over_capacity_exits_3_with_height_and_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, PROBLEM)
    assert main(["place", src, "--capacity", "120", "-o", str(tmp_path / "out.csv")]) == 3
    out = capsys.readouterr().out
    assert "height 150 over capacity 120; lower bound 150" in out
    assert (tmp_path / "out.csv").exists()


def test_alignment_column_is_kept(tmp_path: Path) -> None:
    src = write(tmp_path, "id,lower,upper,size,alignment\na,0,4,3,1\nb,0,4,8,8\n")
    assert main(["place", src, "--capacity", "16"]) == 0
    with open(tmp_path / "p.placed.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[1]["alignment"] == "8" and int(rows[1]["offset"]) % 8 == 0


def test_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, PROBLEM)
    (tmp_path / "p.placed.csv").write_text("keep")
    assert main(["place", src, "--capacity", "150"]) == 2
    assert "pass -f" in capsys.readouterr().err
    assert (tmp_path / "p.placed.csv").read_text() == "keep"
    assert main(["place", src, "--capacity", "150", "-f"]) == 0


@pytest.mark.parametrize("text, message", [
    ("id,lower,upper,size\na,0,4,-1\n", "row 2: size must be >= 0, found -1"),
    ("id,lower,upper,size\na,0,4,1\nb,5,5,1\n", "row 3: lower must be < upper, found lower 5 >= upper 5"),
    ("id,lower,upper,size\na,0,4,1\na,1,2,1\n", "row 3: duplicate id 'a' (first on row 2)"),
    ("id,lower,size\na,0,4\n", "row 1: missing column 'upper'"),
    ("id,lower,upper,size\na,0,4,1.5\n", "row 2: size must be an integer, found '1.5'"),
    ("id,lower,upper,size\na,0,4,99999999999999999999\n", "row 2: size 99999999999999999999 is too large"),
    ("id,lower,upper,size\na,0,4\n", "row 2: expected 4 fields, found 3"),
    ("", "empty file"),
])
def test_bad_input_is_one_line_naming_row_and_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   text: str, message: str) -> None:
    src = write(tmp_path, text)
    assert main(["place", src, "--capacity", "10"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_options_and_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, PROBLEM)
    assert main(["place", src, "--capacity", "-1"]) == 2
    assert main(["place", src, "--capacity", "10", "--time-limit", "0"]) == 2
    assert main(["place", str(tmp_path / "none.csv"), "--capacity", "10"]) == 2
    assert main(["place", src, "--capacity", "10", "-o", src]) == 2
    assert "Traceback" not in capsys.readouterr().err
