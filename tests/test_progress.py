import io

from tileplan.cli.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_shows_on_a_terminal_after_the_delay_and_clears():
    stream = Tty()
    p = Progress(delay=0, stream=stream)
    p.update("planning 1/2")
    p.update("planning 2/2")
    p.done()
    text = stream.getvalue()
    assert "planning 1/2" in text and "planning 2/2" in text and text.endswith("\r\033[K")


def test_progress_is_silent_off_a_terminal_and_before_the_delay():
    pipe = io.StringIO()
    p = Progress(delay=0, stream=pipe)
    p.update("planning")
    p.done()
    assert pipe.getvalue() == ""
    slow = Tty()
    q = Progress(delay=60, stream=slow)
    q.update("planning")
    q.done()
    assert slow.getvalue() == ""
