"""One registry of the book's chapters (attn_core/chapters/registry.py), and the layers of
the package it sits on.

- The registered chapters, the chapter modules, the answer checkers and the notebooks on
  disk, and ``_toc.yml``'s notebooks agree, both ways; the package docstrings name every
  registered chapter.
- The import graph of ``attn_core``: the shared library (every module outside
  ``chapters/`` and ``exercises/``) imports no chapter, and no two modules import each other
  round a circle.
- No private name (a leading underscore) crosses a module boundary in ``attn_core``,
  ``scripts/``, ``benchmarks/`` or ``book/_ext`` (tests may reach inside their own module).

Each checker is run on a broken copy too (``test_the_checks_fail_...``), so that a green run
means something.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from attn_core.chapters import registry

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attn_core"


# ------------------------------------------------------------------ chapters, both ways
def registry_problems(root: Path, chapters) -> list[str]:
    """Where the chapters of ``root`` (a checkout) disagree with ``chapters`` (registered)."""
    out = []
    modules = {p.stem for p in (root / "attn_core" / "chapters").glob("ch[0-9]*_*.py")}
    exercises = {p.stem for p in (root / "attn_core" / "exercises").glob("ch[0-9]*.py")}
    notebooks = {p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    in_toc = [e["file"].removeprefix("notebooks/") for e in toc.get("chapters", [])
              if e["file"].startswith("notebooks/")]
    numbers = [c.number for c in chapters]
    if numbers != list(range(1, len(chapters) + 1)):
        out.append(f"the registered chapters are numbered {numbers}, not 1..{len(chapters)}")
    for c in chapters:
        if c.module not in modules:
            out.append(f"chapter {c.number}: no module attn_core/chapters/{c.module}.py")
        if not c.module.startswith(f"ch{c.number}_"):
            out.append(f"chapter {c.number}: its module {c.module} is not named ch{c.number}_*")
        for part in c.parts:
            if part not in modules:
                out.append(f"chapter {c.number}: no part attn_core/chapters/{part}.py")
            if not part.startswith(f"ch{c.number}_"):
                out.append(f"chapter {c.number}: its part {part} is not named ch{c.number}_*")
        if f"ch{c.number}" not in exercises:
            out.append(f"chapter {c.number}: no checkers attn_core/exercises/ch{c.number}.py")
        if c.notebook not in notebooks:
            out.append(f"chapter {c.number}: no notebook notebooks/{c.notebook}.ipynb")
        if not c.notebook.startswith(f"{c.number:02d}_"):
            out.append(f"chapter {c.number}: its notebook {c.notebook} is not named "
                       f"{c.number:02d}_*")
    tests = {p.name for p in (root / "tests").glob("test_*ch[0-9]*.py")}
    intro = (root / "book" / "intro.md").read_text(encoding="utf-8")
    for c in chapters:
        for name in (f"test_ch{c.number}.py", f"test_exercises_ch{c.number}.py"):
            if name not in tests:
                out.append(f"chapter {c.number}: no tests/{name}")
        if not re.search(rf"^\*\*{c.number}\. ", intro, flags=re.M):
            out.append(f"chapter {c.number}: book/intro.md's story has no paragraph "
                       f"'**{c.number}. <title>.**'")
    registered = {m for c in chapters for m in (c.module, *c.parts)}
    out += [f"attn_core/chapters/{m}.py is not registered (registry.CHAPTERS)"
            for m in sorted(modules - registered)]
    out += [f"attn_core/exercises/{e}.py belongs to no registered chapter"
            for e in sorted(exercises - {f"ch{c.number}" for c in chapters})]
    out += [f"notebooks/{n}.ipynb is not registered (registry.CHAPTERS)"
            for n in sorted(notebooks - {c.notebook for c in chapters})]
    if in_toc != [c.notebook for c in chapters]:
        out.append(f"_toc.yml lists the notebooks {in_toc}; the registry, in its order, "
                   f"{[c.notebook for c in chapters]}")
    return out


def test_registered_chapters_agree_with_the_files_and_the_toc():
    assert len(registry.CHAPTERS) == 8
    assert registry_problems(ROOT, registry.CHAPTERS) == []


def test_the_registry_check_names_each_disagreement():
    """A chapter forgotten in each place is named (the check is not vacuous)."""
    extra = registry.Chapter(9, "ch9_lenses", "09_lenses")
    problems = registry_problems(ROOT, (*registry.CHAPTERS, extra))
    assert any("no module attn_core/chapters/ch9_lenses.py" in p for p in problems)
    assert any("no checkers attn_core/exercises/ch9.py" in p for p in problems)
    assert any("no notebook notebooks/09_lenses.ipynb" in p for p in problems)
    assert any("no tests/test_ch9.py" in p for p in problems)
    assert any("no tests/test_exercises_ch9.py" in p for p in problems)
    assert any("book/intro.md's story has no paragraph '**9." in p for p in problems)
    assert any("_toc.yml lists the notebooks" in p for p in problems)
    problems = registry_problems(ROOT, registry.CHAPTERS[:-1])
    assert any("ch8_scorecard.py is not registered" in p for p in problems)
    assert any("notebooks/08_scorecard.ipynb is not registered" in p for p in problems)
    assert any("exercises/ch8.py belongs to no registered chapter" in p for p in problems)


def unexported(chapters) -> list[str]:
    """Every public name of a chapter's parts that its module does not re-export (as the
    same object, and in its ``__all__``)."""
    out = []
    for c in chapters:
        module = c.load()
        for part in c.load_parts():
            for name in part.__all__:
                if getattr(module, name, None) is not getattr(part, name) \
                        or name not in module.__all__:
                    out.append(f"chapter {c.number}: {c.module} does not re-export "
                               f"{part.__name__.rsplit('.', 1)[-1]}.{name}")
    return out


def test_a_chapters_parts_are_re_exported_by_its_module():
    assert [c.parts for c in registry.CHAPTERS if c.parts]            # one chapter has them
    assert unexported(registry.CHAPTERS) == []
    wrong = registry.Chapter(7, "ch7_end_token", "07_end_token", parts=("ch6_transformer",))
    assert any("does not re-export ch6_transformer.TransformerSeq2Seq" in p
               for p in unexported([wrong]))
    others = tuple(c for c in registry.CHAPTERS if c.number != 7)
    problems = registry_problems(ROOT, (*others[:6], wrong, *others[6:]))
    assert "chapter 7: its part ch6_transformer is not named ch7_*" in problems
    assert "attn_core/chapters/ch7_runs.py is not registered (registry.CHAPTERS)" in problems


def test_every_registered_chapter_loads_and_the_docstrings_name_it():
    import attn_core
    import attn_core.chapters

    for c in registry.CHAPTERS:
        assert c.load().__name__ == c.module_name
        assert c.exercises().__name__ == c.exercises_name
        assert c.about, f"chapter {c.number} has no 'about' line"
        line = f"- :mod:`.{c.module}` chapter {c.number}: {c.about}"
        assert line in attn_core.chapters.__doc__, line
    assert "{chapters}" not in attn_core.chapters.__doc__
    assert ":mod:`attn_core.chapters.registry`" in attn_core.__doc__
    assert registry.chapter(8) is registry.CHAPTERS[-1]
    with pytest.raises(ValueError, match=r"number must be one of the registered chapters"):
        registry.chapter(9)
    with pytest.raises(TypeError, match="number"):
        registry.chapter("7")


def test_stored_configs_and_live_checks_come_from_the_registry():
    with_stored = [c.number for c in registry.CHAPTERS if c.has_stored_runs]
    assert with_stored == [4, 5, 6, 7]
    checks = registry.live_checks()
    assert [c.config for c in checks] == registry.stored_configs()
    assert sorted({c.chapter for c in checks}) == with_stored


# -------------------------------------------------------------------------- the imports
def _module_name(path: Path, root: Path) -> str:
    parts = path.with_suffix("").relative_to(root).parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path) -> list[tuple[int, str, str | None]]:
    """(line, module imported, name imported from it or None) for every import in ``path``,
    relative imports resolved."""
    me = _module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out += [(node.lineno, target, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names]
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """{module of attn_core: the attn_core modules it imports} (a ``from package import
    module`` counts as importing the module)."""
    files = sorted((root / "attn_core").rglob("*.py"))
    modules = {_module_name(f, root) for f in files}
    graph = {}
    for f in files:
        edges = set()
        for _, target, name in _imports(f, root):
            if not target.startswith("attn_core"):
                continue
            sub = f"{target}.{name}" if name else None
            edges.add(sub if sub in modules else target)
        graph[_module_name(f, root)] = edges - {_module_name(f, root)}
    return graph


def layer_problems(graph: dict[str, set[str]]) -> list[str]:
    """A shared-library module that imports a chapter (or the registry, or a checker)."""
    upper = ("attn_core.chapters.", "attn_core.exercises")
    out = []
    for module, edges in sorted(graph.items()):
        if module.startswith(upper) or module in ("attn_core.chapters",):
            continue
        out += [f"{module} imports {e}" for e in sorted(edges)
                if e.startswith(upper) or e == "attn_core.chapters"]
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle (as a list of modules, the first repeated at the end), each once."""
    found, seen = [], set()

    def visit(node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                circle = path[path.index(nxt):] + [nxt]
                key = frozenset(circle)
                if key not in seen:
                    seen.add(key)
                    found.append(circle)
            elif len(path) < 20:
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def test_the_library_imports_no_chapter_and_nothing_imports_in_a_circle():
    graph = import_graph(ROOT)
    assert "attn_core.stored" in graph and "attn_core.chapters.ch7_end_token" in graph
    assert layer_problems(graph) == []
    assert cycles(graph) == []


def test_the_import_checks_fail_a_layer_breach_and_a_circle():
    graph = import_graph(ROOT)
    graph["attn_core.stored"] = graph["attn_core.stored"] | {"attn_core.chapters.ch6_transformer"}
    assert layer_problems(graph) == [
        "attn_core.stored imports attn_core.chapters.ch6_transformer"]
    found = cycles(graph)
    assert found and all(c[0] == c[-1] for c in found)
    assert any("attn_core.stored" in c and "attn_core.chapters.ch6_transformer" in c
               for c in found)


# ------------------------------------------------------------------------ private names
def private_crossings(root: Path, folders=("attn_core", "scripts", "benchmarks",
                                             "book/_ext")) -> list[str]:
    """Every use of another module's private name: ``from m import _x`` and ``m._x`` where
    ``m`` is an imported ``attn_core`` module or one of its names."""
    out = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            me = _module_name(path, root)
            imported = {}
            for line, target, name in _imports(path, root):
                if not target.startswith("attn_core"):
                    continue
                if name and name.startswith("_") and not name.startswith("__") \
                        and target != me:
                    out.append(f"{path.relative_to(root)}:{line}: from {target} "
                               f"import {name}")
                if name is None:
                    imported[target.split(".")[0]] = target
                else:
                    imported[name] = f"{target}.{name}"
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in imported and node.attr.startswith("_")
                        and not node.attr.startswith("__")):
                    out.append(f"{path.relative_to(root)}:{node.lineno}: "
                               f"{node.value.id}.{node.attr} ({imported[node.value.id]})")
    return out


def test_no_private_name_crosses_a_module_boundary():
    found = private_crossings(ROOT)
    assert not found, ("private names used across modules (make them public, documented "
                       "API, or keep them inside):\n" + "\n".join(found))


def test_the_private_name_check_finds_both_forms(tmp_path):
    (tmp_path / "attn_core").mkdir()
    (tmp_path / "attn_core" / "a.py").write_text("def _x():\n    pass\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "s.py").write_text(
        "from attn_core.a import _x\nfrom attn_core import a\na._x()\na.__name__\n")
    found = private_crossings(tmp_path, ("attn_core", "scripts"))
    assert [re.sub(r":\d+:", ":", f) for f in found] == [
        "scripts/s.py: from attn_core.a import _x", "scripts/s.py: a._x (attn_core.a)"]


# ------------------------------------------------------------- a ninth chapter, throwaway
def _copy_for_a_new_chapter(tmp_path: Path) -> Path:
    """The parts of the checkout the chapter checks read, copied."""
    import shutil

    root = tmp_path / "book-copy"
    for folder in ("attn_core/chapters", "attn_core/exercises", "notebooks", "tests"):
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    (root / "book").mkdir()
    shutil.copy(ROOT / "book" / "intro.md", root / "book" / "intro.md")
    shutil.copy(ROOT / "_toc.yml", root / "_toc.yml")
    return root


#: Adding chapter 9, step by step (CONTRIBUTING.md, "Adding a chapter"): what each step
#: writes, and the words the check's message names it by when the step is forgotten.
def _steps(root: Path):
    def module():
        (root / "attn_core/chapters/ch9_lenses.py").write_text('"""Chapter 9."""\n')

    def checkers():
        (root / "attn_core/exercises/ch9.py").write_text('"""Chapter 9\'s checkers."""\n')

    def notebook():
        shutil_copy = (root / "notebooks/07_end_token.ipynb").read_text()
        (root / "notebooks/09_lenses.ipynb").write_text(shutil_copy)

    def chapter_tests():
        (root / "tests/test_ch9.py").write_text("def test_x():\n    pass\n")

    def exercise_tests():
        (root / "tests/test_exercises_ch9.py").write_text("def test_x():\n    pass\n")

    def toc():
        text = (root / "_toc.yml").read_text()
        (root / "_toc.yml").write_text(text.replace(
            "  - file: notebooks/08_scorecard\n",
            "  - file: notebooks/08_scorecard\n  - file: notebooks/09_lenses\n"))

    def intro():
        with open(root / "book/intro.md", "a") as f:
            f.write("\n**9. The lenses.** A lens that reads the model.\n")

    return [(module, "no module attn_core/chapters/ch9_lenses.py"),
            (checkers, "no checkers attn_core/exercises/ch9.py"),
            (notebook, "no notebook notebooks/09_lenses.ipynb"),
            (chapter_tests, "no tests/test_ch9.py"),
            (exercise_tests, "no tests/test_exercises_ch9.py"),
            (toc, "_toc.yml lists the notebooks"),
            (intro, "book/intro.md's story has no paragraph '**9.")]


def test_an_eighth_chapter_forgotten_in_any_place_is_named(tmp_path):
    """A throwaway chapter 9 in a copy of the checkout: with every step done the chapter
    checks pass; with any one step left out they fail, naming that step (and not registering
    it at all is named too)."""
    eighth = registry.Chapter(9, "ch9_lenses", "09_lenses", "the lenses")
    chapters = (*registry.CHAPTERS, eighth)
    steps = _steps(_copy_for_a_new_chapter(tmp_path / "whole"))
    root = tmp_path / "whole" / "book-copy"
    for step, _ in steps:
        step()
    assert registry_problems(root, chapters) == []
    problems = registry_problems(root, registry.CHAPTERS)           # written, not registered
    assert any("ch9_lenses.py is not registered" in p for p in problems), problems
    for i, (_, words) in enumerate(_steps(tmp_path)):
        where = tmp_path / f"without-{i}"
        _copy_for_a_new_chapter(where)
        copy = where / "book-copy"
        for j, (step, _) in enumerate(_steps(copy)):
            if j != i:
                step()
        problems = registry_problems(copy, chapters)
        assert problems and all(words in p for p in problems), (words, problems)


# ------------------------------------------------- every chapter's public API, probed
def _takes_arguments(obj) -> bool:
    import inspect

    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return True
    return any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values())


def unprobed(chapters, probe_ids, property_labels) -> list[str]:
    """The public callables of ``chapters`` (their modules' ``__all__``) with no bad-input
    case: every callable that takes an argument needs a probe case (an id starting with
    its name, then '-' or '.'); every experiment config also an entry in the property tests
    (labelled ``<module>.<Name>``)."""
    from attn_core.chapters._experiment import Experiment

    out = []
    for c in chapters:
        module = c.load()
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or not _takes_arguments(obj):
                continue
            if not any(re.match(rf"{re.escape(name)}(?:[-.]|$)", i) for i in probe_ids):
                out.append(f"chapter {c.number}: {name} has no case in tests/test_api_probe.py")
            config = isinstance(obj, type) and issubclass(obj, Experiment)
            if config and f"{c.module}.{name}" not in property_labels:
                out.append(f"chapter {c.number}: the config {name} has no entry in "
                           f"tests/test_properties.py")
    return out


def test_every_public_callable_of_every_chapter_has_bad_input_cases():
    import test_api_probe
    import test_properties

    probe_ids = [p.id for p in test_api_probe.CHAPTERS]
    labels = {entry[0] for entry in test_properties.API}
    assert unprobed(registry.CHAPTERS, probe_ids, labels) == []


def test_the_coverage_check_names_what_is_not_probed():
    probe_ids = ["KeywordConfig-length-float"]
    found = unprobed(registry.CHAPTERS[:1], probe_ids, set())
    assert "chapter 1: the config KeywordConfig has no entry in tests/test_properties.py" in found
    assert not any("KeywordConfig has no case" in f for f in found)
    assert any("has no case in tests/test_api_probe.py" in f for f in found)
