"""The tree reads as the data flow: each package of the plugin imports only the packages below it, as
one table says, and no module imports itself back through others (imports inside functions and under
``if TYPE_CHECKING:`` count: either still ties two modules together)."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "trainperf": ROOT / "plugin" / "trainperf",
    "workloads": ROOT / "workloads",
    "custom_kernels": ROOT / "custom_kernels",
}
# what each part may import besides itself: the plugin's packages by their name under trainperf, the
# public API as "trainperf" (its __init__), the suite's workloads and kernels by theirs
MAY_IMPORT = {
    "config": set(),
    "spec": set(),
    "measure": {"spec"},
    "child": {"spec", "measure"},
    "profile": {"spec", "measure", "child"},
    "judge": {"spec", "measure"},
    "store": {"judge"},
    "record": {"config", "spec", "measure", "child", "profile", "judge", "store"},
    "report": {"spec", "profile", "measure", "judge", "store", "record"},
    "cli": {"config", "judge", "store", "record", "report"},
    "adapters": {"spec"},
    "hooks": {"config", "spec", "measure", "child", "profile", "judge", "store", "record", "report"},
    "trainperf": {"spec", "measure", "record", "hooks"},
    "workloads": {"trainperf", "custom_kernels"},
    "custom_kernels": set(),
}


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
    """The known modules a module imports anywhere in its body (``from x import y``: x.y when that is a
    module, else x)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return {target for target in targets if target in known and target != name}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {name: imported(path, name, known) for name, path in files.items()}


def part(module: str) -> str:
    """The row of MAY_IMPORT a module belongs to: its package under trainperf, else its top package."""
    top, _, rest = module.partition(".")
    return rest.partition(".")[0] if top == "trainperf" and rest else top


def test_the_import_graph_is_read_from_every_package() -> None:
    graph = import_graph()
    assert "trainperf.hooks.fixture" in graph["trainperf.hooks.plugin"]
    assert "trainperf.hooks.fixture" in graph["trainperf"]  # an import under TYPE_CHECKING counts
    assert "custom_kernels.cublaslt" in graph["custom_kernels.tuned_gemm"]
    assert "custom_kernels.tuned_gemm" in graph["workloads.transformer"]  # a lazy import counts


def test_every_plugin_module_lives_in_a_package_of_the_table() -> None:
    top = sorted(name for name in module_files() if name.count(".") == 1 and name.startswith("trainperf."))
    packages = {name.removeprefix("trainperf.") for name in top if (PACKAGES["trainperf"] / name[10:]).is_dir()}
    assert not set(top) - {f"trainperf.{p}" for p in packages}, "modules at the top of trainperf: wiring goes in hooks"
    assert packages == set(MAY_IMPORT) - {"trainperf", "workloads", "custom_kernels"}


def test_each_package_says_what_it_owns_and_what_it_may_import() -> None:
    for package in set(MAY_IMPORT) - {"trainperf", "workloads", "custom_kernels"}:
        doc = ast.get_docstring(ast.parse((PACKAGES["trainperf"] / package / "__init__.py").read_text()))
        assert doc and "May import" in doc, f"trainperf/{package}/__init__.py: say what it owns and may import"
        allowed = MAY_IMPORT[package]
        for other in set(MAY_IMPORT) - {"trainperf", "workloads", "custom_kernels", package}:
            assert (f"``{other}``" in doc.partition("May import")[2]) == (other in allowed), (package, other)


def test_each_package_imports_only_what_the_table_allows() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if part(target) != part(module) and part(target) not in MAY_IMPORT.get(part(module), set())
    )
    assert not wrong, "imports the table does not allow:\n" + "\n".join(wrong)


def test_no_import_cycle() -> None:
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


def test_a_cycle_is_found_when_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()


def test_a_type_checking_import_is_counted(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import other\n")
    assert imported(module, "pkg.m", {"pkg.m", "pkg.other"}) == {"pkg.other"}


def test_the_plugin_cites_no_lease_of_its_research() -> None:
    """Runs and their figures belong in research/, linked; the product's text names none of them."""
    named = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in PACKAGES["trainperf"].rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "lease" in line.lower()
    ]
    assert not named, named


VERDICT_WORDS = {"pass", "fail", "not judged", "unjudged", "unreliable", "error", "timeout", "interrupted"}


def verdict_strings(path: Path) -> list[int]:
    """Lines where a string spells a verdict, not counting a dictionary's keys, subscripts and ``get``
    (a run document's ``"error"`` field is no verdict)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys |= {id(key) for key in node.keys if key is not None}
        elif isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            keys |= {id(arg) for arg in node.args[:1]}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in VERDICT_WORDS and id(node) not in keys
    ]


def test_verdicts_are_spelled_in_the_verdict_module_alone() -> None:
    """Every view takes a verdict from ``judge.verdict``; option names (``config``) are no verdicts."""
    plugin = PACKAGES["trainperf"]
    own = {plugin / "judge" / "verdict.py"}
    spelled = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(plugin.rglob("*.py"))
        if path not in own and path.parent.name != "config"
        for line in verdict_strings(path)
    ]
    assert not spelled, spelled


def test_a_verdict_string_is_found_where_there_is_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('x = {"error": 1}["error"] or y.get("error")\nif verdict == "fail":\n    pass\n')
    assert verdict_strings(module) == [2]


def test_the_run_document_schema_publishes_the_verdicts() -> None:
    import json

    from trainperf.judge.verdict import Verdict

    schema = json.loads((PACKAGES["trainperf"] / "record" / "run-document.schema.json").read_text())
    assert schema["$defs"]["verdict"]["enum"] == [str(verdict) for verdict in Verdict]
    assert set(schema["$defs"]["unfinished_verdict"]["enum"]) == {str(verdict) for verdict in Verdict} | {"unjudged"}


def test_the_public_names_are_one_list_that_resolves_and_type_checks() -> None:
    import trainperf

    init = PACKAGES["trainperf"] / "__init__.py"
    typed = {
        alias.asname or alias.name: node.module
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trainperf.")
        for alias in node.names
    }
    assert typed == trainperf._EXPORTS  # the names the type checker sees are the names the module serves
    assert sorted(trainperf.__all__) == sorted([*trainperf._EXPORTS, "__version__"])
    for name in trainperf.__all__:
        assert getattr(trainperf, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Ladderr'"):
        trainperf.Ladderr  # noqa: B018


def test_profile_sits_on_the_child_package_above_measure() -> None:
    """A case is measured (``measure``), run again in a fresh process (``child``), and profiled there
    (``profile``): each layer imports only those below it."""
    assert not MAY_IMPORT["measure"] & {"child", "profile"}
    assert "profile" not in MAY_IMPORT["child"]
    assert {"measure", "child"} <= MAY_IMPORT["profile"]


PUBLIC_USERS = ("research", "examples")  # written as a user writes: against the public API only
SHELL_IMPORT = re.compile(r"\b(?:from|import)\s+(trainperf(?:\.\w+)*)(?:\s+import\s+([\w ,]+))?")


PUBLIC_MODULES = ("trainperf", "trainperf.adapters")  # the README's and docs' imports


def public_names(module: str = "trainperf") -> set[str]:
    """The names a public module lists in ``__all__``."""
    init = PACKAGES["trainperf"].joinpath(*module.split(".")[1:], "__init__.py")
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{init}: no __all__")


def trainperf_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of each import of trainperf in a Python file or a shell script's Python lines."""
    if path.suffix == ".sh":
        return [(module, [n.strip() for n in names.split(",") if n.strip()])
                for module, names in SHELL_IMPORT.findall(path.read_text(encoding="utf-8"))]  # fmt: skip
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == "trainperf"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "trainperf":
            found.append((node.module or "", [alias.name for alias in node.names]))
    return found


def internal_imports(path: Path, public: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} import {', '.join(names)}" if names else module
        for module, names in trainperf_imports(path)
        if module not in public or not set(names) <= public[module]
    ]


def test_research_and_the_examples_import_only_the_public_api() -> None:
    public = {module: public_names(module) for module in PUBLIC_MODULES}
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {line}"
        for folder in PUBLIC_USERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".sh")
        for line in internal_imports(path, public)
    )
    assert not wrong, "internal imports outside the plugin (use `trainperf`'s public names):\n" + "\n".join(wrong)


def test_an_internal_import_is_found_in_python_and_in_a_shell_script(tmp_path: Path) -> None:
    study = tmp_path / "study.py"
    study.write_text("import trainperf\nfrom trainperf import read_run, _EXPORTS\nfrom trainperf.judge import stats\n")
    script = tmp_path / "study.sh"
    script.write_text("python3 -c 'from trainperf.measure.device import fingerprint; import trainperf'\n")
    public = {module: public_names(module) for module in PUBLIC_MODULES}
    assert internal_imports(study, public) == ["trainperf import read_run, _EXPORTS", "trainperf.judge import stats"]
    assert internal_imports(script, public) == ["trainperf.measure.device import fingerprint"]
