"""The claims cell: show the evidence for a chapter's claims, then assert them all at once.

Every chapter ends its experiments with one *claims cell*. It collects each claim of the
chapter (keyed by its experiment-catalogue id, e.g. ``"P2"``) together with the value the
experiment measured, the test the value must pass and, where the paper gives one, the paper's
value; it shows all of that as one table (HTML in a notebook, plain text elsewhere), and only
then asserts. A failing claim
therefore never hides the others: the reader sees the whole table, and the single
:class:`AssertionError` lists every claim that failed, with its full statement::

    from attn_core.claims import Claims

    c = Claims("Chapter 4")
    c.check("P2", "permutations succeed less often than the control (difference)",
            kind="finding", measured=gap, op=">=", threshold=0.4, paper="≈ 0.5",
            untrained=gap_at_step_0)
    c.check("P5", "proxy spread under permutations", kind="identity", measured=spread,
            op="<", threshold=1e-6)
    c.holds("G6", "late: γ_L exceeds every other γ on every seed", kind="finding",
            ok=late_wins, measured="3/3 seeds", untrained=wins_at_step_0)
    c.show()        # the evidence, as a table (shown, and returned as plain text)
    c.assert_all()  # one AssertionError naming every failed claim; else "all 3 claims ... hold"

Every claim has a **kind**. A *finding* is what training (or the data) produced: a model that
was not trained, or whose parameter the claim is about was frozen, must fail it, and the claim
carries the value such a model gives (``untrained=``, computed by the chapter, usually from the
evaluation at step 0). A finding whose untrained value passes its own threshold counts as failed
(the threshold cannot tell training from no training). An *identity* is a check of the code
against its maths or its configuration (an ODE against its closed form, a metric against its
definition): worth keeping, but it is not evidence that training behaved as the paper says. The
table shows the two kinds apart, and its summary counts them apart ("12 findings and 15
identities hold").

Comparisons (``op``): ``"<"``, ``"<="``, ``">"``, ``">="``, ``"=="``, ``"!="`` against a finite
number; ``"in"`` with ``threshold=(low, high)``, the closed interval ``low <= x <= high``; and
``"≈"`` with ``threshold=(target, tol)``, meaning ``|x - target| <= tol`` (up to float rounding,
1e-12 relative, so ``0.55`` is within ``0.05`` of ``0.5``). A sequence or array of
measured values (one per seed, say) must pass for *every* element.

A non-finite measurement never passes: NaN, ``inf`` and ``-inf`` fail every comparison,
``"!="`` and ``">"`` included, and one non-finite element fails a sequence ("every seed
>= 0.95" fails with one seed at ``inf``). A measured ``inf`` is almost always a division by
zero or an overflow, not evidence: a claim about a ratio that may legitimately be unbounded
must say so itself (test the denominator with :meth:`Claims.holds`). The same rule reads an
``untrained=`` value: a non-finite one fails the test, like any untrained value that fails it.
"""

from __future__ import annotations

import html as _html

import math
import numbers
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Claim", "Claims", "KINDS", "OPS", "format_number"]

#: The comparisons :meth:`Claims.check` understands.
OPS = ("<", "<=", ">", ">=", "==", "!=", "in", "≈")
_PAIR_OPS = ("in", "≈")
_HOLDS = "holds"  # the op recorded for Claims.holds
_ROUNDING = 1e-12  # relative slack of "≈", so that float rounding cannot flip a boundary case

# Column caps of the printed table: claim, statement, measured, threshold, paper, mark.
# 7 + 33 + 15 + 10 + 9 + 1 plus four 2-space gaps and one space before the mark = 84
# characters at most: the book's text column shows 85 characters of monospace output
# without a horizontal scrollbar (tests/test_browser.py checks every chapter's table).
_WIDTHS = (7, 33, 15, 10, 9, 1)
MAX_WIDTH = 84
_HEADER = ("claim", "statement", "measured", "threshold", "paper", "")
_GAP = "  "
_PASS, _FAIL = "✓", "✗"

#: The kinds of claim: what training found, and what only checks the code against its maths.
KINDS = ("finding", "identity")
_KIND_TITLES = {
    "finding": "Findings: training produced these; an untrained model fails each",
    "identity": "Identities: the code agrees with its maths or its configuration",
}


# ------------------------------------------------------------------------------- formatting

def format_number(x) -> str:
    """``x`` compactly: ints as ints, 3 significant digits, scientific when tiny or huge.

    >>> [format_number(v) for v in (3, 0.6, 0.123456, 12.345, 1234.5, 3e-9, 2.5e7, True)]
    ['3', '0.6', '0.123', '12.3', '1234', '3e-9', '2.5e7', 'True']
    """
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if not _is_real(x):
        raise TypeError(f"x must be a real number or a bool; got {type(x).__name__} {x!r:.60}")
    if isinstance(x, (numbers.Integral, np.integer)):
        x = int(x)
        return str(x) if abs(x) < 10**7 else _sci(float(x))
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    ax = abs(x)
    if ax < 1e-3 or ax >= 1e5:
        return _sci(x)
    if ax >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def _shown_len(text: str) -> int:
    """How many columns ``text`` takes in a monospace table: combining marks (the bar of
    γ̄) take none, so padding by ``len`` would eat the gap after them."""
    return sum(not unicodedata.combining(ch) for ch in text)


def _sci(x: float) -> str:
    mantissa, exponent = f"{x:.2e}".split("e")  # 3 significant digits
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def _format_values(values: tuple, limit: int = _WIDTHS[2]) -> str:
    """A sequence of measured values: the list when short, else its range and count."""
    listed = "[" + ", ".join(format_number(v) for v in values) + "]"
    if len(listed) <= limit:
        return listed
    arr = np.asarray(values, dtype=float)
    n, n_nan = arr.size, int(np.isnan(arr).sum())
    if n_nan == n:
        return f"all nan (n={n})"
    lo, hi = format_number(np.nanmin(arr)), format_number(np.nanmax(arr))
    text = f"{lo}..{hi} (n={n})"
    return text if not n_nan else f"{lo}..{hi}+nan (n={n})"


def _fit(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with a trailing "…" if longer."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


# ---------------------------------------------------------------------------------- records

def _smoke_note() -> str:
    """Said after a claims table measured in a smoke run (ATTN_MAX_STEPS)."""
    from .config import env_max_steps
    cap = env_max_steps()
    return "" if cap is None else f" (SMOKE RUN, ATTN_MAX_STEPS={cap}: not checked)"


@dataclass(frozen=True)
class Claim:
    """One checked claim: what was claimed, what was measured, and whether it held.

    ``measured`` is a ``bool``/``int``/``float``, a tuple of numbers (every element was
    compared), or, for :meth:`Claims.holds`, whatever description was given (``str`` or
    ``None`` included). ``op`` is one of :data:`OPS`, or ``"holds"`` for a boolean fact.
    ``failing`` holds the indices of the elements that failed when ``measured`` is a tuple.
    ``kind`` is ``"finding"`` or ``"identity"``; a finding carries ``untrained``, the value a
    model that was not trained gives (a bool for :meth:`Claims.holds`), and
    ``untrained_passes`` says whether that value passes the claim's own test (for a sequence,
    whether *any* element does): such a finding cannot tell training from no training, and
    fails. ``ok`` is the measured verdict alone; ``sound`` adds the untrained check.
    """

    id: str
    statement: str
    measured: Any
    op: str
    threshold: float | tuple[float, float] | None
    paper: str | None
    ok: bool
    failing: tuple[int, ...] = ()
    kind: str = "identity"
    untrained: Any = None
    untrained_passes: bool = False

    @property
    def sound(self) -> bool:
        """False for a finding that an untrained model passes."""
        return not (self.kind == "finding" and self.untrained_passes)

    @property
    def holds_up(self) -> bool:
        """The claim held, and (for a finding) an untrained model fails it."""
        return self.ok and self.sound

    @property
    def untrained_text(self) -> str:
        if self.kind != "finding":
            return ""
        u = self.untrained
        if self.op == _HOLDS:
            return "holds" if u else "fails"
        # an untrained model often has nothing to measure (a rank of a score that never
        # moved, a ratio 0/0): say so, not "nan"
        if isinstance(u, tuple):
            text = _format_values(u)
            return "undefined" if text.startswith("all nan") or text == "[" + ", ".join(
                ["nan"] * len(u)) + "]" else text.replace("nan", "undef.")
        return "undefined" if _is_real(u) and math.isnan(float(u)) else format_number(u)

    @property
    def measured_text(self) -> str:
        m = self.measured
        if m is None:
            return ""
        if isinstance(m, str):
            return m
        if isinstance(m, tuple):
            return _format_values(m)
        return format_number(m)

    @property
    def threshold_text(self) -> str:
        if self.op == _HOLDS:
            return "holds"
        if self.op == "in":
            lo, hi = self.threshold
            return f"in [{format_number(lo)}, {format_number(hi)}]"
        if self.op == "≈":
            target, tol = self.threshold
            return f"≈ {format_number(target)} ± {format_number(tol)}"
        return f"{self.op} {format_number(self.threshold)}"

    def describe(self) -> str:
        """The failure report for this claim: full statement, measured value, what was needed."""
        lines = [f"{self.id}: {self.statement}"]
        if self.op == _HOLDS:
            need = "needs to hold, but is false"
            if self.measured is not None:
                need = f"measured {self.measured_text}; " + need
        else:
            m = self.measured
            shown = ("[" + ", ".join(format_number(v) for v in m) + "]"
                     if isinstance(m, tuple) else self.measured_text)
            need = f"measured {shown}; needs {self.threshold_text}"
            if isinstance(m, tuple):
                bad = ", ".join(f"[{i}]={format_number(m[i])}" for i in self.failing[:6])
                more = f", … ({len(self.failing)} in all)" if len(self.failing) > 6 else ""
                need += f" for every element; fails at {bad}{more}"
        if self.paper is not None:
            need += f"; paper: {self.paper}"
        if not self.ok:
            lines.append("    " + need)
        if not self.sound:
            lines.append(f"    a finding that an untrained model passes (untrained: "
                         f"{self.untrained_text}, needs to fail {self.threshold_text}): it "
                         "cannot tell training from none -- mark it an identity, or choose a "
                         "threshold that an untrained model fails")
        return "\n".join(lines)


# -------------------------------------------------------------------------------- validation

def _is_real(value) -> bool:
    return isinstance(value, (numbers.Real, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _check_text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty str; got {type(value).__name__} {value!r}")
    return value.strip()


def _check_measured(value, name: str = "measured"):
    """``value`` as a bool/int/float scalar, or a tuple of numbers; NaN and inf are kept (and
    shown in the table) but never pass a comparison (:func:`_compare`)."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if _is_real(value):
        return int(value) if isinstance(value, (numbers.Integral, np.integer)) else float(value)
    kind = (f"{name} must be a real number, a bool, or a non-empty sequence/array of real "
            f"numbers; got {type(value).__name__} {value!r:.80}")
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(kind)
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting
        raise TypeError(kind) from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(kind)
    if arr.ndim == 0:
        return _check_measured(arr.item(), name)
    if arr.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence/array of real numbers; got an "
                         f"empty {type(value).__name__}")
    return tuple(arr.ravel().tolist())


def _check_threshold(op: str, threshold) -> float | tuple[float, float]:
    if op in _PAIR_OPS:
        what = "(low, high)" if op == "in" else "(target, tol)"
        if (not isinstance(threshold, (tuple, list, np.ndarray)) or len(threshold) != 2
                or not all(_is_real(t) for t in threshold)):
            raise TypeError(f"threshold for op {op!r} must be a pair {what} of finite real "
                            f"numbers; got {threshold!r}")
        a, b = float(threshold[0]), float(threshold[1])
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"threshold for op {op!r} must be a pair {what} of finite real "
                             f"numbers; got {threshold!r}")
        if op == "in" and a > b:
            raise ValueError(f"threshold for op 'in' must be (low, high) with low <= high; "
                             f"got {threshold!r}")
        if op == "≈" and b < 0:
            raise ValueError(f"threshold for op '≈' must be (target, tol) with tol >= 0; "
                             f"got {threshold!r}")
        return (a, b)
    if isinstance(threshold, (bool, np.bool_)) and op in ("==", "!="):
        return int(threshold)  # flag == True
    if not _is_real(threshold):
        raise TypeError(f"threshold for op {op!r} must be a finite real number; "
                        f"got {type(threshold).__name__} {threshold!r}")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold for op {op!r} must be a finite real number; got {threshold}")
    return int(threshold) if isinstance(threshold, (numbers.Integral, np.integer)) \
        else float(threshold)


def _check_kind(kind, untrained, *, holds: bool):
    """Validate ``kind`` and the ``untrained`` value that a finding must carry."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(repr(k) for k in KINDS)}; got "
                         f"{kind!r} ('finding': training produced it and an untrained model "
                         "fails it; 'identity': the code against its maths or configuration)")
    if kind == "identity":
        if untrained is not None:
            raise ValueError("untrained is given only for kind='finding'; an identity does not "
                             f"depend on training (got untrained={untrained!r:.60})")
        return None
    if untrained is None:
        raise TypeError("a claim of kind='finding' needs untrained=: the value a model that "
                        "was not trained (step 0, or its parameter frozen) gives"
                        + (" -- a bool, whether the fact holds for it" if holds else ""))
    if holds:
        if not isinstance(untrained, (bool, np.bool_)):
            raise TypeError(f"untrained must be a bool for Claims.holds (whether the fact holds "
                            f"for an untrained model); got {type(untrained).__name__} "
                            f"{untrained!r:.60}")
        return bool(untrained)
    return _check_measured(untrained, "untrained")


def _check_paper(paper) -> str | None:
    if paper is None:
        return None
    if isinstance(paper, str):
        return paper.strip() or None
    if _is_real(paper):
        return format_number(paper)
    raise TypeError(f"paper must be None, a str or a real number; got "
                    f"{type(paper).__name__} {paper!r}")


def _compare(values: np.ndarray, op: str, threshold) -> np.ndarray:
    """Element-wise pass/fail; a non-finite value (NaN, inf, -inf) fails every op."""
    with np.errstate(invalid="ignore"):
        if op == "<":
            ok = values < threshold
        elif op == "<=":
            ok = values <= threshold
        elif op == ">":
            ok = values > threshold
        elif op == ">=":
            ok = values >= threshold
        elif op == "==":
            ok = values == threshold
        elif op == "!=":
            ok = values != threshold
        elif op == "in":
            ok = (values >= threshold[0]) & (values <= threshold[1])
        else:  # "≈", forgiving float rounding: 0.55 is within 0.05 of 0.5
            target, tol = threshold
            ok = np.abs(values - target) <= tol + _ROUNDING * max(abs(target), tol)
    return ok & np.isfinite(values)


# -------------------------------------------------------------------------------- collector

class _Printed(str):
    """A str already printed: Jupyter shows nothing more when it is a cell's last value."""

    def _ipython_display_(self):
        pass


class _Table:
    """The claims table for a notebook: HTML (cells wrap, so the whole statement shows and
    Greek letters or ≤ in a fallback font cannot push it past the book's column) with the
    plain-text table as its text/plain form (terminals, nbval)."""

    def __init__(self, text: str, html: str):
        self.text, self.html = text, html

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html


class Claims:
    """Collects a chapter's claims; :meth:`show` prints the evidence, :meth:`assert_all` checks it.

    ``rows`` lists every :class:`Claim` in the order checked; ``failed`` the ones that did not
    hold. Several checks may share a catalogue id, but the same (id, statement) twice is an
    error (almost always a copy-paste slip).

    Non-finite measurements always fail: a measured NaN, ``inf`` or ``-inf`` passes no
    comparison of :meth:`check` (``measured=inf`` fails ``op=">"``; a per-seed list with one
    ``inf`` fails "every seed >= 0.95"), and the table marks the claim ✗.
    """

    def __init__(self, title: str):
        self.title = _check_text("title", title)
        self._rows: list[Claim] = []

    # ----------------------------------------------------------------------------- recording
    def check(self, id: str, statement: str, *, kind: str, measured, op: str, threshold,
              paper: str | float | None = None, untrained=None) -> Claim:
        """Record the claim ``measured <op> threshold`` (for every element of a sequence; a
        NaN or infinite element fails).

        ``kind`` is ``"finding"`` (then ``untrained``, the value an untrained model gives, is
        required and must fail the same test) or ``"identity"``."""
        id, statement = self._check_new(id, statement)
        if not isinstance(op, str) or op not in OPS:
            raise ValueError(f"op must be one of {', '.join(repr(o) for o in OPS)}; got {op!r}")
        value = _check_measured(measured)
        threshold = _check_threshold(op, threshold)
        paper = _check_paper(paper)
        untrained = _check_kind(kind, untrained, holds=False)
        values = np.atleast_1d(np.asarray(value, dtype=float))
        passed = _compare(values, op, threshold)
        failing = tuple(int(i) for i in np.flatnonzero(~passed)) if isinstance(value, tuple) else ()
        untrained_passes = False
        if untrained is not None:
            u = np.atleast_1d(np.asarray(untrained, dtype=float))
            untrained_passes = bool(_compare(u, op, threshold).any())
        claim = Claim(id, statement, value, op, threshold, paper, bool(passed.all()), failing,
                      kind, untrained, untrained_passes)
        self._rows.append(claim)
        return claim

    def holds(self, id: str, statement: str, *, kind: str, ok, measured=None,
              paper: str | float | None = None, untrained=None) -> Claim:
        """Record a claim that is a boolean fact (``ok``), with an optional description of the
        evidence in ``measured`` (a str such as ``"3/3 seeds"``, a number or numbers, or None).
        A ``kind="finding"`` needs ``untrained``: whether the fact holds for an untrained model
        (it must not)."""
        id, statement = self._check_new(id, statement)
        if not isinstance(ok, (bool, np.bool_)):
            raise TypeError(f"ok must be a bool; got {type(ok).__name__} {ok!r:.80} "
                            "(reduce arrays with .all() or .any() first)")
        if measured is not None and not isinstance(measured, str):
            measured = _check_measured(measured)
        untrained = _check_kind(kind, untrained, holds=True)
        claim = Claim(id, statement, measured, _HOLDS, None, _check_paper(paper), bool(ok), (),
                      kind, untrained, bool(untrained))
        self._rows.append(claim)
        return claim

    def _check_new(self, id, statement) -> tuple[str, str]:
        id = _check_text("id", id)
        statement = _check_text("statement", statement)
        if any(r.id == id and r.statement == statement for r in self._rows):
            raise ValueError(f"duplicate claim: {id!r} with statement {statement!r} was already "
                             f"checked in {self.title!r}")
        return id, statement

    # ------------------------------------------------------------------------------- results
    @property
    def rows(self) -> list[Claim]:
        return list(self._rows)

    @property
    def failed(self) -> list[Claim]:
        """The claims that did not hold, and the findings that an untrained model passes."""
        return [r for r in self._rows if not r.holds_up]

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"Claims({self.title!r}: {self.summary()})"

    def _by_kind(self) -> dict[str, list[Claim]]:
        return {k: [r for r in self._rows if r.kind == k] for k in KINDS}

    def summary(self, counts_only: bool = False) -> str:
        """"12 findings and 15 identities hold", or "11 of 12 findings and 15 of 15 identities
        hold" when some fail; with ``counts_only`` without the verb."""
        groups = self._by_kind()
        all_hold = not self.failed
        parts = []
        for kind, rows in groups.items():
            if not rows:
                continue
            n, ok = len(rows), sum(r.holds_up for r in rows)
            noun = kind if n == 1 else ("findings" if kind == "finding" else "identities")
            parts.append(f"{n} {noun}" if all_hold else f"{ok} of {n} {noun}")
        if not parts:
            return "no claims"
        if not counts_only:
            parts[-1] += " holds" if len(self._rows) == 1 and all_hold else " hold"
        return " and ".join(parts)

    def _ordered(self) -> list[Claim]:
        groups = self._by_kind()
        return [r for k in KINDS for r in groups[k]]

    def table(self) -> str:
        """The evidence as plain text, one claim a row, no row wider than :data:`MAX_WIDTH`."""
        ordered = self._ordered()
        cells = [_HEADER] + [
            (r.id, r.statement, r.measured_text, r.threshold_text, r.paper or "",
             _PASS if r.holds_up else _FAIL) for r in ordered]
        caps = list(_WIDTHS)
        has_paper = any(row[4] for row in cells[1:])
        if not has_paper:  # no paper values: the statement gets the paper column's room
            caps[1] += caps[4] + len(_GAP)
        cells = [[_fit(c, w) for c, w in zip(row, caps)] for row in cells]
        widths = [max(_shown_len(row[j]) for row in cells) for j in range(len(caps))]
        if not has_paper:
            cells = [row[:4] + row[5:] for row in cells]
            widths = widths[:4] + widths[5:]
        lines = [(_GAP.join(c + " " * (w - _shown_len(c)) for c, w in zip(row[:-1], widths[:-1]))
                  + " " + row[-1])
                 .rstrip() for row in cells]
        rule = "-" * max(len(line) for line in lines)
        body, previous = [], None
        for r, line in zip(ordered, lines[1:]):
            if r.kind != previous:
                body.append(_fit(_KIND_TITLES[r.kind], MAX_WIDTH))
                previous = r.kind
            body.append(line)
        head = f"{self.title}: {self.summary()}{_smoke_note()}"
        return "\n".join([head, rule, lines[0], rule, *body, rule])

    def html(self) -> str:
        """The evidence as an HTML table (class ``attn-claims``): every statement in full.

        Every cell carries its column's name (``data-label``; the verdict's is "held"): on a
        phone the book's stylesheet (book/_static/book.css) shows each claim as a card, one
        labelled line a cell, instead of columns wider than the screen. Without that
        stylesheet (Jupyter, Colab) it is a plain table."""
        esc = _html.escape
        has_paper = any(r.paper for r in self._rows)
        has_untrained = any(r.kind == "finding" for r in self._rows)
        head = (["claim", "statement", "measured", "threshold"]
                + (["untrained"] if has_untrained else []) + (["paper"] if has_paper else []))
        rows, previous = [], None
        for r in self._ordered():
            if r.kind != previous:
                rows.append(f'<tr class="attn-claim-kind"><th colspan="{len(head) + 1}">'
                            f'{esc(_KIND_TITLES[r.kind])}</th></tr>')
                previous = r.kind
            cells = [r.id, r.statement, r.measured_text, r.threshold_text]
            cells += [r.untrained_text] if has_untrained else []
            cells += [r.paper or ""] if has_paper else []
            mark = (f'<td class="attn-claim-{"ok" if r.holds_up else "failed"}" '
                    f'data-label="held">{_PASS if r.holds_up else _FAIL}</td>')
            rows.append(f'<tr class="attn-claim-{r.kind}">'
                        + "".join(f'<td data-label="{h}">{esc(c)}</td>'
                                  for h, c in zip(head, cells)) + mark + "</tr>")
        caption = esc(f"{self.title}: {self.summary()}{_smoke_note()}")
        return (f'<table class="attn-claims"><caption>{caption}</caption><thead><tr>'
                + "".join(f"<th>{h}</th>" for h in head) + "<th></th></tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")

    def show(self) -> str:
        """Show the evidence table and return its plain text: in a notebook as an HTML table
        (with the text as its plain form), elsewhere printed. The returned string does not
        display itself again when ``c.show()`` ends a cell."""
        text = _Printed(self.table())
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:  # pragma: no cover - IPython comes with the book's requirements
            get_ipython = None
        if get_ipython is not None and get_ipython() is not None:
            display(_Table(str(text), self.html()))
        else:
            print(text)
        return text

    def assert_all(self) -> None:
        """Raise one AssertionError listing every failed claim; else print that all hold."""
        n = len(self._rows)
        if n == 0:
            raise AssertionError(f"no claims were checked in {self.title!r}")
        from .config import env_max_steps
        cap = env_max_steps()
        if cap is not None:
            print(f"smoke run (ATTN_MAX_STEPS={cap}): the {n} claims of {self.title} were not "
                  f"checked -- a smoke run proves plumbing, not science")
            return
        failed = self.failed
        if failed:
            report = "\n".join(r.describe() for r in failed)
            raise AssertionError(f"{len(failed)} of {n} claims of {self.title} fail "
                                 f"({self.summary()}):\n{report}")
        print(f"all {n} claims of {self.title} hold: {self.summary(counts_only=True)}")
        from .config import report_summary
        quiet = report_summary()              # the one bookkeeping line of the chapter
        if quiet:
            print(quiet)
