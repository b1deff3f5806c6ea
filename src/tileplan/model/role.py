"""What a tensor or a value is: its `Role`, set by whoever makes it.

An importer declares the model's tensors (its inputs, its weights, its buffers and
constants), the training program's builder (`tileplan.importers.training`) declares
the training state (gradient accumulators, optimizer state, stashes) and marks the
operations making gradients and the weight update (`Operation.role`), and the lowering
gives each value it makes a role: an operation's result or view its operation's, a
copy or conversion its source's `copy_role`. The report writes each role as its text
(the member's value: docs/report-format.md, "Roles"), so `check` re-derives what
follows from a role (live from step 0, always live, a training report's classes) from
the report alone, never from a name. A step's scratch is no value, so it has no role.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """A tensor's or value's role; the value is the report's text. The declared ones
    (`DECLARED`) are tensors of the program, live from its first step; the others are
    made by operations. `WEIGHT` writes `parameter` and `ACTIVATION` `intermediate`,
    the texts reports have always had."""

    INPUT = "input"  # the model's input (or, on an IPU of a pipeline, what it receives)
    WEIGHT = "parameter"  # a parameter of the model (trained, in a training program)
    BUFFER = "buffer"  # state that is not trained: running statistics, position ids, constants, a KV cache
    ACCUMULATOR = "accumulator"  # a trained parameter's gradient accumulator
    OPTIMIZER_STATE = "optimizer_state"  # a trained parameter's optimizer state held on chip
    STASH = "stash"  # a pipeline stage's stash of a forward value its backward pass reads
    ACTIVATION = "intermediate"  # an activation or temporary: what operations make
    GRADIENT = "gradient"  # a parameter's gradient, or what an operation makes only for it
    UPDATE = "update"  # the weight update's values: its updater term, optimizer state loaded from off chip

    @property
    def declared(self) -> bool:
        """A tensor the program declares (live from its first step)."""
        return self in DECLARED

    @property
    def held(self) -> bool:
        """Held for the whole program with the default policy (Poplar's variables, which
        PopVision shows as always live): every declared tensor but the input."""
        return self in HELD


#: the roles of declared tensors, and those of them held for the whole program
DECLARED = frozenset({Role.INPUT, Role.WEIGHT, Role.BUFFER, Role.ACCUMULATOR, Role.OPTIMIZER_STATE, Role.STASH})
HELD = DECLARED - {Role.INPUT}
#: the roles of what operations make
MADE = frozenset(Role) - DECLARED
#: each role by its text (a report's), for readers
ROLE_OF_TEXT = {r.value: r for r in Role}

#: the role of a copy or a conversion of a value of each role: a gradient's or an
#: accumulator's is a gradient, optimizer state's or the update's belongs to the
#: update, anything else's is a temporary (a copy of a weight, of the input, of a
#: stash is no weight, input or stash: it lives only while it is read)
_COPY_ROLE = {Role.GRADIENT: Role.GRADIENT, Role.ACCUMULATOR: Role.GRADIENT, Role.OPTIMIZER_STATE: Role.UPDATE,
              Role.UPDATE: Role.UPDATE}


def copy_role(of: Role | None) -> Role:
    """The role of a copy or conversion of a value of role `of` (see `_COPY_ROLE`)."""
    return Role.ACTIVATION if of is None else _COPY_ROLE.get(of, Role.ACTIVATION)

