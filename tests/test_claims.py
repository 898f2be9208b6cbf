"""The claims collector: every op at its boundary, arrays need every element, NaN never passes,
one AssertionError lists all failures, the table marks the right rows, inputs are validated."""

import math
import unicodedata

import numpy as np
import pytest

from attn_core.claims import OPS, Claims, format_number


def _ok(measured, op, threshold) -> bool:
    c = Claims("t")
    return c.check("X1", "s", kind="identity", measured=measured, op=op, threshold=threshold).ok


# ----------------------------------------------------------------------------- comparisons

@pytest.mark.parametrize("op, measured, threshold, expected", [
    ("<", 0.9, 1.0, True), ("<", 1.0, 1.0, False), ("<", 1.1, 1.0, False),
    ("<=", 1.0, 1.0, True), ("<=", 1.0 + 1e-12, 1.0, False),
    (">", 1.1, 1.0, True), (">", 1.0, 1.0, False),
    (">=", 1.0, 1.0, True), (">=", 1.0 - 1e-12, 1.0, False),
    ("==", 3, 3, True), ("==", 3, 4, False), ("==", 0.5, 0.5, True),
    ("!=", 3, 4, True), ("!=", 3, 3, False),
    ("in", 0.1, (0.1, 0.5), True), ("in", 0.5, (0.1, 0.5), True),
    ("in", 0.0999, (0.1, 0.5), False), ("in", 0.5001, (0.1, 0.5), False),
    ("≈", 0.55, (0.5, 0.05), True), ("≈", 0.45, (0.5, 0.05), True),
    ("≈", 0.56, (0.5, 0.05), False), ("≈", 0.44, (0.5, 0.05), False),
    ("≈", 0.5, (0.5, 0), True), ("≈", 0.5 + 1e-9, (0.5, 0), False),
    ("≈", 0.75, (0.5, 0.25), True), ("≈", 0.7501, (0.5, 0.25), False),
    ("≈", 0.5501, (0.5, 0.05), False), ("≈", 0.0, (0.0, 0.0), True),
])
def test_each_op_at_its_boundary(op, measured, threshold, expected):
    assert _ok(measured, op, threshold) is expected


def test_every_op_is_covered():
    assert set(OPS) == {"<", "<=", ">", ">=", "==", "!=", "in", "≈"}


def test_bool_measured_compares_as_a_flag():
    assert _ok(True, "==", True)
    assert not _ok(False, "==", True)
    assert _ok(np.bool_(True), "!=", 0)


@pytest.mark.parametrize("op, threshold", [
    ("<", 1.0), ("<=", 1.0), (">", 0.0), (">=", 0.0), ("==", 0.0), ("!=", 0.0),
    ("in", (-1.0, 1.0)), ("≈", (0.0, 10.0)),
])
def test_nan_fails_every_op(op, threshold):
    assert not _ok(float("nan"), op, threshold)
    assert not _ok(np.float32("nan"), op, threshold)
    assert not _ok([0.0, float("nan")], op, threshold)


def test_arrays_need_every_element():
    assert _ok([1.0, 0.9], ">=", 0.8)
    assert _ok(np.array([[0.9, 1.0], [0.85, 0.8]]), ">=", 0.8)
    assert _ok((0.2, 0.3), "in", (0.2, 0.3))
    c = Claims("t")
    bad = c.check("M3", "random heads succeed", kind="identity", measured=[1.0, 0.7, 0.9, 0.6], op=">=",
                  threshold=0.8)
    assert not bad.ok
    assert bad.failing == (1, 3)
    assert bad.measured == (1.0, 0.7, 0.9, 0.6)


def test_torch_tensor_measured():
    torch = pytest.importorskip("torch")
    assert _ok(torch.tensor([0.9, 0.95]), ">", 0.8)
    assert not _ok(torch.tensor(0.5, requires_grad=True) * 1, ">", 0.8)


@pytest.mark.parametrize("op, threshold", [
    ("<", 1.0), ("<=", 1.0), (">", 0.0), (">=", 0.0), ("==", 0.0), ("!=", 0.0),
    ("in", (-1.0, 1.0)), ("≈", (0.0, 10.0)),
])
def test_infinite_measured_is_kept_but_fails_every_op(op, threshold):
    # #35: a measured inf (a division by zero, an overflow) is not evidence; it passed > and >=
    for inf in (math.inf, -math.inf, np.float32("inf"), np.float64("-inf")):
        assert not _ok(inf, op, threshold)
        assert not _ok([0.5, inf], op, threshold)
    c = Claims("t")
    r = c.check("X", "s", kind="identity", measured=[1.0, math.inf, 0.99], op=">=",
                threshold=0.95)
    assert r.measured == (1.0, math.inf, 0.99) and r.failing == (1,) and not r.ok
    assert "[1]=inf" in r.describe() and _row(c.table(), "X").endswith("✗")


def test_a_non_finite_untrained_value_fails_like_any_other():
    c = Claims("t")
    r = c.check("F", "s", kind="finding", measured=2.0, op=">", threshold=1.0,
                untrained=[0.5, math.inf])
    assert r.ok and not r.untrained_passes and r.holds_up


# ----------------------------------------------------------------------------- assert_all
def _chapter4(p2: float, g6_ok: bool, g6_seeds: str) -> Claims:
    """Four claims like a chapter's (M3 always fails on its 0.7)."""
    c = Claims("Chapter 4")
    c.check("P2", "permutations succeed less often than the control (difference)",
            kind="finding", measured=p2, op=">=", threshold=0.4, paper="≈ 0.5", untrained=0.0)
    c.check("P5", "proxy spread under permutations", kind="identity", measured=3e-9, op="<", threshold=1e-6)
    c.check("M3", "random K=8 heads succeed", kind="identity", measured=[1.0, 0.7], op=">=", threshold=0.8)
    c.holds("G6", "late: γ_L exceeds every other γ on every seed", kind="finding", ok=g6_ok,
            measured=g6_seeds, untrained=False)
    return c


def test_assert_all_lists_every_failure():
    c = _chapter4(p2=0.3, g6_ok=False, g6_seeds="2/3 seeds")
    assert [r.id for r in c.failed] == ["P2", "M3", "G6"]
    with pytest.raises(AssertionError) as err:
        c.assert_all()
    msg = str(err.value)
    assert "3 of 4 claims of Chapter 4 fail (0 of 2 findings and 1 of 2 identities hold)" in msg
    for claim_id in ("P2:", "M3:", "G6:"):
        assert claim_id in msg
    assert "P5" not in msg
    # the full (untruncated) statement, the measured value and what was needed
    assert "permutations succeed less often than the control (difference)" in msg
    assert "measured 0.3; needs >= 0.4" in msg and "paper: ≈ 0.5" in msg
    assert "[1]=0.7" in msg
    assert "2/3 seeds" in msg


def test_assert_all_passes_and_says_so(capsys):
    c = Claims("Chapter 2")
    c.check("S1", "loss falls", kind="identity", measured=[0.1, 0.2], op="<", threshold=0.5)
    c.holds("S2", "the gate opens", kind="identity", ok=np.bool_(True))
    assert c.failed == []
    c.assert_all()
    assert "all 2 claims of Chapter 2 hold" in capsys.readouterr().out


def test_assert_all_with_no_claims_fails():
    with pytest.raises(AssertionError, match="no claims"):
        Claims("empty").assert_all()


# ---------------------------------------------------------------------------------- table

def _row(table: str, claim_id: str) -> str:
    (line,) = [ln for ln in table.splitlines() if ln.startswith(claim_id + " ")]
    return line


def test_table_marks_the_right_rows(capsys):
    c = _chapter4(p2=0.6, g6_ok=True, g6_seeds="3/3 seeds")
    text = c.show()
    assert capsys.readouterr().out.strip() == text.strip()  # printed, and returned
    assert text.splitlines()[0] == "Chapter 4: 2 of 2 findings and 1 of 2 identities hold"
    for claim_id in ("P2", "P5", "G6"):
        assert _row(text, claim_id).endswith("✓") and "✗" not in _row(text, claim_id)
    assert _row(text, "M3").endswith("✗") and "✓" not in _row(text, "M3")
    assert "3e-9" in _row(text, "P5") and "< 1e-6" in _row(text, "P5")
    assert "[1, 0.7]" in _row(text, "M3") and ">= 0.8" in _row(text, "M3")
    assert "≈ 0.5" in _row(text, "P2")
    assert "3/3 seeds" in _row(text, "G6")


def test_table_fits_a_book_column():
    c = Claims("Chapter 9")
    c.check("LONG1", "a statement far too long for the column " * 4, kind="identity", measured=np.linspace(0, 1, 50),
            op="in", threshold=(-0.123456, 0.98765), paper="0.5 in the paper, table 3, row 7")
    c.check("N", "some nan", kind="identity", measured=[0.5, float("nan"), 0.9, 0.8, 0.7, 0.6], op=">", threshold=0)
    text = c.show()
    from attn_core.claims import MAX_WIDTH
    assert MAX_WIDTH <= 85           # the book's column shows 85 characters of output
    assert all(len(line) <= MAX_WIDTH for line in text.splitlines())
    row = _row(text, "LONG1")
    assert "…" in row and "a statement far too long" in row
    assert "0..1 (n=50)" in row
    assert "+nan" in _row(text, "N")
    with pytest.raises(AssertionError, match="a statement far too long for the column a statement"):
        c.assert_all()


def test_paper_column_dropped_when_no_claim_has_one():
    c = Claims("t")
    c.check("A", "s", kind="identity", measured=1, op="==", threshold=1)
    assert "paper" not in c.table()
    c.check("B", "s", kind="identity", measured=1, op="==", threshold=1, paper=0.93)
    assert "paper" in c.table() and "0.93" in _row(c.table(), "B")


def test_rows_are_records():
    c = Claims("t")
    c.check("A", "s", kind="identity", measured=2, op="in", threshold=(1, 3), paper=2.0)
    (r,) = c.rows
    assert (r.id, r.statement, r.measured, r.op, r.threshold, r.paper, r.ok) == \
        ("A", "s", 2, "in", (1.0, 3.0), "2", True)
    assert len(c) == 1 and "1 identity holds" in repr(c)


@pytest.mark.parametrize("x, text", [
    (3, "3"), (-42, "-42"), (0.6, "0.6"), (0.123456, "0.123"), (12.345, "12.3"),
    (1234.5, "1234"), (3e-9, "3e-9"), (-1.5e-5, "-1.5e-5"), (2.5e7, "2.5e7"), (0.0, "0"),
    (1.0, "1"), (float("nan"), "nan"), (float("-inf"), "-inf"), (True, "True"),
    (np.int64(7), "7"), (np.float32(0.25), "0.25"),
])
def test_format_number(x, text):
    assert format_number(x) == text


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("op", ["=>", "approx", "", None, "<<"])
def test_unknown_op_rejected(op):
    with pytest.raises(ValueError, match="op must be one of") as err:
        Claims("t").check("A", "s", kind="identity", measured=1.0, op=op, threshold=1.0)
    for allowed in OPS:
        assert repr(allowed) in str(err.value)


@pytest.mark.parametrize("measured", ["0.5", None, {"a": 1}, [1.0, "x"], [[1.0], [1.0, 2.0]],
                                      1 + 2j, object(), {0.5}])
def test_bad_measured_rejected(measured):
    with pytest.raises(TypeError, match="measured must be a real number"):
        Claims("t").check("A", "s", kind="identity", measured=measured, op="<", threshold=1.0)


@pytest.mark.parametrize("measured", [[], np.array([]), ()])
def test_empty_measured_rejected(measured):
    with pytest.raises(ValueError, match="measured must be a non-empty"):
        Claims("t").check("A", "s", kind="identity", measured=measured, op="<", threshold=1.0)


@pytest.mark.parametrize("op, threshold, exc", [
    ("<", "1", TypeError), ("<", None, TypeError), ("<", (0, 1), TypeError),
    ("<", float("nan"), ValueError), (">", math.inf, ValueError), (">=", True, TypeError),
    ("in", 0.5, TypeError), ("in", (0.0, 1.0, 2.0), TypeError), ("in", (1.0, 0.0), ValueError),
    ("in", (0.0, math.inf), ValueError), ("≈", (0.5, -0.1), ValueError),
    ("≈", ("0.5", 0.1), TypeError),
])
def test_bad_threshold_rejected(op, threshold, exc):
    with pytest.raises(exc, match="threshold for op"):
        Claims("t").check("A", "s", kind="identity", measured=0.5, op=op, threshold=threshold)


@pytest.mark.parametrize("claim_id", ["", "   ", None, 2])
def test_bad_id_rejected(claim_id):
    with pytest.raises(TypeError, match="id must be a non-empty str"):
        Claims("t").check(claim_id, "s", kind="identity", measured=1.0, op="<", threshold=2.0)


def test_bad_statement_title_paper_ok_rejected():
    with pytest.raises(TypeError, match="statement must be a non-empty str"):
        Claims("t").check("A", "", kind="identity", measured=1.0, op="<", threshold=2.0)
    with pytest.raises(TypeError, match="title must be a non-empty str"):
        Claims("")
    with pytest.raises(TypeError, match="paper must be"):
        Claims("t").check("A", "s", kind="identity", measured=1.0, op="<", threshold=2.0, paper=[0.5])
    with pytest.raises(TypeError, match="ok must be a bool"):
        Claims("t").holds("A", "s", kind="identity", ok=np.array([True, False]))
    with pytest.raises(TypeError, match="ok must be a bool"):
        Claims("t").holds("A", "s", kind="identity", ok=1)


def test_duplicate_claim_rejected_but_shared_id_allowed():
    c = Claims("t")
    c.check("P2", "early gap", kind="identity", measured=0.6, op=">=", threshold=0.4)
    c.check("P2", "late gap", kind="identity", measured=0.2, op="<", threshold=0.4)  # same id, other statement
    with pytest.raises(ValueError, match="duplicate claim"):
        c.check("P2", "early gap", kind="identity", measured=0.7, op=">=", threshold=0.4)
    with pytest.raises(ValueError, match="duplicate claim"):
        c.holds("P2", "late gap", kind="identity", ok=True)
    assert len(c) == 2  # the rejected claims were not recorded


def test_html_table_shows_every_statement_whole_and_escaped():
    c = Claims("Chapter 9")
    long = "a statement far too long for the text table's column, with <angle> & α ≤ β"
    c.check("X1", long, kind="identity", measured=0.5, op=">", threshold=0.4, paper="≈ 0.5")
    c.check("X2", "fails", kind="identity", measured=0.1, op=">", threshold=0.4)
    html = c.html()
    assert 'class="attn-claims"' in html and "Chapter 9: 1 of 2 identities hold" in html
    assert "with &lt;angle&gt; &amp; α ≤ β" in html            # whole, escaped
    assert html.count("attn-claim-ok") == 1 and html.count("attn-claim-failed") == 1
    assert "<th>paper</th>" in html and "≈ 0.5" in html


def test_html_cells_carry_their_column_names():
    """#55: every cell of the HTML table names its column (data-label), so that on a phone
    the book can show each claim's cells stacked, each after its name (book/_static/book.css);
    the plain text is the same as before."""
    import re

    c = Claims("Chapter 9")
    c.check("F1", "final accuracy", kind="finding", measured=0.99, op=">", threshold=0.95,
            untrained=0.5, paper="0.98")
    c.check("I1", "an ODE against its closed form", kind="identity", measured=1e-9, op="<",
            threshold=1e-6)
    html = c.html()
    heads = re.findall(r"<th>([^<]*)</th>", html.split("</thead>")[0])
    assert heads == ["claim", "statement", "measured", "threshold", "untrained", "paper", ""]
    for row in re.findall(r'<tr class="attn-claim-(?:finding|identity)">(.*?)</tr>', html):
        labels = re.findall(r'<td[^>]* data-label="([^"]*)"', row)
        assert labels == heads[:-1] + ["held"], row
        assert row.count("<td") == len(labels)        # no cell without its name
    assert '<td data-label="paper">0.98</td>' in html
    assert '<td data-label="untrained"></td>' in html  # an identity's: empty (dropped on a phone)
    assert "data-label" not in c.table() and "<td" not in c.table()


# ---------------------------------------------------------------------------------- kinds

def test_kind_is_required_and_checked():
    with pytest.raises(TypeError, match="kind"):
        Claims("t").check("A", "s", measured=1.0, op="<", threshold=2.0)
    for bad in ("Finding", "evidence", "", None, 1):
        with pytest.raises(ValueError, match="kind must be one of 'finding', 'identity'"):
            Claims("t").check("A", "s", kind=bad, measured=1.0, op="<", threshold=2.0)
        with pytest.raises(ValueError, match="kind must be one of 'finding', 'identity'"):
            Claims("t").holds("A", "s", kind=bad, ok=True)


def test_a_finding_needs_its_untrained_value_and_an_identity_has_none():
    with pytest.raises(TypeError, match="kind='finding' needs untrained="):
        Claims("t").check("A", "s", kind="finding", measured=0.9, op=">", threshold=0.8)
    with pytest.raises(TypeError, match="kind='finding' needs untrained=.*a bool"):
        Claims("t").holds("A", "s", kind="finding", ok=True)
    with pytest.raises(TypeError, match="untrained must be a bool"):
        Claims("t").holds("A", "s", kind="finding", ok=True, untrained=0)
    with pytest.raises(TypeError, match="untrained must be a real number"):
        Claims("t").check("A", "s", kind="finding", measured=0.9, op=">", threshold=0.8,
                          untrained="0.1")
    with pytest.raises(ValueError, match="untrained is given only for kind='finding'"):
        Claims("t").check("A", "s", kind="identity", measured=0.9, op=">", threshold=0.8,
                          untrained=0.1)


def test_a_finding_an_untrained_model_passes_fails():
    c = Claims("Chapter 9")
    good = c.check("F1", "final accuracy", kind="finding", measured=[0.99, 0.98], op=">",
                   threshold=0.95, untrained=[0.5, 0.51])
    weak = c.check("F2", "attention below a half", kind="finding", measured=0.1, op="<",
                   threshold=0.5, untrained=0.1)
    one_seed = c.check("F3", "loss fell", kind="finding", measured=[0.1, 0.2], op="<",
                       threshold=0.5, untrained=[2.3, 0.4])   # one untrained seed passes
    fact = c.holds("F4", "attention passes 2/L", kind="finding", ok=True, untrained=True)
    assert good.holds_up and good.untrained == (0.5, 0.51) and not good.untrained_passes
    for r in (weak, one_seed, fact):
        assert r.ok and r.untrained_passes and not r.sound and not r.holds_up
    assert [r.id for r in c.failed] == ["F2", "F3", "F4"]
    assert c.summary() == "1 of 4 findings hold"
    with pytest.raises(AssertionError) as err:
        c.assert_all()
    msg = str(err.value)
    assert "a finding that an untrained model passes (untrained: 0.1, needs to fail < 0.5)" in msg
    assert "untrained: [2.3, 0.4]" in msg and "untrained: holds" in msg
    assert "F1" not in msg
    assert "measured" not in msg  # they held; only the untrained check failed


def test_table_and_summary_keep_findings_and_identities_apart(capsys):
    c = Claims("Chapter 9")
    c.check("I1", "ODE against its closed form", kind="identity", measured=1e-9, op="<",
            threshold=1e-6)
    c.check("F1", "final accuracy", kind="finding", measured=0.99, op=">", threshold=0.95,
            untrained=0.5)
    c.holds("F2", "attention ends on the keyword", kind="finding", ok=True, untrained=False)
    text = c.table()
    lines = text.splitlines()
    assert lines[0] == "Chapter 9: 2 findings and 1 identity hold"
    f, i = lines.index(next(x for x in lines if x.startswith("Findings"))), \
        lines.index(next(x for x in lines if x.startswith("Identities")))
    assert f < lines.index(_row(text, "F1")) < lines.index(_row(text, "F2")) < i \
        < lines.index(_row(text, "I1"))           # grouped by kind, in order within a kind
    html = c.html()
    assert "<th>untrained</th>" in html and '<td data-label="untrained">0.5</td>' in html \
        and '<td data-label="untrained">fails</td>' in html
    assert html.index("Findings") < html.index("F1") < html.index("Identities") \
        < html.index("I1")
    assert 'class="attn-claim-finding"' in html and 'class="attn-claim-identity"' in html
    c.assert_all()
    assert "all 3 claims of Chapter 9 hold: 2 findings and 1 identity" in capsys.readouterr().out


def test_an_untrained_value_with_nothing_to_measure_reads_undefined():
    """#55: no raw nan in a claims table: an untrained model's NaN (a rank of a score that
    never moved, a ratio 0/0) reads "undefined"."""
    c = Claims("T")
    c.check("A", "rank", kind="finding", measured=0.5, op=">=", threshold=0.25,
            untrained=float("nan"))
    c.check("B", "seq", kind="finding", measured=[0.5, 0.6], op=">=", threshold=0.25,
            untrained=[float("nan"), 0.1])
    c.check("C", "plain", kind="finding", measured=0.5, op=">=", threshold=0.25,
            untrained=0.1)
    a, b, plain = (r.untrained_text for r in c._rows)
    assert a == "undefined" and b == "[undef., 0.1]" and plain == "0.1"
    assert "nan" not in c.html()


def test_a_combining_mark_does_not_eat_the_gap_before_the_verdict():
    """#55: chapter 1's paper value "γ_L ≈ γ̄" ran into the ✓: a combining mark takes no
    column, so the table pads by what is shown."""
    c = Claims("T")
    c.check("G6", "late", kind="identity", measured=0.1, op="<", threshold=0.2,
            paper="γ_L ≈ γ̄")
    c.check("G7", "other", kind="identity", measured=0.1, op="<", threshold=0.2,
            paper="≫ 0")
    rows = [x for x in c.table().splitlines() if x.startswith("G")]
    shown = [sum(not unicodedata.combining(ch) for ch in x) for x in rows]
    assert shown[0] == shown[1] and rows[0].endswith("γ̄ ✓")
