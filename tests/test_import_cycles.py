"""No import cycle between tileplan's packages or modules.

The graph is read from the source, not from a running interpreter: every `import` and
`from ... import` of a tileplan module anywhere in a file (at the top, inside a
function) is an edge, to the module imported (`from
tileplan.ops import base` is an edge to `tileplan.ops.base`, `from tileplan.ops import
REGISTRY` one to the package `tileplan.ops`, its `__init__`). Importing a submodule
runs its package's `__init__` too, but that is not counted: a package whose
`__init__` imports its own modules would otherwise always be a cycle. Packages are
the second level (`tileplan.ops`); the top-level modules (`tileplan.errors`) and the
package root `tileplan` are packages of their own. Imports under `if TYPE_CHECKING:`
count too: they never run, but a module naming another's type for its annotations
depends on it as much (a handler table typing its importer names what it should only
describe: a `Protocol` of what it asks, below both, breaks the cycle).

The packages' order, top to bottom, as the README's "How it plans" lists them: a
package imports only packages below it. `check` re-derives a report without anything
that plans: neither it nor any module it imports, transitively, belongs to a package
that plans (the report's format and the views import none either).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tileplan

ROOT = Path(tileplan.__file__).parent

#: the packages, top to bottom (README, "How it plans")
LAYERS = ("tileplan", "tileplan.cli", "tileplan.app", "tileplan.render", "tileplan.views", "tileplan.check",
          "tileplan.report", "tileplan.planner", "tileplan.builtins", "tileplan.lowering", "tileplan.importers",
          "tileplan.ops", "tileplan.targets", "tileplan.kernel", "tileplan.model", "tileplan.placement",
          "tileplan.ioutil", "tileplan.runtime", "tileplan.version", "tileplan.errors")


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under `if TYPE_CHECKING:`."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def module_graph(type_checking: bool = True) -> dict[str, set[str]]:
    """Module -> the tileplan modules it imports (with `type_checking`, the default,
    those under `if TYPE_CHECKING:` too)."""
    mods = modules()
    return {name: imports_of(ast.parse(path.read_text(), str(path)), name, set(mods), type_checking)
            for name, path in mods.items()}


def imports_of(tree: ast.Module, name: str, mods: set[str], type_checking: bool = True) -> set[str]:
    """The modules of `mods` that module `name`, parsed as `tree`, imports."""
    skip = set() if type_checking else _type_checking_only(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            assert node.level == 0, f"{name}: relative import"
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                       for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in mods and t != name)
    return out


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, targets in module_graph(type_checking=True).items():
        out.setdefault(package_of(m), set()).update(package_of(t) for t in targets if package_of(t) != package_of(m))
    return out


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_each_kind_of_import():
    edges = module_graph()
    assert "tileplan.kernel.gemm" in edges["tileplan.ops.matmul"]  # from tileplan.kernel import gemm
    assert "tileplan.ops" in edges["tileplan.lowering.program"]  # from tileplan.ops import REGISTRY
    assert "tileplan.kernel.options" in edges["tileplan.lowering.program"]


def test_an_import_under_type_checking_is_an_edge():
    source = ("from typing import TYPE_CHECKING\nfrom tileplan.model import ir\n"
              "if TYPE_CHECKING:\n    from tileplan.ops.base import OpDef\n")
    mods = {"tileplan.x", "tileplan.model.ir", "tileplan.ops.base"}
    assert imports_of(ast.parse(source), "tileplan.x", mods) == {"tileplan.model.ir", "tileplan.ops.base"}
    assert imports_of(ast.parse(source), "tileplan.x", mods, type_checking=False) == {"tileplan.model.ir"}
    assert cycles({"a": {"b"}, "b": {"a"}}) == [("a", "b")]  # such an edge back is a cycle


def test_no_package_cycle():
    assert cycles(package_graph()) == []


def test_no_module_cycle_not_even_through_type_checking_imports():
    assert cycles(module_graph(type_checking=True)) == []


#: what plans: the packages `check` re-derives a report without (the report is built
#: from a plan in `tileplan.app.build`, so the application layer is among them)
PLANS = ("tileplan.planner", "tileplan.lowering", "tileplan.ops", "tileplan.kernel", "tileplan.importers",
         "tileplan.app", "tileplan.builtins", "tileplan.placement", "tileplan.targets")


def closure(start: set[str], graph: dict[str, set[str]]) -> set[str]:
    """The modules importing `start` runs: what they import, transitively, and the
    packages holding each (their `__init__` runs first; not the root's, whose lazy
    `tileplan.plan` imports the application on its first call only)."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:k]) for k in range(2, len(parts)))
        todo.extend(graph.get(m, ()))
    return seen


def test_views_and_check_are_packages_of_their_own():
    for name in ("views", "check", "report"):
        assert (ROOT / name / "__init__.py").is_file(), name
        assert f"tileplan.{name}" in LAYERS, name
    assert not list((ROOT / "report").glob("check*.py")), "check's modules live in tileplan.check"


def test_check_imports_nothing_that_plans_not_even_through_what_it_imports():
    graph = module_graph(type_checking=True)
    reached = closure({m for m in graph if package_of(m) == "tileplan.check"}, graph)
    assert "tileplan.report.model" in reached  # the closure does follow the imports
    assert sorted(m for m in reached if package_of(m) in PLANS) == []
    assert {package_of(m) for m in reached} <= {"tileplan", "tileplan.check", "tileplan.report", "tileplan.model",
                                                "tileplan.errors", "tileplan.ioutil", "tileplan.version"}


def test_the_report_format_and_the_views_import_nothing_that_plans():
    graph = package_graph()
    for package in ("tileplan.report", "tileplan.views"):
        assert not graph[package] & set(PLANS), (package, sorted(graph[package] & set(PLANS)))


def test_the_kernel_imports_only_the_model_and_errors():
    graph = package_graph()
    assert graph["tileplan.kernel"] <= {"tileplan.model", "tileplan.errors"}
    assert graph["tileplan.ops"] <= {"tileplan.kernel", "tileplan.model", "tileplan.errors"}
    assert "tileplan.lowering" not in graph["tileplan.model"] | graph["tileplan.kernel"] | graph["tileplan.ops"]


def test_every_package_imports_only_the_packages_below_it():
    graph = package_graph()
    assert set(graph) == set(LAYERS), sorted(set(graph) ^ set(LAYERS))
    rank = {p: k for k, p in enumerate(LAYERS)}
    upward = sorted((p, q) for p, targets in graph.items() for q in targets if rank[q] <= rank[p])
    assert not upward, upward


def test_the_readme_lists_the_packages_in_the_layers_order():
    readme = (ROOT.parent.parent / "README.md").read_text()
    section = readme[readme.index("## How it plans"):]
    positions = [section.index(f"`{p.split('.')[-1]}/`") for p in LAYERS[1:] if "." in p and
                 (ROOT / p.split(".")[-1]).is_dir()]
    assert positions == sorted(positions), "README's How it plans lists the packages out of order"


#: the most lines a module may hold (large mixed modules are split)
MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in ROOT.rglob("*.py")}
    assert len(sizes) > 100
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}
