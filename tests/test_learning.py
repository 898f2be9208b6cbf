"""Every chapter is something to do, not only to watch (issue #15).

For each chapter notebook:

- at least three "Predict" boxes, each answered (``**Answer.**``) before the next one, the
  answer folded (an HTML ``<details>`` block: a dropdown in the book, folded in JupyterLab and
  Colab too) so that it is not on the screen while the reader decides;
- at least three exercises, of all three kinds (derivation, code, what if), each a heading, a
  stub that raises ``NotImplementedError`` and calls its checker, and a solution cell collapsed
  in the book with its output (tag ``hide-cell``), hidden in JupyterLab (``jupyter.source_hidden``
  and ``outputs_hidden``) and in Colab (a ``# @title`` form, ``display-mode: "form"``,
  ``cellView: "form"``), that calls the same checker with ``solution=True``;
- every exercise heading gives its kind, time and difficulty (★☆☆ to ★★★), and its text ends
  with at least one folded hint (``<details class="attn-hint">``) before the solution;
- every checker of the chapter's exercise module is used that way;
- a ``## Summary`` at the end that points to the next chapter;
- every claim of the claims cell has a kind, and every finding computes its untrained value
  (issue #29; :mod:`attn_core.claims` fails a finding that the untrained value passes).
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
#: A Predict box: a blockquote opening with a bold label (portable markdown; the book shows it
#: as a tip admonition, book/_ext/portable_markdown.py; tests/test_portable_markdown.py).
PREDICT = "> **Predict.**"
EXERCISE = re.compile(r"^### Exercise (\d+)\.(\d+) — .+ \((derivation|code|what if), ≈ \d+ min, "
                      r"difficulty (★☆☆|★★☆|★★★)\)", re.M)
#: A folded hint in an exercise's text (at least one before the solution, ARENA's Hint 1).
HINT = re.compile(r'<details class="attn-hint">\n<summary>Hint( \d)?</summary>\n\n.+?\n\n</details>',
                  re.S)
KINDS = {"derivation", "code", "what if"}
CHECK_CALL = re.compile(r"\bex\.(check_\w+)\((\w+)(, solution=True)?\)")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _src(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def _chapter(path: Path) -> int:
    return int(path.name[:2])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_predict_boxes_are_answered(path):
    md = [_src(c) for c in _cells(path) if c["cell_type"] == "markdown"]
    boxes = [i for i, s in enumerate(md) if re.search(rf"^{re.escape(PREDICT)}", s, re.M)]
    assert len(boxes) >= 3, f"{path.name}: {len(boxes)} Predict boxes; at least 3 wanted"
    for n, i in enumerate(boxes):
        end = boxes[n + 1] if n + 1 < len(boxes) else len(md)
        answers = [s for s in md[i + 1:end] if "**Answer.**" in s]
        assert answers, (
            f"{path.name}: Predict box {n + 1} "
            f"({md[i].split(PREDICT, 1)[1][:60].strip()!r}) has "
            f"no '**Answer.**' paragraph before the next box")
        for s in answers:
            assert re.match(r'<details class="attn-answer">\n<summary>[^<]+</summary>\n\n'
                            r'\*\*Answer\.\*\*', s) and s.rstrip().endswith("</details>"), (
                f"{path.name}: the answer to Predict box {n + 1} is not folded in a "
                f"<details class=\"attn-answer\"> block: {s[:80]!r}")
        assert "Commit to an answer" not in md[i], (
            f"{path.name}: Predict box {n + 1} repeats 'Commit to an answer' (the intro says "
            "it once)")


def _exercises(path: Path) -> list[tuple[str, str, dict, dict]]:
    """(heading match, kind, stub cell, solution cell) for every exercise heading."""
    cells = _cells(path)
    out = []
    for i, c in enumerate(cells):
        if c["cell_type"] != "markdown":
            continue
        m = EXERCISE.search(_src(c))
        if not m:
            continue
        assert int(m.group(1)) == _chapter(path), (
            f"{path.name}: exercise {m.group(0)!r} is numbered for another chapter")
        code = [d for d in cells[i + 1:i + 4] if d["cell_type"] == "code"][:2]
        assert len(code) == 2, f"{path.name}: {m.group(0)!r} needs a stub and a solution cell"
        assert HINT.search(_src(c)), (
            f"{path.name}: {m.group(0)!r} needs a folded hint in its text "
            '(<details class="attn-hint"><summary>Hint</summary> ... </details>)')
        out.append((m.group(0), m.group(3), code[0], code[1]))
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_have_stub_checker_and_checked_solution(path):
    exercises = _exercises(path)
    assert len(exercises) >= 3, f"{path.name}: {len(exercises)} exercises; at least 3 wanted"
    kinds = {kind for _, kind, _, _ in exercises}
    assert kinds == KINDS, f"{path.name}: exercise kinds {sorted(kinds)}; want all of {KINDS}"
    for title, _, stub, sol in exercises:
        s, t = _src(stub), _src(sol)
        assert "raise NotImplementedError" in s, f"{path.name}: {title}: the stub must raise"
        stub_calls = [m for m in CHECK_CALL.finditer(s) if not m.group(3)]
        sol_calls = [m for m in CHECK_CALL.finditer(t) if m.group(3)]
        assert stub_calls, f"{path.name}: {title}: the stub cell must call its checker"
        assert sol_calls, (f"{path.name}: {title}: the solution cell must call the checker "
                           f"with solution=True")
        assert stub_calls[0].group(1) == sol_calls[0].group(1), (
            f"{path.name}: {title}: stub and solution call different checkers")
        assert stub_calls[0].group(2) != sol_calls[0].group(2), (
            f"{path.name}: {title}: the solution must have its own name, so that running it "
            f"never overwrites the reader's answer")
        meta = sol.get("metadata", {})
        assert "hide-cell" in meta.get("tags", []), (
            f"{path.name}: {title}: the solution cell must be folded with its output in the "
            "book (tag hide-cell)")
        assert meta.get("jupyter") == {"outputs_hidden": True, "source_hidden": True}, (
            f"{path.name}: {title}: the solution must be hidden in JupyterLab "
            "(metadata jupyter.source_hidden and outputs_hidden)")
        assert meta.get("cellView") == "form" and t.startswith("# @title ") and \
            t.splitlines()[0].endswith('{ display-mode: "form" }'), (
            f"{path.name}: {title}: the solution must be hidden in Colab (a first line "
            "'# @title ... { display-mode: \"form\" }' and metadata cellView 'form')")
        assert "NotImplementedError" not in t, f"{path.name}: {title}: the solution is a stub"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_checker_of_the_chapter_is_used(path):
    from attn_core.exercises import CHECKERS  # noqa: F401 (filled on import of the modules)

    mod = importlib.import_module(f"attn_core.exercises.ch{_chapter(path)}")
    checkers = {n for n, f in vars(mod).items()
                if n.startswith("check_") and callable(f) and hasattr(f, "title")}
    assert checkers, f"attn_core.exercises.ch{_chapter(path)} defines no checkers"
    used = {m.group(1) for _, _, _, sol in _exercises(path)
            for m in CHECK_CALL.finditer(_src(sol)) if m.group(3)}
    assert checkers <= used, f"{path.name}: checkers never used in an exercise: " \
                             f"{sorted(checkers - used)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_ends_with_a_summary(path):
    md = [_src(c) for c in _cells(path) if c["cell_type"] == "markdown"]
    summary = [s for s in md if s.lstrip().startswith("## Summary")]
    assert summary, f"{path.name}: no '## Summary' section"
    assert "Next" in summary[-1], f"{path.name}: the summary must say what comes next"


# ---------------------------------------------------------------------- claims' kinds (#29)

def _claim_calls(path: Path):
    """Every ``<x>.check(...)``/``<x>.holds(...)`` call with a catalogue id, in code cells."""
    import ast
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        src = "\n".join(line for line in _src(cell).splitlines()
                        if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(src)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("check", "holds") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and any(k.arg in ("measured", "ok") for k in node.keywords)):
                yield node


def _is_literal(node) -> bool:
    """A number, a bool, or a tuple/list of them: typed in, not computed."""
    import ast
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_literal(e) for e in node.elts)
    return isinstance(node, ast.Constant)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_claim_has_a_kind_and_findings_compute_their_untrained_value(path):
    """Each claim says whether it is a finding or an identity; each finding's untrained value
    is computed by the chapter (a literal would pass off a typed number as a measurement)."""
    import ast
    calls = list(_claim_calls(path))
    assert calls, f"{path.name}: no claims found"
    kinds = []
    for node in calls:
        kw = {k.arg: k.value for k in node.keywords}
        where = f"{path.name}: claim {node.args[0].value!r}"
        assert "kind" in kw and isinstance(kw["kind"], ast.Constant) \
            and kw["kind"].value in ("finding", "identity"), \
            f"{where} needs kind='finding' or kind='identity' (a literal)"
        kinds.append(kw["kind"].value)
        if kw["kind"].value == "finding":
            assert "untrained" in kw, f"{where} is a finding without untrained="
            assert not _is_literal(kw["untrained"]), \
                f"{where}: untrained= is typed in; compute it from an untrained model"
    assert "finding" in kinds, f"{path.name}: no claim is a finding"


LIVE_FIRST_LINES = ("# Live slider (needs a running kernel: Colab or JupyterLab; the static page "
                    "shows the", "# pre-drawn slider above).")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_live_sliders_have_a_kernel_free_twin_and_no_dead_widgets(path):
    """#31: every chapter has a live ``interact`` slider (Colab, JupyterLab) and, before
    it, its kernel-free twin (``figure_slider``) that works in the static book; the live
    cell's output is removed from the static book (tag remove-output: moving its widgets
    there would recompute nothing) and its first lines say so."""
    cells = _cells(path)
    live = [i for i, c in enumerate(cells)
            if c["cell_type"] == "code" and re.search(r"\binteract(_manual)?\(", _src(c))]
    assert live, f"{path.name}: no live interact slider"
    for i in live:
        c = cells[i]
        lines = _src(c).splitlines()
        assert tuple(lines[:2]) == LIVE_FIRST_LINES, (
            f"{path.name}: cell {i} (interact) must start with the two lines "
            f"{LIVE_FIRST_LINES}")
        assert "remove-output" in c.get("metadata", {}).get("tags", []), (
            f"{path.name}: cell {i} (interact) needs the tag remove-output: its widgets are "
            "dead in the static book")
        before = [d for d in cells[max(0, i - 4):i] if d["cell_type"] == "code"]
        assert any("figure_slider(" in _src(d) for d in before), (
            f"{path.name}: cell {i} (interact) has no kernel-free twin (figure_slider) in "
            "the code cells just before it")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_what_if_solutions_show_their_answer_space_as_a_slider(path):
    """#31: a what-if exercise's folded solution shows the answer as its parameter moves,
    as a kernel-free slider (its output, folded with it)."""
    what_ifs = [(t, sol) for t, kind, _, sol in _exercises(path) if kind == "what if"]
    assert what_ifs, f"{path.name}: no what-if exercise"
    for title, sol in what_ifs:
        assert "figure_slider(" in _src(sol), (
            f"{path.name}: {title}: its solution shows no kernel-free slider")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_claims_cells_fold_their_code(path):
    """#31: the claims cell shows its table, its code folded (tag hide-input), so that the
    Summary follows the last section instead of a page of assertions."""
    for i, c in enumerate(_cells(path)):
        if c["cell_type"] == "code" and re.search(r"\bClaims\(|\bclaims\.(check|holds)\(",
                                                  _src(c)):
            assert "hide-input" in c.get("metadata", {}).get("tags", []), (
                f"{path.name}: cell {i} (claims) must fold its code (tag hide-input)")


# ------------------------------------------------------------------ honest length (#55)
def _reading_time():
    import importlib.util
    spec = importlib.util.spec_from_file_location("reading_time",
                                                  ROOT / "scripts" / "reading_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_opening_states_the_time_the_rule_gives(path):
    """#55: a chapter's stated reading time is the book's rule applied to its text (within
    15 %: the rule is rounded to 5 minutes and prose is edited after), and its exercises'
    time is the sum of their headings'."""
    rt = _reading_time()
    est, said = rt.estimate(path), rt.stated(path)
    assert abs(said["reading"] - est["reading"]) <= 0.15 * est["reading"], (
        f"{path.name} says reading ≈ {said['reading']} min; the rule gives "
        f"{est['reading']:.0f} min (python scripts/reading_time.py)")
    assert said["exercises"] == est["exercises"], (said, est)
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    assert said["n_word"] == words[est["n_exercises"]]


def _hours(text: str) -> float:
    return float(text.replace("½", ".5")) if text[0] != "½" else 0.5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_section_headings_state_the_rule_s_time(path):
    """#55: every timed section heading ("## 2. … (≈ 25 min)") gives the book's rule applied
    to its section (its exercises left out; `python scripts/reading_time.py --set-sections`
    writes them), within 5 minutes or a quarter; so the headings add up to the opening's
    reading time, less the opening, the claims and the summary."""
    rt = _reading_time()
    secs = rt.sections(path)
    assert len(secs) >= 4, [s["heading"] for s in secs]
    off = [(s["heading"][:50], s["stated"], round(s["estimate"], 1)) for s in secs
           if abs(s["stated"] - s["estimate"]) > max(5, 0.25 * s["estimate"])]
    assert not off, f"{path.name}: headings (stated, the rule's): {off}"
    untimed = rt.estimate(path)["reading"] - sum(s["estimate"] for s in secs)
    assert 0 <= untimed <= 0.35 * rt.estimate(path)["reading"], untimed


def test_the_intro_totals_are_the_chapters_sums():
    """#55: the intro's "takes about N hours … and their K exercises about M hours more" is
    the chapters' stated times summed (to the half hour)."""
    rt = _reading_time()
    said = [rt.stated(p) for p in NOTEBOOKS]
    est = [rt.estimate(p) for p in NOTEBOOKS]
    intro = " ".join((ROOT / "book" / "intro.md").read_text(encoding="utf-8").split())
    m = re.search(r"takes about ([\d½]+) hours .*? their (\d+) exercises about ([\d½]+) "
                  r"hours more", intro)
    assert m, "the intro's Time paragraph lost its totals"
    reading, n, exercises = _hours(m.group(1)), int(m.group(2)), _hours(m.group(3))
    assert abs(reading - sum(s["reading"] for s in said) / 60) <= 0.25
    assert abs(exercises - sum(s["exercises"] for s in said) / 60) <= 0.25
    assert n == sum(e["n_exercises"] for e in est)


# ------------------------------------------------------- the statistics taught (#55)
#: The statistics "Reading the numbers" teaches: the first use in every chapter is a link to
#: the glossary entry (which points to that page) or to the page itself.
STATISTICS = ("Wilson", "Fisher", "McNemar", "Newcombe", "Holm", "AUC", "Kaplan-Meier",
              "permutation p-value")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\((https?://[^)\s]+)\)")


def _first_uses(path: Path):
    """(term, cell index, whether that first use sits in a link to the glossary or to
    Reading the numbers) for every term of :data:`STATISTICS` the chapter's prose uses."""
    seen = {}
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "markdown":
            continue
        text = _src(cell)
        spans = [(m.start(1), m.end(1)) for m in _LINK.finditer(text)
                 if "glossary.html#term-" in m.group(2)
                 or "reading_numbers.html" in m.group(2)]
        for term in STATISTICS:
            if term in seen:
                continue
            k = text.find(term)
            if k >= 0:
                seen[term] = (i, any(a <= k < b for a, b in spans))
    return seen


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_use_of_each_statistic_links_to_its_explanation(path):
    unlinked = {t: f"cell {i}" for t, (i, ok) in _first_uses(path).items() if not ok}
    assert not unlinked, f"{path.name}: first use not linked to the glossary: {unlinked}"
