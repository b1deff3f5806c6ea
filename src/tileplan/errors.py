"""The one error hierarchy for user-facing failures.

Every error carries a one-line message that names the place (a value, a field, a
file), the rule and the numbers. The CLI maps these classes to exit codes in one
place (`tileplan.cli.main`); nothing else prints or exits.
"""

from __future__ import annotations


class TileplanError(Exception):
    """A failure the user can act on. `place` says where, `str()` is one line."""

    exit_code = 2

    def __init__(self, message: str, place: str | None = None) -> None:
        self.place = place
        self.detail = message
        super().__init__(f"{place}: {message}" if place else message)

    def at(self, place: str, sep: str = ".") -> "TileplanError":
        """The same error, located under an outer place (`outer.inner`)."""
        inner = f"{place}{sep}{self.place}" if self.place else place
        err = type(self).__new__(type(self))
        TileplanError.__init__(err, self.detail, inner)
        return err


class InputError(TileplanError):
    """Input that cannot be read: malformed JSON or TOML, unknown names, bad options."""


class TextSyntaxError(InputError):
    """A layout, precision or operation text that does not parse."""


class LayoutError(InputError):
    """A layout whose own fields break an invariant (zero partitions, tile product...)."""


class TilingError(TileplanError):
    """A layout that cannot represent a given tensor (an unrepresentable shard)."""


class ModelError(InputError):
    """A model that is not well formed: impossible shapes, unknown operations."""


#: the interface errors speak: "python" (keywords, `sequence_length=`: the API, any
#: caller) or "cli" (flags, `--sequence-length`: `tileplan.cli.main` sets it while a
#: command runs)
INTERFACE = "python"


def option(key: str, value: str | None = None) -> str:
    """A knob as the interface the user came through spells it: `--sequence-length` on
    the command line, `sequence_length=` in Python; with `value`, `--batch 4` or
    `batch=4`."""
    if INTERFACE == "cli":
        flag = f"--{key.replace('_', '-')}"
        return flag if value is None else f"{flag} {value}"
    return f"{key}=" if value is None else f"{key}={value}"
