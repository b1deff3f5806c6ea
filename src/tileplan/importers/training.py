"""Training programs: the joint graph with its training state, weight update,
recomputation and, over several IPUs, its pipeline stages and stashes.

`ipu_program(joint, setup, counts, ipu)` makes the program of one IPU from the joint
forward and backward program (`JointProgram`, flat: one operation per layer's
operation, as the joint graph has them) and a `TrainingSetup` (docs/notes/TRAINING-NOTES.md
section 7):

* Weights, buffers and every state tensor are declared, each with its role
  (`tileplan.model.role`: accumulators, optimizer state, stashes): always live.
  With gradient accumulation (`gradient_accumulation` > 1, which pipelining forces)
  each trained parameter has an accumulator `<param> [gradient accumulator]` in the
  accumulator precision, laid out as its gradient, and the gradient is added into it
  right after it is made (`accumulate`); the weight update runs at the end of the
  program. Without accumulation the update follows the gradient at once and the
  gradient is short-lived.
* Optimizer state on chip is declared per trained parameter (`<param> [optimizer
  first moment]`, `... second moment]`, `... velocity]`), laid out as the gradient,
  or, with replicated tensor sharding over R replicas, a flat shard of ceil(n / R)
  elements; off chip it is loaded by the update only (`optimizer_update`).
* The operations that make a parameter's gradient are named `<param> [gradient]`
  (the gradient itself) and `<param> [gradient] <kind>` (what only feeds it), and so
  are the accumulation and the reshape of a gradient: their role is `GRADIENT`; the
  weight update's (`<param> [optimizer update]`) is `UPDATE`. Names are for people:
  what a value is comes from its role, never from its name.
* Recomputation (`recompute` "pipeline" or "every-layer"): the forward operations
  before the head are run again in the backward pass, just before the first backward
  operation that needs them, from the stage's inputs and checkpoints (every-layer:
  each layer's output but the model's last layer's, as optimum-graphcore's
  `recompute_checkpoint_every_layer`); their forward values then die in the forward
  pass. Clones are named `<operation> [recomputed]`.
* Stages (`tileplan.importers.training_stages`): a stage's forward values its
  backward pass reads are stashed when the stage is not the last (`stash`, a
  `<value> [stash]` parameter of `depth` copies, `restore`); values crossing IPUs are
  sent and received (`send`, `receive`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from tileplan.errors import InputError
from tileplan.importers.joint_program import JointProgram
from tileplan.importers.training_stages import StagePlan
from tileplan.model.info import ProgramInfo
from tileplan.model.ir import Operation, Program, Tensor
from tileplan.model.precision import F32, Precision
from tileplan.model.role import Role
from tileplan.model.training import TrainingSetup
from tileplan.ops import infer_shape
from tileplan.ops.training import UPDATER_TERM


# The program of one IPU -------------------------------------------------------------------

@dataclass
class _Emitter:
    """The operations and declared tensors of one IPU's program as they are made."""

    shapes: dict[str, tuple[tuple[int, ...], Precision]]
    items: list[Operation] = field(default_factory=list)
    extra: list[Tensor] = field(default_factory=list)
    names: set[str] = field(default_factory=set)

    def add(self, op: Operation) -> str:
        self.items.append(op)
        self.shapes[op.output] = (op.output_shape, op.output_precision)
        self.names.add(op.output)
        return op.output

    def new(self, kind: str, name: str, inputs: Sequence[str], precision: Precision | None = None,
            attrs: Mapping[str, Any] | None = None, *, layer: int | None = None,
            role: Role = Role.ACTIVATION) -> str:
        items = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in (attrs or {}).items()))
        output = self.fresh(name)
        probe = Operation(0, 0, kind, output, tuple(inputs), output, (1,), F32, items, None, layer, role)
        shape = infer_shape(probe, [self.shapes[i][0] for i in inputs])
        if precision is None:
            precision = self.shapes[inputs[0]][1]
        return self.add(replace(probe, output_shape=shape, output_precision=precision))

    def declare(self, name: str, shape: tuple[int, ...], precision: Precision, role: Role) -> str:
        self.extra.append(Tensor(0, name, shape, precision, role))
        self.shapes[name] = (shape, precision)
        self.names.add(name)
        return name

    def fresh(self, name: str) -> str:
        out, n = name, 1
        while out in self.names or out in self.shapes:
            n += 1
            out = f"{name}:{n}"
        return out


def gradient_names(ops: Sequence[Operation], gradients: Sequence[tuple[str, str]],
                   backward: frozenset[str]) -> dict[str, str]:
    """New names of the operations that make each parameter's gradient: the gradient
    `<param> [gradient]`, every backward operation whose result feeds only it
    `<param> [gradient] <kind>`."""
    readers: dict[str, list[str]] = {}
    for o in ops:
        for i in o.inputs:
            readers.setdefault(i, []).append(o.output)
    owner = {g: p for p, g in gradients}
    out: dict[str, str] = {}
    for o in reversed(ops):
        if o.output in owner:
            out[o.output] = f"{owner[o.output]} [gradient]"
            continue
        users = readers.get(o.output, [])
        if o.output in backward and users and all(u in out for u in users):
            params = {owner[u] for u in users}
            if len(params) == 1:
                owner[o.output] = param = params.pop()
                out[o.output] = f"{param} [gradient] {o.kind}"
    taken: set[str] = set()
    for key in list(out):  # distinct names
        name, n = out[key], 1
        while name in taken:
            n += 1
            name = f"{out[key]}:{n}"
        taken.add(name)
        out[key] = name
    return out



def build_ipu_program(joint: JointProgram, setup: TrainingSetup, plan: StagePlan, ipu: int) -> Program:
    """The program IPU `ipu` runs for one micro-batch (see the module docstring): its
    forward operations, received and sent tensors and stashes, its backward operations
    with recomputation and restores, the gradient accumulation and weight update of
    the parameters whose gradients it makes."""
    program = joint.program
    ops = program.operations()
    declared = {t.name: t for t in program.tensors}
    producer = {o.output: o for o in ops}
    where = {o.output: plan.ipu_of(o) for o in ops}
    here = [o for o in ops if where[o.output] == ipu]
    if not here:
        raise InputError(f"IPU {ipu} would run nothing: --layers-per-ipu {list(plan.counts)} gives it no layer, and "
                         "neither the embeddings nor the head")
    backward = joint.backward
    grads = {g: p for p, g in joint.gradients if g in where and where[g] == ipu}
    renamed = gradient_names(ops, joint.gradients, backward)
    readers_elsewhere: dict[str, set[int]] = {}
    for o in ops:
        for i in o.inputs:
            if i in where and where[i] != where[o.output]:
                readers_elsewhere.setdefault(i, set()).add(where[o.output])
    recomputed = plan.recomputed(ipu)
    stashed = plan.stashed(ipu)
    e = _Emitter({t.name: (t.shape, t.precision) for t in program.tensors} |
                 {o.output: (o.output_shape, o.output_precision) for o in ops})
    e.names.update(e.shapes)
    received: dict[str, str] = {}
    restored: dict[str, str] = {}
    clones: dict[str, str] = {}
    stash_of: dict[str, str] = {}

    def layer_of(x: str) -> int | None:
        return producer[x].layer if x in producer else None

    def receive(x: str) -> str:
        if x not in received:
            shape, precision = e.shapes[x]
            received[x] = e.new("receive", f"{x} [received]", (), precision, {"shape": shape}, layer=layer_of(x))
            if x in stashed:
                stash(x, received[x])
        return received[x]

    def stash(x: str, value: str) -> None:
        shape, precision = e.shapes[value]
        depth = plan.depth_of(x, ipu)
        s = e.declare(e.fresh(f"{x} [stash]"), (depth, *shape), precision, Role.STASH)
        stash_of[x] = s
        e.new("stash", f"{x} [stashed]", (value, s), precision, layer=layer_of(x))

    def forward_input(x: str) -> str:
        if x in where and where[x] != ipu:
            return receive(x)
        return x

    def backward_input(x: str) -> str:
        """What a backward operation (or a clone) on this IPU reads for `x`."""
        if x in recomputed:
            return clone(x)
        if x in stash_of:
            if x not in restored:
                restored[x] = e.new("restore", f"{x} [restored]", (stash_of[x],), layer=layer_of(x))
            return restored[x]
        if x in where and where[x] != ipu:
            return receive(x)
        return x

    def clone(x: str) -> str:
        if x not in clones:
            o = producer[x]
            ins = tuple(backward_input(i) for i in o.inputs)
            name = e.fresh(f"{o.name} [recomputed]")
            clones[x] = e.add(replace(o, name=name, output=e.fresh(f"{o.output} [recomputed]"), inputs=ins))
        return clones[x]

    def finish(o: Operation, out: str) -> None:
        if readers_elsewhere.get(o.output):
            e.new("send", f"{o.output} [sent]", (out,), layer=o.layer)
        if o.output in stashed:
            stash(o.output, out)
        if o.output in grads:
            gradient(grads[o.output], out, o.layer)

    accumulators: dict[str, tuple[str, int | None]] = {}

    def gradient(param: str, g: str, layer: int | None) -> None:
        t = declared[param]
        if setup.accumulates:
            acc = e.declare(f"{param} [gradient accumulator]", t.shape, setup.accumulator, Role.ACCUMULATOR)
            accumulators[param] = (e.new("accumulate", f"{param} [gradient accumulation]",
                                         (e_reshaped(g, t, layer), acc), setup.accumulator, layer=layer,
                                         role=Role.GRADIENT), layer)
        else:
            update(param, e_reshaped(g, t, layer), layer)

    def e_reshaped(g: str, t: Tensor, layer: int | None) -> str:
        if e.shapes[g][0] == t.shape:
            return g
        return e.new("reshape", f"{t.name} [gradient] reshape", (g,), attrs={"shape": t.shape}, layer=layer,
                     role=Role.GRADIENT)

    def update(param: str, g: str, layer: int | None) -> None:
        t = declared[param]
        state = []
        offchip = []
        for label, precision in setup.state():
            if setup.optimizer_state_offchip:
                offchip.append(precision.to_text())
                continue
            shape = t.shape if setup.shards == 1 else (-(-t.elements // setup.shards),)
            state.append(e.declare(f"{param} [optimizer {label}]", shape, precision, Role.OPTIMIZER_STATE))
        attrs = {"optimizer": setup.optimizer, "shards": setup.shards, "replicas": setup.replication_factor}
        if offchip:
            attrs["offchip"] = tuple(offchip)
        updater = setup.updater(t.shape, t.precision) if setup.optimizer in UPDATER_TERM else t.precision
        e.new("optimizer_update", f"{param} [optimizer update]", (param, g, *state), updater, attrs, layer=layer,
              role=Role.UPDATE)

    for name in sorted(plan.stashed_inputs(ipu)):  # model inputs the backward pass reads again
        stash(name, name)
    for o in here:
        if o.output in backward:
            continue
        ins = tuple(forward_input(i) for i in o.inputs)
        finish(o, e.add(replace(o, inputs=ins)))
    for o in here:
        if o.output not in backward:
            continue
        ins = tuple(backward_input(i) for i in o.inputs)
        role = Role.GRADIENT if o.output in renamed else o.role  # making a parameter's gradient
        finish(o, e.add(replace(o, inputs=ins, name=renamed.get(o.output, o.name), role=role)))
    for param, (acc, layer) in accumulators.items():
        update(param, acc, layer)
    return _numbered(program, e, plan.info(ipu, setup))


def _numbered(program: Program, e: _Emitter, info: ProgramInfo) -> Program:
    """The IPU's program: the declared tensors it reads (inputs first), then its
    operations, numbered in order."""
    reads = {i for o in e.items for i in o.inputs}
    declared = [t for t in (*program.tensors, *e.extra) if t.name in reads or t in e.extra]
    declared.sort(key=lambda t: t.role is not Role.INPUT)
    tensors = tuple(replace(t, origin=k) for k, t in enumerate(declared))
    base = len(tensors)
    items = tuple(replace(o, origin=base + k, index=k) for k, o in enumerate(e.items))
    made = {o.output for o in items}
    outputs = tuple(x for x in program.outputs if x in made)
    return Program(program.name, tensors, items, outputs, info)


def ipu_program(joint: JointProgram, setup: TrainingSetup, counts: tuple[int, ...] | None, ipu: int) -> Program:
    """The program of IPU `ipu` when the layers are split `counts` (None: one IPU, not
    a pipeline)."""
    return build_ipu_program(joint, setup, StagePlan.of(joint, setup, counts), ipu)
