"""`tileplan VERB ...`: the only place that turns errors into messages and exit codes.

Exit codes: 0 success; 1 a report is inconsistent (`check`); 2 bad input (one line on
stderr, no traceback); 3 the program does not fit (`plan --fail-over-budget`,
`check --budget`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from tileplan import __version__
from tileplan.cli import check, diff, html, plan, plot, summary
from tileplan.errors import TileplanError

COMMANDS = {"plan": plan, "check": check, "summary": summary, "html": html, "plot": plot, "diff": diff}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for any bad input
        raise TileplanError(f"{self.prog}: {message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tileplan", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"tileplan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, module in COMMANDS.items():
        doc = (module.__doc__ or "").strip()
        p = sub.add_parser(name, help=doc.splitlines()[0], description=doc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    try:
        args = build_parser().parse_args(argv)
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except TileplanError as e:
        print(f"tileplan: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("tileplan: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`| head`): keep the verdict the verb had reached
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return int(getattr(args, "decided", 0))


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
