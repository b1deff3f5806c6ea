"""A Tenstorrent report's sections besides its tables (docs/report-format.md,
"Tenstorrent reports"): the device as the allocator saw it, the frontend and its
options, the verdict in tt-metal's words with the figures it prints, the memory at its
peaks, the what-if rows and what reproduces the plan. Each is a frozen `Section`: read
by `from_json`, written by `to_json`, its JSON Schema generated from the same
declarations (`tt_report.schema`).

Nothing here imports the target's code: the texts are the report's (`"L1"`, `"DRAM"`,
`"capacity"`, ...), so `check` and the views read a report without the planner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from tileplan.errors import InputError
from tileplan.report.fields import Context, Count, Fields, Positive, Section, Signed, brief, json_field

BufferTypeText = Literal["L1", "DRAM", "L1_SMALL", "TRACE"]
FailureText = Literal["capacity", "fragmentation", "cb_grow", "cb_clash", "trace", "shards"]
#: the buffer types, in the order reports list them
BUFFER_TYPES: tuple[BufferTypeText, ...] = ("L1", "L1_SMALL", "DRAM", "TRACE")
Scalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TtDevice(Section):
    """One chip as tt-metal's allocator sees it: the board and build, the device
    parameters as opened (`l1_small_size`, `trace_region_size`, the dispatch cores) and
    what the allocator makes of them (banks, their sizes and bases; the trace region as
    configured: `trace_region_size` aligned up to the DRAM alignment, times the DRAM banks
    on builds whose `trace_alignment` is dram_x_banks), with the forms of
    the build's messages (`oom_message`: oldest, only or stats; `core_range_text`: xy
    `[(x=0,y=0) - (x=7,y=7)]` or dash `[0-0 - 7-7]`)."""

    KEY: ClassVar[str] = "device"
    DESCRIPTION: ClassVar[str | None] = "the chip, its build and device parameters, and the allocator's banks"
    machine: str
    arch: str
    chips: Positive
    version: str
    stack: str
    dispatch_core_type: str
    l1_size: Count
    l1_alignment: Positive
    dram_alignment: Positive
    worker_grid: tuple[Positive, Positive]
    l1_unreserved_base: Count
    l1_base: Count
    l1_small_size: Count
    trace_region_size: Count
    trace_alignment: Literal["dram", "dram_x_banks"]
    trace_region_config: Count
    l1_banks: Positive
    l1_bank_size: Count
    l1_small_bank_size: Count
    dram_banks: Positive
    dram_unreserved_base: Count
    dram_bank_size: Count
    trace_bank_size: Count
    oom_message: Literal["oldest", "only", "stats"]
    core_range_text: Literal["xy", "dash"]
    trace_device_word: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TtFrontend(Section):
    """How the model reached TTNN: the frontend and every option it planned with, as
    `tileplan plan` takes them back (`--key value`)."""

    KEY: ClassVar[str] = "frontend"
    DESCRIPTION: ClassVar[str | None] = "the frontend and its options (key: value, as plan's flags take them)"
    name: str
    options: tuple[tuple[str, Scalar], ...] = ()

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        name = f.sub("name").string()
        entries = []
        if f.has("options"):
            opts = f.sub("options").mapping()
            for key in opts.obj:
                x = opts.sub(key)
                if isinstance(x.obj, (dict, list)):
                    raise InputError(f"expected a string, a number, true/false or null, found {brief(x.obj)}",
                                     x.place)
                entries.append((key, x.obj))
        return cls(name=name, options=tuple(entries))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options)}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "object", "description": cls.DESCRIPTION, "required": ["name", "options"],
                "properties": {"name": {"type": "string"}, "options": {
                    "type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}},
                "additionalProperties": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedRequest(Section):
    """The buffer the allocator could not place: its type, `bytes` in pages of
    `page_bytes` (aligned), over `banks` banks (its shards when `sharded`), the bytes
    each bank needs and what that takes from the free list (`need`: aligned)."""

    name: str
    buffer_type: BufferTypeText
    bytes: Count
    page_bytes: Positive
    banks: Positive
    sharded: bool
    bytes_per_bank: Count
    need: Count


@dataclass(frozen=True, slots=True, kw_only=True)
class BankStatistics(Section):
    """A bank manager's statistics when the request failed (allocated + free = total)."""

    total: Count
    allocated: Count
    free: Count
    largest_free_block: Count

    def validate(self, place: str, bounds: Any) -> None:
        if self.allocated + self.free != self.total or self.largest_free_block > self.free:
            raise InputError(f"expected allocated + free = total and largest_free_block <= free, found "
                             f"{self.allocated} + {self.free} vs {self.total}, largest {self.largest_free_block}",
                             place)


@dataclass(frozen=True, slots=True, kw_only=True)
class CbFailure(Section):
    """A program's circular-buffer region that failed: its core range [x0, y0, x1, y1],
    where its region ends, the L1 size and the lowest L1 buffer then (null: none)."""

    core_range: tuple[Count, Count, Count, Count]
    region_end: Count
    l1_size: Count
    lowest_l1_address: Count | None = json_field(None, null=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceFailure(Section):
    """The trace region exceeded: the trace buffers' total, the device, the region."""

    trace_buffers_size: Count
    device_id: Count
    trace_region_size: Count


@dataclass(frozen=True, slots=True, kw_only=True)
class TtVerdict(Section):
    """Fits, or the run's first failure: tt-metal's message verbatim with tileplan's
    figures, its kind and the memory it concerns (L1 for circular buffers), the
    operation (-1: the uploads) and program where it happened, and the figures the
    message prints (`request` and `statistics` for an out-of-memory, `cb` for circular
    buffers, `shards`, `trace`); `responsible`: the live buffers of that memory (ids),
    largest first, the lowest first for a clash."""

    KEY: ClassVar[str] = "verdict"
    DESCRIPTION: ClassVar[str | None] = "fits, or the first failure in tt-metal's words with its figures"
    fits: bool
    message: str | None = json_field(None, null=True)
    kind: FailureText | None = json_field(None, null=True)
    buffer_type: BufferTypeText | None = json_field(None, null=True)
    operation: Signed | None = json_field(None, null=True)
    program: Count | None = json_field(None, null=True)
    responsible: tuple[Count, ...] = ()
    request: FailedRequest | None = json_field(None, omit=True)
    statistics: BankStatistics | None = json_field(None, omit=True)
    cb: CbFailure | None = json_field(None, omit=True)
    shards: tuple[Count, Count] | None = json_field(None, omit=True)
    trace: TraceFailure | None = json_field(None, omit=True)

    def validate(self, place: str, bounds: Any) -> None:
        if self.fits != (self.message is None) or self.fits != (self.kind is None):
            raise InputError("expected a message and a kind exactly when it does not fit", place)


@dataclass(frozen=True, slots=True, kw_only=True)
class Peak(Section):
    """A buffer type's peak: the most bytes per bank its live buffers reserved at once
    and the first event at which it held them (null: it never held any)."""

    buffer_type: BufferTypeText
    bytes_per_bank: Count
    event: Count | None = json_field(None, null=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class TtMemory(Section):
    """The memory at its peaks: each buffer type's, the largest circular-buffer region
    (its program) and L1 in use on a core (its program), and DRAM bank by bank at the
    DRAM peak (interleaved pages dealt round-robin from bank 0: bank 0 holds the most)."""

    KEY: ClassVar[str] = "memory"
    DESCRIPTION: ClassVar[str | None] = "each memory at its peak; DRAM bank by bank at its peak"
    peaks: tuple[Peak, ...]
    cb_region_end: Count
    cb_program: Count | None = json_field(None, null=True)
    l1_in_use: Count
    l1_in_use_program: Count | None = json_field(None, null=True)
    dram_data_per_bank: tuple[Count, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TtWhatIfRow(Section):
    """The request re-planned with one knob turned: the knob, its value in words, the
    command that re-derives it and what it came to (fits; or the kind and message), or
    why it could not be planned (`error`); for an output moved to DRAM that fits, what
    the stack is given to plan it so (`settings`: tt-mlir's override-output-layout)."""

    knob: str
    value: str
    command: str
    fits: bool | None = json_field(None, omit=True)
    kind: FailureText | None = json_field(None, omit=True)
    message: str | None = json_field(None, omit=True)
    error: str | None = json_field(None, omit=True)
    settings: tuple[str, ...] | None = json_field(None, omit=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class TtWhatIf(Section):
    """What would make it fit (or how far it could grow): each row a full re-plan; the
    command that planned this report; a note (the placement solver's, when first fit's
    order is what failed)."""

    KEY: ClassVar[str] = "what_if"
    DESCRIPTION: ClassVar[str | None] = "re-plans with one knob turned each, and their commands"
    command: str
    rows: tuple[TtWhatIfRow, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TtOutputLayout(Section):
    """One operation's output layout the reproducing override pins: the operation (its
    index in `operations` and its name), the buffer it writes (`buffers` id), where it
    lives, its grid in tt-mlir's terms (rows, columns: a block shard's bounding box, N x 1
    for N height shards, 1 x N for N width shards, the worker grid for L1 interleaved,
    1 x 1 for DRAM), its page layout and tt-mlir's name of its data type."""

    operation: Count
    name: str
    buffer: Count | None = json_field(None, null=True)
    buffer_type: Literal["L1", "DRAM"]
    memory_layout: Literal["interleaved", "height_sharded", "width_sharded", "block_sharded"]
    grid: tuple[Positive, Positive]
    layout: Literal["tile", "row_major"]
    dtype: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TtReproduce(Section):
    """For a plan that fits: the device parameters to open the device with, what to pass
    the stack to get this plan (`settings`: the dispatch cores, tt-xla's compile options,
    tt-mlir's `override-output-layout=...`, ...) and the output layouts that override
    names (`output_layouts`, in its order; empty when the stack takes none)."""

    KEY: ClassVar[str] = "reproduce"
    DESCRIPTION: ClassVar[str | None] = "the device parameters and stack settings that reproduce the plan"
    device_parameters: tuple[tuple[str, Count], ...]
    settings: tuple[str, ...] = ()
    output_layouts: tuple[TtOutputLayout, ...] = ()

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        params = f.sub("device_parameters").mapping()
        pairs = tuple((k, params.sub(k).integer()) for k in params.obj)
        settings = tuple(x.string() for x in f.sub("settings").items()) if f.has("settings") else ()
        layouts = tuple(TtOutputLayout.decode(x, ctx) for x in f.sub("output_layouts").items()) \
            if f.has("output_layouts") else ()
        return cls(device_parameters=pairs, settings=settings, output_layouts=layouts)

    def to_json(self) -> dict[str, Any]:
        return {"device_parameters": dict(self.device_parameters), "settings": list(self.settings),
                "output_layouts": [o.to_json() for o in self.output_layouts]}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "object", "description": cls.DESCRIPTION,
                "required": ["device_parameters", "settings", "output_layouts"],
                "properties": {"device_parameters": {"type": "object",
                                                     "additionalProperties": {"$ref": "#/$defs/bytes"}},
                               "settings": {"type": "array", "items": {"type": "string"}},
                               "output_layouts": {"type": "array", "items": TtOutputLayout.json_schema()}},
                "additionalProperties": False}
