"""The documented rules `check` re-derives a Tenstorrent report with, in check's own
small implementation (docs/report-format.md, "Tenstorrent reports"; nothing of the
planner or the target is imported):

- per-bank bytes: `ceil(pages / banks) x page_bytes` (pages already aligned);
- what a buffer takes of its bank manager's free list: the per-bank bytes rounded up to
  the DRAM alignment (at least one alignment unit);
- first fit over one address range: the highest free block that fits, taking its top
  (L1, L1_SMALL), or the lowest, taking its bottom (DRAM, TRACE; a dynamic trace buffer
  in DRAM is placed top-down); a freed block merges with free neighbours;
- circular buffers: each program's, in creation order, from l1_unreserved_base (aligned)
  upward per core range, a CB at the highest region end over its own ranges aligned up
  to the DRAM alignment, marking every range that intersects one of its ranges unless
  that range's region already ends above the address; bound CBs take no space;
- tt-metal's messages, formatted from their figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def per_bank(bytes_: int, page_bytes: int, banks: int) -> int:
    """ceil(pages / banks) aligned pages (page_bytes is the aligned page)."""
    pages = bytes_ // page_bytes
    return -(-pages // banks) * page_bytes


class FirstFit:
    """One bank manager's address range [base, base + size), blocks kept as sorted
    (start, size, taken) lists."""

    def __init__(self, base: int, size: int, alignment: int) -> None:
        self.base, self.size, self.alignment = base, size, alignment
        self.blocks: list[list[int]] = [[base, size, 0]]

    def need(self, size: int) -> int:
        return round_up(max(size, self.alignment), self.alignment)

    def place(self, size: int, top_down: bool) -> int | None:
        need = self.need(size)
        order = range(len(self.blocks) - 1, -1, -1) if top_down else range(len(self.blocks))
        for i in order:
            start, length, taken = self.blocks[i]
            if not taken and length >= need:
                at = start + length - need if top_down else start
                pieces = [[start, at - start, 0], [at, need, 1], [at + need, start + length - at - need, 0]]
                self.blocks[i:i + 1] = [p for p in pieces if p[1] > 0]
                return at
        return None

    def free(self, address: int) -> bool:
        for i, (start, _, taken) in enumerate(self.blocks):
            if start == address and taken:
                self.blocks[i][2] = 0
                if i + 1 < len(self.blocks) and not self.blocks[i + 1][2]:
                    self.blocks[i][1] += self.blocks.pop(i + 1)[1]
                if i > 0 and not self.blocks[i - 1][2]:
                    self.blocks[i - 1][1] += self.blocks.pop(i)[1]
                return True
        return False

    def statistics(self) -> tuple[int, int, int]:
        """(allocated, free, largest free block); with nothing allocated the largest
        free block is the whole range."""
        allocated = sum(b[1] for b in self.blocks if b[2])
        largest = max((b[1] for b in self.blocks if not b[2]), default=0)
        return allocated, self.size - allocated, largest


@dataclass(frozen=True, slots=True)
class Cb:
    """A circular buffer as the report lists it."""

    total: int
    ranges: tuple[tuple[int, int, int, int], ...]
    bound: bool


def _intersects(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def cb_regions(cbs: Sequence[Cb], base: int, alignment: int
               ) -> tuple[list[int | None], list[tuple[tuple[int, int, int, int], int | None]]]:
    """Each CB's address (None when bound) and each core range's region end (None when
    no static CB), ranges in order of first appearance."""
    order: list[tuple[int, int, int, int]] = []
    for cb in cbs:
        for r in cb.ranges:
            if r not in order:
                order.append(r)
    ends: dict[tuple[int, int, int, int], list[list[int]]] = {r: [] for r in order}

    def end(r: tuple[int, int, int, int]) -> int:
        return ends[r][-1][1] if ends[r] else 0

    addresses: list[int | None] = []
    for cb in cbs:
        if cb.bound:
            addresses.append(None)
            continue
        address = round_up(max([base, *(end(r) for r in cb.ranges)]), alignment)
        for r in cb.ranges:
            for other in order:
                if not _intersects(other, r) or (other != r and address < end(other)):
                    continue
                regions = ends[other]
                if not regions:
                    regions.append([base, base])
                if address == regions[-1][1]:
                    regions[-1][1] += cb.total
                else:
                    regions.append([address, address + cb.total])
        addresses.append(address)
    return addresses, [(r, end(r) if ends[r] else None) for r in order]


def core_range_text(r: tuple[int, int, int, int], form: str) -> str:
    if form == "dash":
        return f"[{r[0]}-{r[1]} - {r[2]}-{r[3]}]"
    return f"[(x={r[0]},y={r[1]}) - (x={r[2]},y={r[3]})]"


def oom_message(form: str, size: int, buffer_type: str, banks: int, bytes_per_bank: int, bank_size: int,
                allocated: int, free: int, largest: int) -> str:
    head = (f"Out of Memory: Not enough space to allocate {size} B {buffer_type} buffer across {banks} banks, "
            f"where each bank needs to store {bytes_per_bank} B")
    if form == "oldest":
        return head
    if form == "only":
        return f"{head}, but bank size is only {bank_size} B"
    return (f"{head}, but bank size is {bank_size} B (allocated: {allocated} B, free: {free} B, largest free "
            f"block: {largest} B)")


def grow_message(where: str, end: int, l1_size: int) -> str:
    return (f"Statically allocated circular buffers on core range {where} grow to {end} B which is beyond max L1 "
            f"size of {l1_size} B")


def clash_message(program: int, where: str, lowest: int, end: int) -> str:
    return (f"Statically allocated circular buffers in program {program} clash with L1 buffers on core range "
            f"{where}. L1 buffer allocated at {lowest} and static circular buffer region ends at {end}")


def shards_message(shards: int, banks: int) -> str:
    return (f"Expected number of shards {shards} to be less than or equal to total number of L1 banks {banks} in "
            "compute cores")


def trace_message(size: int, word: str, device: int, region: int) -> str:
    return (f"Creating trace buffers of size {size}B on {word} {device}, but only {region}B is allocated for trace "
            "region.")
