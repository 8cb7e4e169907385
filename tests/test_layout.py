"""The house rule: arrows only point down (README, "Layout of the code").

    deja (deja_root/: version, front door) ─► pipeline (CLI, index run) ─► hooks ─► queries ─► stages ─► stages.store

Every import of a deja module, at module level or inside a function, is read
from the source with ``ast`` and must point to the same floor or one below.
A floor may import itself; two floors never import each other (no cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# folder → import name, highest floor first
FLOORS = [
    ("deja_root", "deja"),  # the package root: not a folder named deja, which would shadow the
                              # installed package for any process started in a checkout
    ("pipeline", "deja.pipeline"),
    ("hooks", "deja.hooks"),
    ("queries", "deja.queries"),
    ("stages", "deja.stages"),
    ("stages/store", "deja.stages.store"),
]
LEVEL = {name: len(FLOORS) - i for i, (_, name) in enumerate(FLOORS)}


def floor_of(module: str) -> str | None:
    """The deepest floor whose name prefixes ``module``."""
    best = None
    for _, name in FLOORS:
        if module == name or module.startswith(name + "."):
            if best is None or len(name) > len(best):
                best = name
    return best


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    folder = rel.parts[0]
    base = dict(FLOORS)[folder] if folder != "stages" else "deja.stages"
    parts = list(rel.parts[1:])
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([base, *parts])


def sources() -> list[Path]:
    files = []
    for folder, _ in FLOORS:
        if "/" in folder:
            continue
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every deja import in ``path``, relative ones resolved."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "deja"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "deja":
                continue
            if node.module is None or node.level:
                # `from . import x`: x may be a module of that package
                found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
            else:
                found += [(node.lineno, target)] + [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return found


def edges() -> list[tuple[str, int, str, str]]:
    out = []
    for path in sources():
        src = floor_of(module_name(path))
        for line, target in imports_of(path):
            dst = floor_of(target)
            if dst is not None and dst != src:
                out.append((str(path.relative_to(ROOT)), line, src, dst))
    return out


def test_every_import_points_down_a_floor():
    upward = [f"{f}:{line}: {src} imports {dst}" for f, line, src, dst in edges() if LEVEL[dst] > LEVEL[src]]
    assert upward == []


def test_no_two_floors_import_each_other():
    pairs = {(src, dst) for _, _, src, dst in edges()}
    cycles = sorted(f"{a} <-> {b}" for a, b in pairs if (b, a) in pairs and a < b)
    assert cycles == []


def test_the_rule_sees_upward_imports(tmp_path):
    """The checker itself: a relative import climbing out of the store floor is caught."""
    mod = ROOT / "stages" / "store" / "catalog.py"
    found = dict((t, line) for line, t in imports_of(mod))
    assert any(t.startswith("deja.stages.store.") for t in found)
    assert floor_of("deja.stages.store.read") == "deja.stages.store"
    assert floor_of("deja.stages.tokenize") == "deja.stages"
    assert floor_of("deja.pipeline.cli") == "deja.pipeline"
    assert LEVEL["deja.hooks"] > LEVEL["deja.queries"] > LEVEL["deja.stages"] > LEVEL["deja.stages.store"]


def test_comments_name_paths_that_exist():
    """A path a comment or docstring gives (``stages/store/merge.py``) is a file of the project."""
    import re

    files = {p.relative_to(ROOT).as_posix() for folder, _ in FLOORS for p in (ROOT / folder).rglob("*")}
    files |= {p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/*") if p.is_file()}
    stale = []
    for path in sources():
        for i, line in enumerate(path.read_text().splitlines(), 1):
            for ref in re.findall(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.(?:py|sql|md))\b", line):
                if not any(f == ref or f.endswith("/" + ref) for f in files):
                    stale.append(f"{path.relative_to(ROOT)}:{i}: {ref}")
    assert stale == []


def test_readme_layout_names_every_module():
    """The README's layout section matches the tree: every module of a floor is named
    there (those of sources/, recover/ and packet/ by their folder)."""
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Layout of the code", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"[\w*<>]+(?=\.py\b)", section)) | set(re.findall(r"\b\w+\b", section))
    missing = []
    for folder in ("deja_root", "pipeline", "hooks", "queries", "stages", "stages/store"):
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.stem not in ("__init__", "__main__") and path.stem not in named:
                missing.append(path.relative_to(ROOT).as_posix())
    for folder in ("stages/sources", "stages/recover", "hooks/packet", "queries/sql", "docs"):
        if folder.split("/")[-1] + "/" not in section:
            missing.append(folder + "/")
    assert missing == []


def test_no_folder_of_the_checkout_shadows_the_package():
    """A process started in a checkout (a reader process, `python -m deja`, a
    bench) puts the checkout on sys.path: a folder named ``deja`` there would
    hide the installed package from it."""
    assert not (ROOT / "deja").exists()
