"""A program split into pipeline stages, one per IPU (inference).

The layers of a program are the iterations of its repeat block; `split_program` gives
stage k the layers [a_k, a_k + counts[k]), stage 0 also what runs before the block
(embeddings), the last stage what runs after it (the final norm, the head), as
optimum-graphcore's `layers_per_ipu` places a model; a head tied to the embedding
(GPT-2's LM head) runs on IPU 0 beside it, after the last stage's final norm. A
tensor one stage makes and another reads crosses the boundary: the maker keeps it to
its end (the send buffer, a program output of that stage) and the reader declares it
as an input (the receive buffer, resident from its first step). A parameter stays with the stage that
reads it; one read by two stages (tied weights) is held by both.
"""

from __future__ import annotations

from dataclasses import replace

from tileplan.errors import ModelError
from tileplan.model.info import PipelineStage
from tileplan.model.ir import Operation, Program, RepeatBlock, Tensor
from tileplan.model.role import Role


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
    n = len(counts)
    pre, post = program.items[:at], program.items[at + 1:]
    tied = _tied_head(program, pre, post) if n > 1 else len(post)
    post, head = post[:tied], post[tied:]
    firsts = [sum(counts[:k]) for k in range(n)]
    stage_items: list[list[Operation | RepeatBlock]] = []
    for k, c in enumerate(counts):
        items: list[Operation | RepeatBlock] = list(pre) if k == 0 else []
        if c:
            part = replace(block, count=c, first=block.first + firsts[k],
                           body=tuple(_shifted(op, firsts[k]) for op in block.body))
            if firsts[k] and block.carried_in is not None and block.carried_out is not None:
                part = _receiving(part, block.carried_in, block.first + firsts[k] - 1)
            items.append(part)
        if k == n - 1:
            items.extend(post)
        if k == 0:
            items.extend(head)
        if not items:
            raise ModelError(f"IPU {k} would run nothing: a stage between two others needs at least one layer")
        stage_items.append(items)

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


def _tied_head(program: Program, pre: tuple, post: tuple) -> int:
    """Where a head tied to the embedding starts among the operations after the layers
    (the first that reads a parameter the operations before the layers read: GPT-2's
    LM head, BERT's masked-LM decoder), else their count. That head runs on IPU 0, beside
    the embedding it shares, as optimum-graphcore's pipelined models place it (`LM head`
    on `ipu_id=0`: optimum/graphcore/models/gpt2/modeling_gpt2.py) and Graphcore's
    examples do (nlp/gpt2/pytorch/inference_gpt2.py: "LM_head --> IPU 0")."""
    parameters = {t.name for t in program.tensors if t.role.held}
    before = _reads(list(pre)) & parameters
    return next((index for index, item in enumerate(post) if _reads([item]) & before), len(post))


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
