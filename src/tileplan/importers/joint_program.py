"""The joint forward and backward graph as a flat program with precisions, what the
training program's builder (`tileplan.importers.training`) and its pipeline stages
(`tileplan.importers.training_stages`) read."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tileplan.errors import InputError
from tileplan.importers.joint import JointGraph
from tileplan.model.info import ProgramInfo
from tileplan.model.ir import Program
from tileplan.model.precision import Precision


@dataclass(frozen=True, slots=True)
class JointProgram:
    """The joint graph as a flat program with precisions: `gradients` pairs each
    trained parameter with its gradient, `backward` names the outputs of the backward
    pass's operations."""

    program: Program
    gradients: tuple[tuple[str, str], ...]
    backward: frozenset[str]
    loss: str

    @staticmethod
    def of(joint: JointGraph, weights: Precision, activations: Precision,
           info: ProgramInfo | None = None) -> "JointProgram":
        if weights != activations:
            raise InputError(f"training keeps weights and gradients in one precision (PopART's Adam requires it): "
                             f"--weights {weights.to_text()} and --activations {activations.to_text()} differ")
        program = joint.graph.to_program(weights, activations, info, repeat=False)
        program = replace(program, outputs=(joint.loss,))
        return JointProgram(program, joint.gradients, joint.backward, joint.loss)
