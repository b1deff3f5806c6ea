"""A model split into pipeline stages, one per IPU: the one splitter, for inference
and training alike.

A split gives IPU k the layers [a_k, a_k + counts[k]) (optimum-graphcore's
`layers_per_ipu`). Each operation is in a section (`sections`, from `Operation.layer`):
a layer's, the operations before the first layer (`PRE`: the embeddings), those after
the last (`POST`: the final norm, the head, the loss); an operation between two layers
goes with the next one (T5's encoder's final norm and its decoder's embedding, before
the decoder's first block). `Placement` puts a layer on its IPU, `PRE` on IPU 0 and
`POST` on the last IPU, but a head tied to the embedding on IPU 0 (`head_start`, the
one tied-head rule), as optimum-graphcore's pipelined models place it.

Inference (`split_program`): the layers are the iterations of the program's repeat
block; stage k runs its layers, stage 0 also what runs before the block, the last
stage what runs after it, and a tied head (GPT-2's LM head) runs on IPU 0 beside the
embedding, after the last stage's final norm. A tensor one stage makes and another
reads crosses the boundary: the maker keeps it to its end (the send buffer, a program
output of that stage) and the reader declares it as an input (the receive buffer,
resident from its first step). A parameter stays with the stage that reads it; one
read by two stages (tied weights) is held by both. Training
(`tileplan.importers.training_stages`) places its flat joint program's forward
operations by the same sections, placement and tied head.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import AbstractSet, Sequence

from tileplan.errors import ModelError
from tileplan.model.info import PipelineStage
from tileplan.model.ir import Operation, Program, RepeatBlock, Tensor
from tileplan.model.role import Role

#: the sections of the operations before the first layer and after the last
PRE, POST = -1, 1 << 30


def sections(layers: Sequence[int | None]) -> list[int]:
    """The section of each of a program's operations in execution order, from their
    layers (`Operation.layer`): a layer's operation is in that layer; one with none is
    in `PRE` before the first layer's operations, in `POST` after the last's, and
    between two layers' operations in the next layer."""
    placed = [k for k, layer in enumerate(layers) if layer is not None]
    out = [POST] * len(layers)
    following = POST
    for k in range(len(layers) - 1, -1, -1):
        layer = layers[k]
        if layer is not None:
            out[k] = following = layer
        elif not placed or k < placed[0]:
            out[k] = PRE
        elif k < placed[-1]:
            out[k] = following
    return out


def head_start(before: Sequence[Operation], last_layer: Sequence[Operation], after: Sequence[Operation],
               weights: AbstractSet[str]) -> int | None:
    """Where a head tied to the embedding starts among the operations after the layers
    (`after`), or None when nothing is tied: no weight (of `weights`) the operations
    before the layers read is read after them (GPT-2's LM head, BERT's masked-LM decoder
    read the token embedding's).

    The head runs on IPU 0 from its first operation on: the first after the layers in
    a module outside the one that holds the layer list (GPT-2's `transformer` beside
    `transformer.h`, BERT's `bert.encoder`), and no later than the first reading the
    tied weight. optimum-graphcore and Graphcore's examples give the head modules a
    block of their own on IPU 0 (GPT-2's `lm_head`, "LM head",
    optimum/graphcore/models/gpt2/modeling_gpt2.py; BERT's `cls`,
    optimum/graphcore/models/bert/modeling_bert.py `PipelinedBertForMaskedLM`; BERT's
    pre-training `pooler` and `cls`, "Pooler --> IPU 0", "Classifier --> IPU 0",
    graphcore/examples nlp/bert/pytorch/modeling.py) and none to what the layers'
    module runs after them (GPT-2's final norm `transformer.ln_f`), which then runs
    where the last layer does; an operation of a module enclosing the layers (the
    model's own forward) starts no head. Where the modules are unknown, the head starts
    at the first operation reading the tied weight."""
    read_before = {name for op in before for name in op.inputs} & weights
    tied = [k for k, op in enumerate(after) if read_before.intersection(op.inputs)]
    if not tied:
        return None
    stack = _stack(last_layer)
    if stack is not None:
        for k, op in enumerate(after[:tied[0]]):
            if op.module is not None and not _within(op.module, stack) and not _within(stack, op.module):
                return k
    return tied[0]


def _within(module: str, outer: str) -> bool:
    """Whether `module` is `outer` or inside it (everything is inside the model, "")."""
    return outer == "" or module == outer or module.startswith(outer + ".")


def _stack(layer: Sequence[Operation]) -> str | None:
    """The module holding the layer list a layer's operations belong to: the parent of
    the module holding the layer's module, which is its operations' modules' common part
    (`transformer.h.11` -> `transformer`; "" when that is the model); None when their
    modules are unknown."""
    paths = [op.module.split(".") for op in layer if op.module]
    if not paths:
        return None
    common: list[str] = []
    for parts in zip(*paths):
        if len(set(parts)) > 1:
            break
        common.append(parts[0])
    return ".".join(common[:-2])


@dataclass(frozen=True, slots=True)
class Placement:
    """The IPU each section runs on when the layers are split `counts` (see the module
    docstring): layer i on the IPU whose range holds it, `PRE` on IPU 0, `POST` on the
    last IPU or, a tied head's operations, on IPU 0."""

    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.counts or any(c < 0 for c in self.counts):
            raise ModelError(f"layers per IPU {list(self.counts)} must be non-negative, on at least one IPU")

    @property
    def ipus(self) -> int:
        return len(self.counts)

    def first(self, ipu: int) -> int:
        """The first layer of IPU `ipu`."""
        return sum(self.counts[:ipu])

    def ipu(self, section: int, head: bool = False) -> int:
        """The IPU of an operation in `section`; `head`: it is a tied head's."""
        if section == PRE or (section == POST and head):
            return 0
        if section == POST:
            return self.ipus - 1
        end = 0
        for ipu, count in enumerate(self.counts):
            end += count
            if section < end:
                return ipu
        raise ModelError(f"layer {section} is past the {sum(self.counts)} layers per IPU {list(self.counts)} place")


def block_of(program: Program) -> tuple[int, RepeatBlock]:
    """The program's one repeat block and its position among the items."""
    blocks = [(i, item) for i, item in enumerate(program.items) if isinstance(item, RepeatBlock)]
    if len(blocks) != 1:
        raise ModelError(f"splitting over IPUs needs the model's layers as one repeat block; {program.name} has "
                         f"{len(blocks)} (an unrolled program, or layers tileplan did not recognise as repeated)")
    return blocks[0]


def layer_count(program: Program) -> int:
    return block_of(program)[1].count


def split_program(program: Program, counts: tuple[int, ...]) -> tuple[Program, ...]:
    """One program per stage (see the module docstring). `counts` are the layers per
    stage, summing to the block's count; a stage with no layers must still run
    something (the first or the last)."""
    at, block = block_of(program)
    if sum(counts) != block.count or any(c < 0 for c in counts) or not counts:
        raise ModelError(f"layers per IPU {list(counts)} must be non-negative and sum to the {block.count} layers")
    placement = Placement(counts)
    n = len(counts)
    pre = [item for item in program.items[:at] if isinstance(item, Operation)]  # the one block is at `at`
    post = [item for item in program.items[at + 1:] if isinstance(item, Operation)]
    weights = {t.name for t in program.tensors if t.role is Role.WEIGHT}
    tied = head_start(pre, block.body, post, weights) if n > 1 else None
    head = len(post) if tied is None else tied
    firsts = [placement.first(k) for k in range(n)]
    stage_items: list[list[Operation | RepeatBlock]] = [[] for _ in range(n)]
    stage_items[placement.ipu(PRE)].extend(pre)
    for k, c in enumerate(counts):
        if c:
            part = replace(block, count=c, first=block.first + firsts[k],
                           body=tuple(_shifted(op, firsts[k]) for op in block.body))
            if firsts[k] and block.carried_in is not None and block.carried_out is not None:
                part = _receiving(part, block.carried_in, block.first + firsts[k] - 1)
            stage_items[k].append(part)
    stage_items[placement.ipu(POST)].extend(post[:head])
    stage_items[placement.ipu(POST, head=True)].extend(post[head:])
    for k, items in enumerate(stage_items):
        if not items:
            raise ModelError(f"IPU {k} would run nothing: a stage between two others needs at least one layer")
    declared = {t.name: t for t in program.tensors}
    shapes = _shapes(program)
    if block.carried_in is not None and block.carried_out is not None:
        for k in range(1, n):
            shapes[received_name(block.carried_out, block.first + firsts[k] - 1)] = shapes[block.carried_in]
    made = [_made(items) for items in stage_items]
    reads = [_reads(items) for items in stage_items]
    programs = []
    for k, items in enumerate(stage_items):
        # what the other stages receive: the later ones, and IPU 0 a tied head's input
        later = set().union(*(reads[j] - made[j] for j in range(n) if j != k))
        outputs = [name for name in program.outputs if name in made[k]]
        block_later = any(counts[k + 1:]) and counts[k] > 0
        if block_later and block.carried_out is not None:
            outputs.append(block.carried_out)
        outputs += sorted(name for name in made[k] & later if name not in outputs)
        tensors = []
        for t in program.tensors:
            if t.name in reads[k] and t.role.held:
                tensors.append(t)
        received = sorted(name for name in reads[k] - made[k] if name not in declared or
                          declared[name].role is Role.INPUT)
        inputs = [Tensor(0, name, shapes[name][0], shapes[name][1], Role.INPUT) for name in received]
        renumbered = [replace(t, origin=i) for i, t in enumerate([*inputs, *tensors])]
        ops = _renumber(items, len(renumbered))
        info = replace(program.info, pipeline=PipelineStage.of(k, tuple(counts)))
        programs.append(Program(program.name, tuple(renumbered), tuple(ops), tuple(dict.fromkeys(outputs)), info))
    return tuple(programs)


def _shifted(op: Operation, layers: int) -> Operation:
    """A block's body operation when the block starts `layers` iterations later (its
    `layer` is the first iteration's)."""
    return op if op.layer is None or not layers else replace(op, layer=op.layer + layers)


def received_name(carried_out: str, layer: int) -> str:
    """The name of a stage's received residual stream: the layer before's output."""
    return f"{carried_out.replace('{i}', str(layer))} [received]"


def _receiving(block: RepeatBlock, carried_in: str, layer: int) -> RepeatBlock:
    """The block reading, in place of the tensor made before the first layer, the
    output of layer `layer` received from the IPU before."""
    name = received_name(block.carried_out or "", layer)
    body = tuple(replace(op, inputs=tuple(name if i == carried_in else i for i in op.inputs)) for op in block.body)
    return replace(block, body=body, carried_in=name)


def _shapes(program: Program) -> dict[str, tuple]:
    out = {t.name: (t.shape, t.precision) for t in program.tensors}
    for item in program.items:
        for op in item.body if isinstance(item, RepeatBlock) else (item,):
            out[op.output] = (op.output_shape, op.output_precision)
    return out


def _made(items: list[Operation | RepeatBlock]) -> set[str]:
    return {op.output for item in items for op in (item.body if isinstance(item, RepeatBlock) else (item,))}


def _reads(items: list[Operation | RepeatBlock]) -> set[str]:
    out: set[str] = set()
    for item in items:
        if isinstance(item, RepeatBlock):
            families = set(item.families)
            for op in item.body:
                for name in op.inputs:
                    out.update(item.members(name) if name in families else (name,))
        else:
            out.update(item.inputs)
    return out


def _renumber(items: list[Operation | RepeatBlock], origin: int) -> list[Operation | RepeatBlock]:
    index = 0
    out: list[Operation | RepeatBlock] = []

    def number(op: Operation) -> Operation:
        nonlocal origin, index
        op = replace(op, origin=origin, index=index)
        origin, index = origin + 1, index + 1
        return op

    for item in items:
        if isinstance(item, RepeatBlock):
            out.append(replace(item, body=tuple(number(op) for op in item.body)))
        else:
            out.append(number(item))
    return out
