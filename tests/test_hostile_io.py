"""Hostile files and streams: what tileplan reads (only regular files, bounded) and
how it writes (through links, never over a device, atomically new without -f, no
temporary file left behind, one line for every failure, the exit code kept when the
reader of stdout leaves)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tileplan.cli.main import main
from tileplan.errors import InputError, TextSyntaxError
from tileplan.ioutil import check_target, read_bytes, read_json, write_atomic
from tileplan.model.layout import Layout
from tileplan.model.machine import Machine

pytest_plugins = ["report_fixtures"]

TILEPLAN = [sys.executable, "-m", "tileplan.cli.main"]


def one_line_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tileplan: error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


# reading ----------------------------------------------------------------------------------

def test_a_device_a_fifo_or_a_folder_is_refused_not_read(tmp_path, capsys):
    fifo = tmp_path / "bad.json"  # (named so the suite's own check of written reports skips it)
    os.mkfifo(fifo)  # no writer: reading it would block for ever
    for path, kind in (("/dev/zero", "a character device"), (str(fifo), "a FIFO"), (str(tmp_path), "a folder")):
        assert main(["summary", path]) == 2
        one_line_error(capsys, path, f"expected a regular file, found {kind}")
        assert main(["html", path, "-o", str(tmp_path / "page.html")]) == 2
        one_line_error(capsys, "expected a regular file")


def test_reading_stops_at_the_size_cap(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 4096 + b"{}")
    with pytest.raises(InputError, match=r"big.json: 4098 bytes, larger than the 1000"):
        read_bytes(str(big), limit=1000)
    assert read_json(str(big), limit=5000) == {}


def test_machine_toml_that_is_a_device_deep_or_huge(tmp_path):
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    huge = tmp_path / "huge.toml"
    huge.write_text("tile_count = " + "9" * 5000 + "\n")
    for path, message in ((zero, "expected a regular file, found a character device"),
                          (deep, "nested too deeply"), (huge, "4300 digits")):
        with pytest.raises(InputError, match=message) as e:
            Machine.from_toml(str(path))
        assert "\n" not in str(e.value) and str(e.value).startswith(str(path))


def test_deep_or_long_layout_text_is_one_error():
    for text, message in (("[" * 100_000 + "]" * 100_000, "nested more than 64 deep"),
                          ("Layout { order: " + "X(" * 100_000, "nested more than 64 deep"),
                          ("9" * 5000, "a number of 5000 digits")):
        with pytest.raises(TextSyntaxError, match=message) as e:
            Layout.from_text(text)
        assert "\n" not in str(e.value) and len(str(e.value)) < 200


# writing ----------------------------------------------------------------------------------

def test_a_symlink_is_written_through_not_replaced(f8_path, tmp_path, capsys):
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    assert main(["html", str(f8_path), "-o", str(link), "-f"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("<!DOCTYPE html>")
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "new.html")
    assert main(["html", str(f8_path), "-o", str(dangling)]) == 0
    assert dangling.is_symlink() and (tmp_path / "new.html").read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.html", "link.html", "new.html", "real.html"]


def test_nothing_but_a_regular_file_is_replaced(f8_path, tmp_path, capsys):
    fifo = tmp_path / "fifo.html"
    os.mkfifo(fifo)
    stdout_link = tmp_path / "stdout.html"
    stdout_link.symlink_to("/dev/null")  # as -o /dev/stdout: a link to a device
    for target, kind in ((fifo, "a FIFO"), (stdout_link, "a character device"), (Path("/dev/null"), "character")):
        assert main(["html", str(f8_path), "-o", str(target), "-f"]) == 2
        one_line_error(capsys, "exists and is not a regular file", kind)
    assert fifo.is_fifo() and stdout_link.is_symlink() and Path("/dev/null").is_char_device()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.html", "stdout.html"]  # no temporary file


def test_without_f_the_second_of_two_writers_fails(tmp_path):
    target = tmp_path / "page.html"
    check_target(target, overwrite=False)  # this writer finds the path new (as plan does, then plans) ...
    target.write_text("other")  # ... another writer creates it meanwhile ...
    with pytest.raises(InputError, match="exists.*; pass -f"):
        write_atomic(target, "mine")  # ... so this one must not replace it
    assert target.read_text() == "other"
    with pytest.raises(InputError, match="exists; pass -f"):
        write_atomic(target, "mine", overwrite=False)  # html and plot without -f
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]  # no temporary file
    write_atomic(target, "forced", overwrite=True)
    assert target.read_text() == "forced"


def test_two_writers_racing_for_a_new_path_one_wins(tmp_path, monkeypatch):
    """Both pass the existence check; the link of the finished file decides."""
    target = tmp_path / "page.html"
    check_target(target, overwrite=False)
    real_link = os.link
    calls = []

    def first_writer_wins(src, dst):  # the other writer links its file just before this one
        calls.append(dst)
        Path(dst).write_text("other")
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", first_writer_wins)
    with pytest.raises(InputError, match="another writer created it meanwhile"):
        write_atomic(target, "mine", overwrite=False)
    assert calls and target.read_text() == "other" and [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal
        from tileplan import ioutil
        real_replace = os.replace
        def terminated(*args):
            os.kill(os.getpid(), signal.SIGTERM)  # arrives while the temporary file exists
            real_replace(*args)
        os.replace = terminated
        ioutil.write_atomic({str(tmp_path / "out.json")!r}, "x" * 1_000_000, overwrite=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name,message", [
    ("x" * 300 + ".html", "output file name is 305 bytes long"),
    ("bad\0name.html", "contains a NUL character"),
])
def test_impossible_output_names_are_one_line_errors(f8_path, tmp_path, capsys, name, message):
    assert main(["html", str(f8_path), "-o", str(tmp_path / name)]) == 2
    one_line_error(capsys, message)
    assert list(tmp_path.iterdir()) == []


# standard output ----------------------------------------------------------------------------

@pytest.mark.parametrize("verb", ["summary", "diff"])
def test_a_reader_that_leaves_keeps_the_exit_code(f8_path, f16_path, verb):
    args = [str(f8_path)] if verb == "summary" else [str(f8_path), str(f16_path)]
    proc = subprocess.Popen([*TILEPLAN, verb, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()  # the verdict, then the reader leaves
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""


def test_a_closed_or_full_stdout_is_one_line(f8_path):
    closed = subprocess.run(["sh", "-c", " ".join([*TILEPLAN, "summary", str(f8_path)]) + " >&-"],
                            capture_output=True, text=True, timeout=60)
    assert closed.returncode == 2 and closed.stderr == (
        "tileplan: error: standard output is closed; redirect it to a file or to /dev/null\n")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*TILEPLAN, "summary", str(f8_path)], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "tileplan: error: cannot write to standard output: No space left on device\n"


def test_a_name_that_is_not_text_prints_escaped(f8_path, tmp_path):
    name = os.fsencode(tmp_path) + b"/\xff.html"  # a file name in no encoding
    proc = subprocess.run([*(os.fsencode(a) for a in TILEPLAN), b"html", os.fsencode(f8_path), b"-o", name],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"\\udcff.html" in proc.stdout and proc.stderr == b""
    assert Path(os.fsdecode(name)).read_text().startswith("<!DOCTYPE html>")
