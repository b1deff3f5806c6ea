"""Roles (`tileplan.model.role`): set by whoever makes a tensor or a value, kept on
every `Value`, written to and read from both report versions, and the only thing a
training report's classes come from (docs/report-format.md, "Roles")."""

from __future__ import annotations

import json

import pytest

from tileplan.app.request import PlanRequest
from tileplan.app.training import TrainingOptions, training_program
from tileplan.errors import InputError, ModelError
from tileplan.lowering.policy import policy
from tileplan.model.ir import Operation, Tensor
from tileplan.model.machine import machine
from tileplan.model.precision import F16
from tileplan.model.role import DECLARED, HELD, ROLE_OF_TEXT, Role, copy_role
from tileplan.planner.plan import Plan, plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.check.exact import training_classes
from tileplan.views.classes import class_rows
from tileplan.report.format import from_json_text, read_report, report_bytes, to_json_text

BERT = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 2,
        "intermediate_size": 128, "vocab_size": 500, "max_position_embeddings": 64,
        "architectures": ["BertForQuestionAnswering"]}


@pytest.fixture(scope="module")
def request_(tmp_path_factory) -> PlanRequest:
    folder = tmp_path_factory.mktemp("qa")
    (folder / "config.json").write_text(json.dumps(BERT))
    return PlanRequest(model=str(folder / "config.json"), sequence_length=16, batch=2,
                       training=TrainingOptions(gradient_accumulation=4)).resolved()


def planned(request: PlanRequest, counts: tuple[int, ...] | None = None, ipu: int = 0) -> Plan:
    return plan_program(training_program(request, counts, ipu), machine(request.machine), policy(request.policy),
                        request.options_for(ipu))


@pytest.fixture(scope="module")
def first_ipu(request_) -> Plan:
    """IPU 0 of BERT split 2, 2: accumulators, optimizer state, a stash, gradients."""
    return planned(request_, (2, 2), 0)


def by_name(plan: Plan) -> dict[str, Role | None]:
    return {v.name: v.role for v in plan.values}


def test_a_training_programs_values_carry_the_roles_their_makers_gave(first_ipu):
    roles = by_name(first_ipu)
    weight = "bert.encoder.layer.0.attention.self.query.weight"
    assert roles[weight] is Role.WEIGHT
    assert roles[f"{weight} [gradient accumulator]"] is Role.ACCUMULATOR
    assert roles[f"{weight} [optimizer first moment]"] is Role.OPTIMIZER_STATE
    assert roles[f"{weight} [gradient]"] is Role.GRADIENT
    assert roles[f"{weight} [gradient accumulation]"] is Role.GRADIENT  # the accumulator, updated in place
    assert roles[f"{weight} [optimizer update]"] is Role.UPDATE
    assert roles["input_ids"] is Role.INPUT
    assert roles["input_ids [stash]"] is Role.STASH
    assert roles["bert.embeddings.position_ids"] is Role.BUFFER  # a buffer of the model, not trained
    # a copy takes its source's kind of memory: a gradient's copy is a gradient
    copies = [v for v in first_ipu.values if "[gradient] [copy for operation" in v.name]
    assert copies and all(v.role is Role.GRADIENT for v in copies)
    # the forward pass's values are activations; every value has a role
    assert roles["bert.embeddings.LayerNorm.layernorm"] is Role.ACTIVATION
    assert None not in roles.values()
    assert {v.role for v in first_ipu.values if v.resident} <= DECLARED
    assert first_ipu.resident == frozenset(v.id for v in first_ipu.values if v.role in HELD)


def test_the_report_carries_each_role_and_reads_it_back_in_both_versions(first_ipu, tmp_path):
    report = build_report(first_ipu)
    for version in (1, 2):
        text = to_json_text(report) if version == 1 else report_bytes(report, version).decode()
        back = from_json_text(text)
        assert [v.role for v in back.values] == [v.role for v in first_ipu.values]
        assert all(type(v.role) is Role for v in back.values)
    doc = json.loads(to_json_text(report))
    assert {v["role"] for v in doc["timeline"]["values"]} == {
        "input", "parameter", "buffer", "accumulator", "optimizer_state", "stash", "intermediate", "gradient",
        "update"}
    assert check_report(report).consistent


def test_classes_come_from_roles_not_names(first_ipu):
    """Values named as the old rule read names (`[stash]`, `[optimizer`, `[gradient`)
    are classed by their roles: an activation named `x [stash]` is no stash, a stash
    named `plain` is one; the builder's rows and check's re-derivation agree."""
    values = list(first_ipu.values)
    activation = next(v for v in values if v.role is Role.ACTIVATION)
    stash = next(v for v in values if v.role is Role.STASH)
    renamed = [activation._replace(name="looks like a [stash] [optimizer x] [gradient]"),
               stash._replace(name="plain")]
    rows = class_rows([(renamed[0], 100), (renamed[1], 10)], scratch=1)
    assert [(r.name, r.always_live, r.bytes, r.values) for r in rows] == [
        ("stash", True, 10, 1), ("activations and temporaries", False, 101, 1)]
    derived = training_classes([(renamed[0], 100), (renamed[1], 10)], 1)
    assert derived == rows


def test_a_report_whose_names_mislead_still_checks(first_ipu):
    """Renaming values in a written report to hold the old name marks changes no class
    `check` re-derives: it reads roles."""
    doc = json.loads(to_json_text(build_report(first_ipu)))
    for v in doc["timeline"]["values"]:
        if v["role"] == "intermediate":
            v["name"] = v["name"] + " [stash]"
        elif v["role"] == "stash":
            v["name"] = "no marks here"
    report = from_json_text(json.dumps(doc))
    assert report.sections.verdict.peak_tile.classes  # a training report's classes
    assert check_report(report).consistent


def test_an_old_training_report_reads_its_roles_as_they_were_written(first_ipu):
    """A report written before the finer roles (state `parameter`, gradients and the
    update's values `intermediate`) still reads, its classes as it wrote them; by its
    roles alone its values are weights and activations and temporaries, so check finds
    the classes differ (docs/report-format.md, "Classes of a training report")."""
    old = {"buffer": "parameter", "accumulator": "parameter", "optimizer_state": "parameter", "stash": "parameter",
           "gradient": "intermediate", "update": "intermediate"}
    doc = json.loads(to_json_text(build_report(first_ipu)))
    for v in doc["timeline"]["values"]:
        v["role"] = old.get(v["role"], v["role"])
    report = from_json_text(json.dumps(doc))
    assert {v.role for v in report.values} == {Role.INPUT, Role.WEIGHT, Role.ACTIVATION}
    written = [c.name for c in report.sections.verdict.peak_tile.classes]
    assert "optimizer state" in written  # as written then
    live = [(v, 8) for v in report.values]
    assert {r.name for r in class_rows(live, 0)} == {"weights", "activations and temporaries"}
    findings = [f for f in check_report(report).findings if f.kind != "rejected"]
    assert findings and all(f.place.startswith("verdict.peak_tile.classes") for f in findings)


def test_a_copy_takes_its_sources_kind_of_memory():
    assert copy_role(Role.GRADIENT) is copy_role(Role.ACCUMULATOR) is Role.GRADIENT
    assert copy_role(Role.OPTIMIZER_STATE) is copy_role(Role.UPDATE) is Role.UPDATE
    for role in (Role.INPUT, Role.WEIGHT, Role.BUFFER, Role.STASH, Role.ACTIVATION, None):
        assert copy_role(role) is Role.ACTIVATION


def test_roles_are_the_reports_texts_and_declared_tensors_hold_declared_roles():
    assert [r.value for r in Role][:3] == ["input", "parameter", "buffer"]
    assert Role.WEIGHT == "parameter" and Role.ACTIVATION == "intermediate"  # the texts reports always had
    assert ROLE_OF_TEXT["optimizer_state"] is Role.OPTIMIZER_STATE
    assert HELD == DECLARED - {Role.INPUT} and all(r.declared for r in HELD) and not Role.GRADIENT.declared
    with pytest.raises(ModelError, match="declared tensor's role"):
        Tensor(0, "g", (4,), F16, Role.GRADIENT)
    with pytest.raises(ModelError, match="an operation makes values of role"):
        Operation(0, 0, "add", "a", ("x", "y"), "z", (4,), F16, role=Role.STASH)
    with pytest.raises(ModelError, match="layer must be >= 0"):
        Operation(0, 0, "add", "a", ("x", "y"), "z", (4,), F16, layer=-1)


def role_enums(x: object) -> list[list[str]]:
    """Every enum in a schema that lists `intermediate`: the roles'."""
    if isinstance(x, dict):
        own = [x["enum"]] if "intermediate" in x.get("enum", ()) else []
        return own + [e for y in x.values() for e in role_enums(y)]
    if isinstance(x, list):
        return [e for y in x for e in role_enums(y)]
    return []


def test_the_schemas_list_every_role():
    from tileplan.report.schema import FILES, HERE

    for version, name in FILES.items():
        text = (HERE / name).read_text()
        assert role_enums(json.loads(text)) == [list(ROLE_OF_TEXT)], version


def test_an_unknown_role_is_a_one_line_error(first_ipu, tmp_path):
    doc = json.loads(to_json_text(build_report(first_ipu)))
    doc["timeline"]["values"][0]["role"] = "weights"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"timeline\.values\[0\]\.role: role must be one of input, parameter"):
        read_report(str(path))
