"""`Rows`: a sequence whose items are built on demand from columns.

The timeline's steps, the exact accounting's per-step worst tiles and the views' step
and value rows keep their data as columns and make one object per row only when it
is asked for. This base class holds what every such sequence does alike: indexing
from the end, slices, and `IndexError` past either end; a subclass says how many rows
it has and how to build row i.
"""

from __future__ import annotations

from typing import Sequence, TypeVar, overload

T = TypeVar("T")


class Rows(Sequence[T]):
    __slots__ = ()
    #: what a row is, for the `IndexError` message
    row_name = "row"

    def __len__(self) -> int:
        raise NotImplementedError

    def row(self, i: int) -> T:
        """Row i, 0 <= i < len(self)."""
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        n = len(self)
        if isinstance(i, slice):
            return [self.row(k) for k in range(*i.indices(n))]
        if not -n <= i < n:
            raise IndexError(f"{self.row_name} {i} of {n}")
        return self.row(i % n)
