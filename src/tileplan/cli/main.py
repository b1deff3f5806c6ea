"""`tileplan VERB ...`: maps the project's errors to one line on stderr and an exit code.

Exit codes: 0 success; 1 a report is inconsistent (`check`); 2 bad input (one line on
stderr, no traceback); 3 the program does not fit (`plan --fail-over-budget`,
`check --budget`). A reader that leaves early (`| head`) does not change the exit
code the verb had decided; standard output that cannot be written (closed, a full
disk) is exit 2 with one line.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import NoReturn, Sequence

import importlib
from types import ModuleType

from tileplan.version import __version__
from tileplan import errors
from tileplan.errors import TileplanError
from tileplan.ioutil import escape_controls

#: each verb's module, imported when the verb is run (or help lists it): `plan` need
#: not load `check`, `html` or the placement engine
VERBS = ("plan", "check", "summary", "html", "plot", "diff", "place")


def verb_module(verb: str) -> ModuleType:
    return importlib.import_module(f"tileplan.cli.{verb}")


class _Commands(dict):
    """verb -> module, each imported on first look-up."""

    def __missing__(self, verb: str) -> ModuleType:
        if verb not in VERBS:
            raise KeyError(verb)
        module = self[verb] = verb_module(verb)
        return module

    def items(self):
        return ((verb, self[verb]) for verb in VERBS)


COMMANDS = _Commands()

DESCRIPTION = ("tileplan: will a model fit in the per-tile SRAM of a Graphcore IPU? It plans the model's tensors "
               "onto the tiles before any compile and writes a JSON report that says where memory peaks, why, and "
               "what would make it fit; the other verbs check, summarize, draw and compare reports.")
EPILOG = ("Exit codes: 0 success, 1 inconsistent report (check), 2 bad input (one line on stderr), 3 does not fit "
          "(plan --fail-over-budget, check --budget). `tileplan VERB --help` for a verb's options.")

#: errors of writing standard output that a verb cannot act on
_OUTPUT_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EBADF, errno.EDQUOT, errno.EFBIG)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, as for any bad input
        if len(message) > 300:  # argparse quotes the argument whole: a 5000-digit --top, say
            message = message[:240] + f"... ({len(message)} characters)"
        raise TileplanError(f"{self.prog}: {' '.join(message.split())} (see --help)")


def purpose(doc: str | None) -> str:
    """A verb's one-line purpose: the first sentence of its docstring's first
    paragraph, however the source folds it."""
    para = " ".join((doc or "").strip().split("\n\n")[0].split())
    end = para.find(". ")
    return para if end < 0 else para[: end + 1]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every verb, or with `only` (a verb named on the command line) of
    that verb alone beside the others' names: a verb's module is imported only when
    its options are needed."""
    parser = _Parser(prog="tileplan", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"tileplan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="VERB")
    for name in VERBS:
        if only is not None and name != only:
            sub.add_parser(name)
            continue
        module = COMMANDS[name]
        doc = (module.__doc__ or "").strip()
        p = sub.add_parser(name, help=purpose(doc), description=doc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def _verb(argv: Sequence[str]) -> str | None:
    """The verb a command line names (its first word), when it is one."""
    first = argv[0] if argv else None
    return first if first in VERBS else None


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush finds
    nothing to complain about."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    if sys.stdout is not None:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives until exit)
        except OSError:
            pass


def _text_streams() -> None:
    """Names that are not text (lone surrogates) print escaped, never as a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _error(message: str) -> None:
    if sys.stderr is not None:
        try:
            print(f"tileplan: error: {escape_controls(message)}", file=sys.stderr)
        except OSError:
            pass


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    _text_streams()
    spoken, errors.INTERFACE = errors.INTERFACE, "cli"  # errors name the command line's flags
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        args = build_parser(_verb(words)).parse_args(words)
        if sys.stdout is None:
            raise TileplanError("standard output is closed; redirect it to a file or to /dev/null")
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at interpreter exit
        return code
    except TileplanError as e:
        _error(str(e))
        return e.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:  # the reader left (`| head`): keep the verdict the verb had reached
        _silence_stdout()
        return int(getattr(args, "decided", 0))
    except OSError as e:
        if e.errno not in _OUTPUT_ERRNOS:
            raise
        _silence_stdout()
        _error(f"cannot write to standard output: {e.strerror}")
        return 2
    finally:
        errors.INTERFACE = spoken


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
