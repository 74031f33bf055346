"""The shape of the code, checked: the import graph of specviz/ is acyclic, no module imports another
inside a function to dodge a circle, no private name is used outside its module, the engine never
imports Streamlit, and no engine function outgrows a screen."""
import ast
import pathlib

import pytest

pytestmark = pytest.mark.fast
PKG = pathlib.Path(__file__).resolve().parent.parent / "specviz"
# __main__ imports the engine inside decode() on purpose: `--help` and bad input answer before torch loads
# practice.live_drills the same for its live drills: formula drills and `drill --list` answer without torch
LAZY_OK = {"specviz.__main__", "specviz.practice.live_drills"}
# the engine is whatever lives in these folders and core modules: derived from the tree, never listed file by file
ENGINE_DIRS = ["engine", "drafters"]
CORE = ["verify.py", "sampling.py", "trace.py", "stepper.py", "tokens.py"]


def engine_files():
    return sorted(f for d in ENGINE_DIRS for f in (PKG / d).glob("*.py")) + [PKG / f for f in CORE]


def modules():
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text())


def resolve(module: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_pkg else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name, path, tree):
    """(imported specviz module, the import node, at top level?) for every import of specviz code."""
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = resolve(name, node, path.name == "__init__.py")
            if target.startswith("specviz"):
                yield target, node, id(node) in top
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("specviz"):
                    yield alias.name, node, id(node) in top


def known(target, names):
    while target and target not in names:
        target = target.rpartition(".")[0]
    return target


def test_import_graph_is_acyclic_and_imports_are_at_the_top():
    mods = {name: (path, tree) for name, path, tree in modules()}
    graph = {name: set() for name in mods}
    lazy = []
    for name, (path, tree) in mods.items():
        for target, node, at_top in imports(name, path, tree):
            target = known(target, mods)
            if target and target != name:
                graph[name].add(target)
                if not at_top and name not in LAZY_OK:
                    lazy.append(f"{name}:{node.lineno} imports {target} inside a function")
    assert not lazy, lazy
    seen, stack = set(), []

    def visit(n):
        if n in stack:
            raise AssertionError("import circle: " + " -> ".join(stack[stack.index(n):] + [n]))
        if n in seen:
            return
        stack.append(n)
        for m in graph[n]:
            visit(m)
        stack.pop()
        seen.add(n)

    for n in graph:
        visit(n)


def test_no_private_name_is_used_outside_its_module():
    leaks = []
    for name, path, tree in modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.ImportFrom)
                    and resolve(name, node, path.name == "__init__.py").startswith("specviz")):
                leaks += [f"{name} imports {a.name}" for a in node.names
                          if a.name.startswith("_") and a.name != "__version__"]
    assert not leaks, leaks


def test_the_engine_never_imports_streamlit():
    for name, path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.startswith("streamlit") for n in names), f"{name}:{node.lineno}"


def test_engine_functions_fit_on_a_screen():
    long = []
    files = engine_files()
    assert {"plain.py", "beam.py", "speculative.py", "tree.py", "lookahead.py", "batched.py"} <= {f.name for f in files}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_every_function_fits_on_a_screen_and_every_page_under_300_lines():
    """No function over 60 lines anywhere in specviz/, ui/ or pages/ (a whole idea on a screen), no page over 300
    lines (a page composes: the work is in the layers below)."""
    root = PKG.parent
    long = []
    files = list(PKG.rglob("*.py")) + list((root / "ui").glob("*.py")) + list((root / "pages").glob("*.py"))
    for path in sorted(files):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60:
                long.append(f"{path.relative_to(root)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long
    pages = {p.name: len(p.read_text().splitlines()) for p in (root / "pages").glob("*.py")}
    assert pages and all(n <= 300 for n in pages.values()), pages


def test_every_module_sits_in_a_layer_folder():
    """specviz/ itself holds only the shared core and the command-line entries; algorithms live in engine/,
    measurements in labs/, drafters, figures, training, practice and the Q&A in their own packages."""
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == sorted(["__init__.py", "__main__.py", "bench.py", "distill.py", "errors.py", "lesson.py",
                          "medusa_choices.py", "packed.py", "prompting.py", "replay.py",
                          "roofline.py", "sampling.py", "stepper.py", "theory.py", "tokens.py", "trace.py",
                          "verify.py"]), top
    packages = sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file())
    assert packages == ["drafters", "engine", "figures", "labs", "loading", "practice", "qa", "training",
                        "views"], packages


# The layers, bottom first. A module may import its own layer folder and the layers below, never one above or
# beside it (figures and labs are siblings: a figure draws trace dataclasses, never a lab's). A package folder is its
# own layer; the top-level modules are the shared core, except the entries named here.
LAYERS = [["core"], ["qa", "drafters"], ["engine"], ["loading"], ["labs", "figures", "practice"], ["training"],
          ["views"], ["entries"]]
TOP_LEVEL = {"lesson": "entries", "__main__": "entries", "bench": "entries", "distill": "entries"}


def layer_of(module: str) -> str:
    """specviz.engine.loop -> engine; specviz.lesson -> entries; specviz.verify -> core (derived from the tree)."""
    parts = module.split(".")[1:]
    if not parts:
        return "core"
    if (PKG / parts[0]).is_dir():
        return parts[0]
    return TOP_LEVEL.get(parts[0], "core")


def test_imports_only_point_down_the_layers():
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    folders = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert folders <= set(rank), f"a package folder with no layer: {folders - set(rank)}"
    mods = {name for name, _, _ in modules()}
    up = []
    for name, path, tree in modules():
        for target, node, _ in imports(name, path, tree):
            if isinstance(node, ast.ImportFrom) and resolve(name, node, path.name == "__init__.py") == "specviz":
                targets = [f"specviz.{a.name}" if f"specviz.{a.name}" in mods else "specviz" for a in node.names]
            else:
                targets = [known(target, mods) or target]
            for t in targets:
                a, b = layer_of(name), layer_of(t)
                if a != b and rank[b] >= rank[a]:
                    up.append(f"{name}:{node.lineno} ({a}) imports {t} ({b})")
    assert not up, up
