"""The package's architecture, read from its import graph by grimp (every import statement: at module level, inside a
function, under ``TYPE_CHECKING``): no cycle among its modules, and the layers its folders form.

    cli  ->  pipeline  ->  rl | evals  ->  datagen | world | classifier  ->  core

A module imports only from layers below its own (``|``: siblings that never import each other). What two stages share
lives below both. Inside ``pipeline`` the same holds, so that a stage's tables are declared before any room reads
them (tables <- config <- the rooms):

    runner -> seeds_report -> report | launch_slurm | launch_ray -> stages -> rl_steps -> stage -> script -> steps
        -> config -> schema -> tables -> resources | gpu_memory | measured_figures | folders

and the rooms (``pipeline/stages/*.py``) stand alone: none imports another, except ``compare``, which compares the
evaluations and sits above them. What rooms share (the policies, the runs, the run folder's names) is below them.
"""

import copy

import grimp
import pytest
from grimp import Layer

PACKAGE_LAYERS = (
    Layer("cli"),
    Layer("pipeline"),
    Layer("rl", "evals"),
    Layer("datagen", "world", "classifier"),
    Layer("core"),
)
PIPELINE_LAYERS = (
    Layer("runner"),
    Layer("seeds_report"),
    Layer("report", "launch_slurm", "launch_ray"),
    Layer("stages"),
    Layer("rl_steps"),
    Layer("stage"),
    Layer("script"),
    Layer("steps"),
    Layer("config"),
    Layer("schema"),
    Layer("tables"),
    Layer("resources", "gpu_memory", "measured_figures", "folders"),
)
ROOMS = "darling.pipeline.stages"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("darling", exclude_type_checking_imports=False)


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative): each holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_graph_holds_every_import_statement(graph):
    """Imports inside functions count (how heavy dependencies stay lazy, not a way around the order)."""
    assert graph.direct_import_exists(importer="darling.cli.evals", imported="darling.evals.partitions")


def test_no_module_is_part_of_an_import_cycle(graph):
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_a_cycle_is_found_where_there_is_one(graph):
    """The check itself: a graph with one added import back up the layers has a cycle."""
    graph = copy.deepcopy(graph)
    graph.add_import(importer="darling.core.errors", imported="darling.cli.main")
    assert any("darling.core.errors" in c and "darling.cli.main" in c for c in cycles(graph))


@pytest.mark.parametrize(
    ("container", "layers"),
    [("darling", PACKAGE_LAYERS), ("darling.pipeline", PIPELINE_LAYERS)],
    ids=["package", "pipeline"],  # fixed ids: a set's repr differs between xdist workers
)
def test_the_folders_form_layers(graph, container, layers):
    illegal = graph.find_illegal_dependencies_for_layers(layers=layers, containers={container})
    shown = [
        f"{d.importer} -> {d.imported}: "
        + "; ".join(" -> ".join([*sorted(r.heads), *r.middle, *sorted(r.tails)]) for r in d.routes)
        for d in illegal
    ]
    assert not illegal, "\n".join(shown)


def test_no_room_imports_another(graph):
    """Every room found in pipeline/stages/ (a new one too) is independent of the others; compare alone sits above."""
    rooms = {name.rpartition(".")[2] for name in graph.find_children(ROOMS)} - {"compare"}
    assert {"rl", "warmup", "eval_novelty"} <= rooms
    layers = (Layer("compare"), Layer(*sorted(rooms), independent=True))
    illegal = graph.find_illegal_dependencies_for_layers(layers=layers, containers={ROOMS})
    assert not illegal, "\n".join(f"{d.importer} -> {d.imported}" for d in illegal)


def test_bench_shares_code_through_the_package_only():
    """A benchmark that is rerun imports darling, never a sibling script through sys.path (frozen studies aside)."""
    import re
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    found = [
        str(path.relative_to(bench))
        for path in sorted(bench.rglob("*.py"))
        if "studies" not in path.parts and re.search(r"sys\.path\.(insert|append)", path.read_text())
    ]
    assert not found, found


def test_the_report_and_launchers_read_the_rooms_through_the_registry(graph):
    """report.py and the launchers use pipeline/stages/__init__.py (the stages in order, each Stage's hooks), never a
    room's module; the runner imports one room, compare, for the study over seeds (its pairs and RUN/arms.md)."""
    rooms = set(graph.find_children(ROOMS))
    reach = {
        module.rpartition(".")[2]: sorted(graph.find_modules_directly_imported_by(module) & rooms)
        for module in ("darling.pipeline.report", "darling.pipeline.launch_slurm", "darling.pipeline.launch_ray")
    }
    assert reach == {"report": [], "launch_slurm": [], "launch_ray": []}
    assert graph.find_modules_directly_imported_by("darling.pipeline.runner") & rooms == {f"{ROOMS}.compare"}
