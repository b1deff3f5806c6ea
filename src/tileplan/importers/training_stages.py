"""A training program's pipeline stages: which IPU runs each operation, what each
stage stashes and what is recomputed.

Sections and IPUs are the splitter's (`tileplan.model.stages`): a forward operation is
in its layer (`Operation.layer`, which the graph builder numbers from the module
lists: `bert.encoder.layer.{i}`, `transformer.h.{i}`, T5's `encoder.block.{i}` then
`decoder.block.{i}`), before the first layer (`PRE`: embeddings), after the last
(`POST`: the head and the loss), or between two layers with the next. A backward
operation is in its forward module's section (the section of the backward operation
before it when its module ran no forward operation).

Stages (PopTorch's pipelined execution, docs/notes/TRAINING-NOTES.md section 2.1): with
`layers_per_ipu` [n_0, ..., n_{N-1}], IPU i runs its n_i layers, IPU 0 also `PRE`
(each split of a serialised embedding on the IPU `serialized_embedding_splits_per_ipu`
gives it), the last IPU `POST`, but a head tied to the embedding (BERT's pooler and
pre-training heads, GPT-2's LM head: `tileplan.model.stages.head_start`) on IPU 0, as
Graphcore's BERT and GPT-2 place it. An operation of a module enclosing others (the
model's own forward: masks, the loss) runs where the one before it does. As PopTorch's
`AutoStage.AutoIncrement`, a new forward stage begins wherever the IPU changes along
the forward pass (a tied head is one more stage on IPU 0; T5's decoder, looking up the
shared embedding, goes back to its IPUs). With S forward stages, stage s's values are
held for 2(S - 1 - s) + 1 micro-batches between its forward and backward passes (its
stash depth; the last stage, whose backward follows its forward, has none).

Recomputation (`recompute` pipeline or every-layer, PopART's RecomputationType
Pipeline with optimum-graphcore's checkpoints): every forward operation outside
`POST` is recomputed but checkpoints (every-layer: each layer's output read by the
next layer, the model's last layer excepted). A stage that is not the last stashes
what its backward pass reads from its forward pass: its inputs (received tensors and
the model's inputs) and checkpoints, or without recomputation every saved value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from tileplan.errors import InputError
from tileplan.importers.joint_program import JointProgram
from tileplan.model.info import PipelineStage, ProgramInfo, TrainingInfo
from tileplan.model.ir import Operation
from tileplan.model.role import Role
from tileplan.model.stages import POST, PRE, Placement, head_start, sections
from tileplan.model.training import TrainingSetup

#: a split of a serialised embedding, as `tileplan.importers.hf_models.serialize_embeddings`
#: names its tables (`...word_embeddings.splits.split3`)
_SPLIT = re.compile(r"\.splits\.split(\d+)(?=\.|$)")


def layer_count(joint: JointProgram) -> int:
    """The model's layers: those its operations belong to (`Operation.layer`)."""
    return len({o.layer for o in joint.program.operations() if o.layer is not None})


def training_sections(ops: Sequence[Operation], backward: frozenset[str]) -> dict[str, int]:
    """Each operation's section by its output: a forward operation's by its layer
    (`tileplan.model.stages.sections`), a backward one's by its module (see the module
    docstring)."""
    forward = [o for o in ops if o.output not in backward]
    out = dict(zip((o.output for o in forward), sections([o.layer for o in forward])))
    by_module: dict[str | None, int] = {}
    for o in forward:
        by_module.setdefault(o.module, out[o.output])
    last = POST
    for o in ops:
        if o.output in backward:
            last = out[o.output] = by_module.get(o.module, last)
    return out


def _containers(forward: Sequence[Operation]) -> set[str]:
    """The modules enclosing a layer's or an embedding split's (and the model's own,
    ""): their operations are placed by the operation before them."""
    modules = {o.module or "" for o in forward}
    leaves = {o.module or "" for o in forward if o.layer is not None} | {m for m in modules if _SPLIT.search(m)}
    return {m for m in modules if m == "" or any(x.startswith(m + ".") for x in leaves)}


@dataclass(frozen=True, slots=True)
class Stage:
    """A forward stage: its index, its IPU and its stash depth."""

    index: int
    ipu: int
    depth: int


class StagePlan:
    """Where each operation of a joint program runs and what each IPU stashes and
    recomputes (see the module docstring)."""

    def __init__(self, joint: JointProgram, recompute: str, counts: tuple[int, ...],
                 embedding_splits: tuple[int, ...] | None = None) -> None:
        self.joint = joint
        ops = joint.program.operations()
        self.ops = ops
        self.counts = counts
        placement = Placement(counts)
        self.section = training_sections(ops, joint.backward)
        forward = [o for o in ops if o.output not in joint.backward]
        self.containers = _containers(forward)
        pre, post = ([o for o in forward if self.section[o.output] == part] for part in (PRE, POST))
        last = max((o.layer for o in forward if o.layer is not None), default=None)
        last_layer = [o for o in forward if o.layer is not None and o.layer == last]
        trained = {p for p, _ in joint.gradients}  # a constant both read is no tie
        start = head_start(pre, last_layer, post, trained) if placement.ipus > 1 else None
        head = {o.output for o in post[start:]} if start is not None else set()
        anchors = self._anchors(forward, placement, head, embedding_splits)
        # PopTorch's AutoStage.AutoIncrement: a new stage wherever the IPU changes
        stage_ipus: list[int] = []
        self.stage_of = {}
        for o in forward:
            ipu = anchors.get(o.output, stage_ipus[-1] if stage_ipus else 0)
            if not stage_ipus or stage_ipus[-1] != ipu:
                stage_ipus.append(ipu)
            self.stage_of[o.output] = len(stage_ipus) - 1
        count = len(stage_ipus)
        self.stages = [Stage(k, ipu, 2 * (count - 1 - k) + 1 if k < count - 1 else 0)
                       for k, ipu in enumerate(stage_ipus)]
        self._backward_stages(ops, forward)
        self.recompute = recompute
        #: a pipeline's plan (its programs carry `pipeline`), not one IPU's alone
        self.pipelined = placement.ipus > 1
        self.checkpoints = self._checkpoints(forward) if recompute == "every-layer" else set()
        self._recomputed = {o.output for o in forward if recompute != "none" and self.section[o.output] != POST
                            and o.output not in self.checkpoints}

    def _anchors(self, forward: Sequence[Operation], placement: Placement, head: set[str],
                 embedding_splits: tuple[int, ...] | None) -> dict[str, int]:
        """The IPU a forward operation is placed on, as `poptorch.BeginBlock` places
        modules: by its section (`Placement`; `head`: the tied head's operations), each
        split of a serialised embedding on the IPU `embedding_splits` gives it. An
        operation of a module enclosing layers or splits (the model's own forward, an
        encoder's, a serialised embedding's sums) has none: it runs where the operation
        before it does."""
        split_ipu = [i for i, c in enumerate(embedding_splits or ()) for _ in range(c)]
        out = {}
        for o in forward:
            module = o.module or ""
            split = _SPLIT.search(module)
            if split is not None and split_ipu:
                out[o.output] = split_ipu[min(int(split.group(1)), len(split_ipu) - 1)]
            elif module not in self.containers:
                out[o.output] = placement.ipu(self.section[o.output], o.output in head)
        return out

    def _backward_stages(self, ops: Sequence[Operation], forward: Sequence[Operation]) -> None:
        """A backward operation's stage: its forward module's (the latest of its stages
        not after the backward operation before it, for a module run in several: a
        shared embedding), or, for an enclosing module's or one that ran no forward
        operation, the stage of the backward operation before it."""
        stages: dict[str, list[int]] = {}
        for o in forward:
            stages.setdefault(o.module or "", []).append(self.stage_of[o.output])
        last = len(self.stages) - 1
        for o in ops:
            if o.output not in self.joint.backward:
                continue
            module = o.module or ""
            candidates = sorted(set(stages.get(module, ())))
            if candidates and module not in self.containers:
                before = [c for c in candidates if c <= last]
                last = before[-1] if before else candidates[0]
            self.stage_of[o.output] = last

    @staticmethod
    def of(joint: JointProgram, setup: TrainingSetup, counts: tuple[int, ...] | None) -> "StagePlan":
        """The plan of `counts` layers per IPU, a pipeline (its reports say which IPU
        each is, even of one); None: every layer on one IPU, not pipelined."""
        layers = layer_count(joint)
        given = counts
        if counts is None:
            counts = (layers,)
        pipelined = given is not None
        if sum(counts) != layers or any(c < 0 for c in counts):
            raise InputError(f"--layers-per-ipu {list(counts)} places {sum(counts)} layers; the model has {layers}")
        splits = setup.embedding_splits_per_ipu
        if splits is not None and len(splits) != len(counts):
            raise InputError(f"--serialized-embedding-splits-per-ipu lists {len(splits)} IPUs, --layers-per-ipu "
                             f"{len(counts)}")
        plan = StagePlan(joint, setup.recompute, counts, splits)
        plan.pipelined = pipelined
        return plan

    @property
    def ipus(self) -> int:
        return len(self.counts)

    def ipu_of(self, o: Operation) -> int:
        return self.stages[self.stage_of[o.output]].ipu

    def _checkpoints(self, forward: Sequence[Operation]) -> set[str]:
        """Each layer's outputs the next layer reads (the model's last layer has none)."""
        made = {o.output: self.section[o.output] for o in forward}
        out = set()
        for o in forward:
            p = self.section[o.output]
            for i in o.inputs:
                q = made.get(i)
                if q is not None and 0 <= q < POST and p == q + 1:
                    out.add(i)
        return out

    def recomputed(self, ipu: int) -> set[str]:
        return {x for x in self._recomputed if self.stages[self.stage_of[x]].ipu == ipu}

    def depth_of(self, x: str, ipu: int) -> int:
        stage = self._forward_stage(x, ipu)
        return 0 if stage is None else self.stages[stage].depth

    def _forward_stage(self, x: str, ipu: int) -> int | None:
        """The forward stage on `ipu` that makes `x`, or first reads it when it is made
        elsewhere (received) or declared (a model input); None if none does."""
        if x in self.stage_of and self.stages[self.stage_of[x]].ipu == ipu and x not in self.joint.backward:
            return self.stage_of[x]
        readers = [self.stage_of[o.output] for o in self.ops if x in o.inputs and o.output not in self.joint.backward
                   and self.ipu_of(o) == ipu]
        return min(readers) if readers else None

    def _needed(self, ipu: int) -> dict[str, int]:
        """The forward values (and received ones) the backward operations on `ipu` read,
        through the recomputed operations, with the stage of the backward operation
        reading them."""
        producer = {o.output: o for o in self.ops}
        recomputed = self.recomputed(ipu)
        out: dict[str, int] = {}
        seen: set[str] = set()

        def visit(x: str, stage: int) -> None:
            if x in recomputed:
                if x not in seen:
                    seen.add(x)
                    for i in producer[x].inputs:
                        visit(i, stage)
                return
            out.setdefault(x, stage)

        for o in self.ops:
            if o.output in self.joint.backward and self.ipu_of(o) == ipu:
                for i in o.inputs:
                    visit(i, self.stage_of[o.output])
        return out

    def stashed(self, ipu: int) -> set[str]:
        """Values made (or received) in a forward stage on `ipu` that is not the last
        and read again by that stage's backward pass."""
        inputs = {t.name for t in self.joint.program.tensors if t.role is Role.INPUT}
        return {x for x, stage in self._needed(ipu).items() if x not in inputs and x not in self.joint.backward
                and self._forward_stage(x, ipu) == stage and self.stages[stage].depth > 0}

    def stashed_inputs(self, ipu: int) -> set[str]:
        """The model's inputs a stage on `ipu` that is not the last reads again in its
        backward pass (token ids, when the embeddings are recomputed)."""
        inputs = {t.name for t in self.joint.program.tensors if t.role is Role.INPUT}
        return {x for x, stage in self._needed(ipu).items() if x in inputs and self._forward_stage(x, ipu) == stage
                and self.stages[stage].depth > 0}

    def info(self, ipu: int, setup: TrainingSetup) -> ProgramInfo:
        """What IPU `ipu`'s program says about itself: the joint program's info, how it
        trains, its forward stages and their stash depths and, in a pipeline, its stage."""
        stages = [s for s in self.stages if s.ipu == ipu]
        training = TrainingInfo(setup, tuple(s.index for s in stages), tuple(s.depth for s in stages))
        return replace(self.joint.program.info, training=training,
                       pipeline=PipelineStage.of(ipu, self.counts) if self.pipelined else None)
