"""The tree stays readable: no import cycle among the plugin, the workloads and the kernels (imports inside
functions count: a lazy import still ties two modules together), and no module grows past about 300
lines without a reason written here."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"trainperf": ROOT / "plugin" / "trainperf", "workloads": ROOT / "workloads", "kernels": ROOT / "kernels"}
MAX_LINES = 300
LONGER = {}  # "package/module.py": "why it is longer"


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the three packages."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """The known modules a module imports anywhere in its body but under ``if TYPE_CHECKING:``, which never
    runs (``from x import y``: x.y when that is a module, else x)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in run_time_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return {target for target in targets if target in known and target != name}


def run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    nodes, pending = [], [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            pending.extend(node.orelse)
            continue
        nodes.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return nodes


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {name: imported(path, name, known) for name, path in files.items()}


def test_the_import_graph_is_read_from_every_package() -> None:
    graph = import_graph()
    assert "trainperf.fixture" in graph["trainperf.plugin"] or "trainperf.lazy_session" in graph["trainperf.plugin"]
    assert "kernels.cublaslt" in graph["kernels.tuned_gemm"]
    assert "kernels.tuned_gemm" in graph["workloads.transformer"]  # a lazy import counts


def test_no_import_cycle() -> None:
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


def test_a_cycle_is_found_when_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()


def test_no_module_over_about_300_lines_without_a_reason() -> None:
    long = {
        str(path.relative_to(ROOT)): count
        for path in module_files().values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    unexplained = {path: count for path, count in long.items() if path not in LONGER}
    assert not unexplained, f"modules over {MAX_LINES} lines, split them or say why in LONGER: {unexplained}"
