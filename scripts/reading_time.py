"""How long a chapter takes a learner to read, by one stated rule, and what each chapter says.

The rule (the intro's "Time" paragraph states it): prose with maths at 70 words a minute
(the words a reader sees: link targets, HTML tags and LaTeX command names not counted) and
1.5 minutes to read and run each code cell, over everything but the exercises; each
exercise at the time its heading gives ("≈ 15 min"), which includes reading it.

    python scripts/reading_time.py          # the table: estimate against the stated times
    python scripts/reading_time.py --sections      # each timed section heading, and the rule's
    python scripts/reading_time.py --set-sections  # write the rule's time into those headings

``tests/test_learning.py`` checks that every chapter's opening states its reading time
within 15 % of the estimate and its exercises' time as the sum of their headings, and that
the intro's totals are the chapters' sums.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS_PER_MINUTE = 70
MINUTES_PER_CODE_CELL = 1.5
_HEADING = re.compile(r"(?m)^(#{1,3} .*)$")
_EXERCISE = re.compile(r"^#{2,3} Exercise \d+\.\d+ .*?≈ (\d+) min")


def words(markdown: str) -> int:
    """The words a reader sees in ``markdown``."""
    text = re.sub(r"\]\([^)]*\)", "]", markdown)        # link targets
    text = re.sub(r"<[^>]+>", " ", text)                # HTML tags
    text = re.sub(r"\\[A-Za-z]+", " ", text)            # LaTeX command names
    return len(re.findall(r"[A-Za-z0-9]+", text))


def _ends_exercise(cell: dict) -> bool:
    """An exercise's folded solution (a code cell "# @title Solution …") is its last cell: the
    section goes on after it."""
    return cell["cell_type"] == "code" and "".join(cell["source"]).startswith(
        "# @title Solution")


_TIMED = re.compile(r"^(#{2,3} (?!Exercise ).*?\(≈ )(\d+)( min\).*)$")


def _walk(path: Path) -> tuple[list, list[int]]:
    """One pass of the rule over a notebook: its reading, as ``(section, minutes)`` parts
    (``section``: the dict of the timed section heading the part belongs to, or None for
    the opening and anything under a heading without a time, such as "## Claims"), and each
    exercise's minutes from its heading. An exercise runs from its heading to its solution
    cell; what follows belongs to the section again."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    parts, exercises = [], []
    section, in_exercise = None, False
    for cell in cells:
        if cell["cell_type"] != "markdown":
            if not in_exercise:
                parts.append((section, MINUTES_PER_CODE_CELL))
            elif _ends_exercise(cell):
                in_exercise = False
            continue
        pieces = _HEADING.split("".join(cell["source"]))
        if not in_exercise:
            parts.append((section, words(pieces[0]) / WORDS_PER_MINUTE))
        for heading, body in zip(pieces[1::2], pieces[2::2]):
            m = _EXERCISE.match(heading)
            in_exercise = m is not None
            if in_exercise:
                exercises.append(int(m.group(1)))
                continue
            timed = _TIMED.match(heading)
            section = {"heading": heading, "stated": int(timed.group(2))} if timed else None
            parts.append((section, words(heading + body) / WORDS_PER_MINUTE))
    return parts, exercises


def estimate(path: Path) -> dict:
    """``{"reading": minutes, "exercises": minutes, "n_exercises": n}`` for one notebook
    (:func:`_walk`)."""
    parts, exercises = _walk(path)
    return {"reading": sum(m for _, m in parts), "exercises": sum(exercises),
            "n_exercises": len(exercises)}


def sections(path: Path) -> list[dict]:
    """Each section heading that states a time ("## 2. … (≈ 25 min)", not an exercise's): its
    ``heading``, the ``stated`` minutes and the rule's ``estimate`` for its text and code
    cells, from it to the next heading, its exercises left out (:func:`_walk`)."""
    out = {}
    for section, minutes_ in _walk(path)[0]:
        if section is not None:
            out.setdefault(id(section), {**section, "estimate": 0.0})["estimate"] += minutes_
    return list(out.values())


def rounded(minutes_: float) -> int:
    """A section's time as its heading gives it: to the nearest 5 minutes, at least 5."""
    return max(5, int(5 * round(minutes_ / 5)))


def set_section_times(path: Path) -> int:
    """Rewrite every timed section heading of ``path`` to the rule's time
    (:func:`rounded`); returns how many changed."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    want = {s["heading"]: rounded(s["estimate"]) for s in sections(path)}
    changed = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines = "".join(cell["source"]).split("\n")
        for i, line in enumerate(lines):
            m = _TIMED.match(line)
            if m and line in want and int(m.group(2)) != want[line]:
                lines[i] = f"{m.group(1)}{want[line]}{m.group(3)}"
                changed += 1
        text = "\n".join(lines)
        cell["source"] = [ln + "\n" for ln in text.split("\n")[:-1]] + (
            [text.split("\n")[-1]] if text.split("\n")[-1] else [])
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    return changed


_DURATION = r"(?:(\d+) h(?: (\d+) min)?|(\d+) min)"
STATED = re.compile(r"\*\*Time\.\*\* Reading ≈ " + _DURATION + r"(?: \([^)]*\))?, the (\w+) "
                    r"exercises ≈ "
                    + _DURATION)


def minutes(groups) -> int:
    h, hm, m = groups
    return int(h) * 60 + int(hm or 0) if h else int(m)


def stated(path: Path) -> dict:
    """The opening's "**Time.** Reading ≈ …, the N exercises ≈ …" of one notebook."""
    opening = "".join(json.loads(Path(path).read_text(encoding="utf-8"))["cells"][0]["source"])
    m = STATED.search(" ".join(opening.split()))
    if m is None:
        raise ValueError(f"{Path(path).name}: its opening has no '**Time.** Reading ≈ …, the "
                         "N exercises ≈ …' sentence")
    g = m.groups()
    return {"reading": minutes(g[0:3]), "n_word": g[3], "exercises": minutes(g[4:7])}


def main() -> None:
    if "--set-sections" in sys.argv[1:]:
        for path in sorted((ROOT / "notebooks").glob("0*.ipynb")):
            print(f"{path.name}: {set_section_times(path)} section heading(s) changed")
        return
    if "--sections" in sys.argv[1:]:
        for path in sorted((ROOT / "notebooks").glob("0*.ipynb")):
            for sec in sections(path):
                print(f"{path.name[:2]} {sec['stated']:3d} min stated, {sec['estimate']:5.1f} "
                      f"by the rule: {sec['heading'][:60]}")
        return
    total = {"reading": 0.0, "exercises": 0}
    for path in sorted((ROOT / "notebooks").glob("0*.ipynb")):
        e = estimate(path)
        try:
            s = stated(path)
        except ValueError as err:
            s = {"reading": None, "exercises": None}
            print(err, file=sys.stderr)
        total["reading"] += e["reading"]
        total["exercises"] += e["exercises"]
        print(f"{path.name:28s} reading: estimate {e['reading']:4.0f} min, stated "
              f"{s['reading']}; {e['n_exercises']} exercises: {e['exercises']} min, stated "
              f"{s['exercises']}")
    print(f"all chapters: reading {total['reading'] / 60:.1f} h, exercises "
          f"{total['exercises'] / 60:.1f} h")


if __name__ == "__main__":
    main()
