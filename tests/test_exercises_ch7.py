"""Chapter 7's exercise checkers (attn_core.exercises.ch7): each accepts its reference solution,
rejects the usual mistakes with their specific hint, reports a stub as not attempted, and raises
on a wrong answer passed as a solution (tests/exercise_scaffold.py); the mass reference equals
the chapter's end_probe on small untrained models; a right ablation design prints its stored
sweep row's result; that the notebook uses every checker is tests/test_learning.py's."""

import math

import numpy as np
import pytest
import torch
from exercise_scaffold import gamed_tests, scaffold_tests

from attn_core.chapters import ch7_end_token as ch
from attn_core.exercises import CHECKERS
from attn_core.exercises import ch7 as ex
from attn_core.metrics import fisher_exact
from attn_core.models import forward_masks

CLASSES = ch.POSITION_CLASSES


# ------------------------------------------------------------------ reference solutions
def fisher_p(k1, n1, k2, n2, tail="two", ties=True, observed=True, keep="less"):
    """Fisher's two-sided p as a reader writes it; the keyword arguments make its usual
    mistakes: ``tail`` "up" (x ≥ k1 always), "own" (the observed direction's tail) or
    "double" (twice that); ``ties=False``: p(x) < p_obs; ``observed=False``: the observed
    table left out; ``keep="more"``: the tables at least as probable summed."""
    k, n = k1 + k2, n1 + n2
    xs = range(max(0, k - n2), min(k, n1) + 1)
    p = {x: math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n, k) for x in xs}
    if tail != "two":
        up = tail == "up" or k1 / n1 >= k2 / n2
        one = sum(v for x, v in p.items() if (x >= k1 if up else x <= k1))
        return min(1.0, 2 * one) if tail == "double" else one
    total = 0.0
    for x, v in p.items():
        if x == k1:
            total += v if observed else 0.0
        elif keep == "more":
            total += v if v >= p[k1] else 0.0
        elif v <= p[k1] * (1 + 1e-7) if ties else v < p[k1]:
            total += v
    return min(1.0, total)


def fisher_p_lgamma(k1, n1, k2, n2):
    """Probabilities by log-gamma, compared without a tolerance: ties break at random."""
    def log_comb(a, b):
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
    k, n = k1 + k2, n1 + n2
    ps = [math.exp(log_comb(n1, x) + log_comb(n2, k - x) - log_comb(n, k))
          for x in range(max(0, k - n2), min(k, n1) + 1)]
    obs = math.exp(log_comb(n1, k1) + log_comb(n2, k2) - log_comb(n, k))
    return min(1.0, sum(v for v in ps if v <= obs))


def fisher_p_chi2(k1, n1, k2, n2, yates=False):
    table = np.array([[k1, n1 - k1], [k2, n2 - k2]], dtype=float)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    d = np.abs(table - expected) - (0.5 if yates else 0.0)
    return math.erfc(math.sqrt((np.clip(d, 0, None) ** 2 / expected).sum() / 2))


def fisher_p_z(k1, n1, k2, n2):
    """The two-proportion z-test, unpooled."""
    r1, r2 = k1 / n1, k2 / n2
    return math.erfc(abs(r1 - r2) / math.sqrt(r1 * (1 - r1) / n1 + r2 * (1 - r2) / n2)
                     / math.sqrt(2))


def fisher_p_observed(k1, n1, k2, n2):
    return math.comb(n1, k1) * math.comb(n2, k2) / math.comb(n1 + n2, k1 + k2)


def mass_by_class(alpha, align, first, L, end_pos, start, right_at_t=False,
                  neighbours_anywhere=False, order=("right", "last word", "neighbours", "end",
                                                    "start"),
                  last_twice=False, partition=True, start_always=False, swap=False,
                  average="steps"):
    """The masses as a reader writes them, a loop over steps and positions; the keyword
    arguments make the usual mistakes."""
    T, Lp = alpha.shape
    mass = dict.fromkeys(CLASSES, 0.0)
    last = first + L - 1
    for t in range(T):
        a = t if right_at_t else int(align[t])
        for l in range(Lp):
            member = {"right": l == a,
                      "neighbours": abs(l - a) == 1 and (neighbours_anywhere
                                                         or first <= l < first + L),
                      "last word": l == last and l != a,
                      "end": end_pos is not None and l == end_pos,
                      "start": (start or start_always) and l == 0}
            classes = [c for c in order if member[c]] or ["other"]
            for c in (classes if not partition else classes[:1]):
                mass[c] += alpha[t, l]
            if last_twice and l == last == a:
                mass["last word"] += alpha[t, l]
    if swap:
        mass["end"], mass["start"] = mass["start"], mass["end"]
    scale = {"steps": T, "sum": 1, "all": T * Lp, "positions": Lp}[average]
    return {c: v / scale for c, v in mass.items()}


def ablation(hypothesis):
    return {"sink": {"mask_end": True}, "end step loss": {"end_loss": False}}[hypothesis]


CHECKS = {
    "check_fisher_p": (ex.check_fisher_p, fisher_p),
    "check_mass_by_class": (ex.check_mass_by_class, mass_by_class),
    "check_ablation": (ex.check_ablation, ablation),
}


def _fp(**kw):
    return lambda *a: fisher_p(*a, **kw)


def _mass(**kw):
    return lambda *a: mass_by_class(*a, **kw)


def _design(sink, loss):
    return lambda h: {"sink": sink, "end step loss": loss}[h]


# ------------------------------------------------------------------ known wrong answers
@pytest.fixture(autouse=True)
def _fresh_tries():
    """Each test is a new session for Exercise 7.2's limit on wrong designs."""
    ex._TRIES["wrong"] = 0
    yield
    ex._TRIES["wrong"] = 0


WRONG = {
    "check_fisher_p": [
        (lambda *a: fisher_exact(*a), "the book's own"),
        (lambda *a: ex.fisher_p_reference(*a), "the book's own"),
        (_fp(tail="own"), "one-sided p"),
        (_fp(tail="up"), "one-sided p"),
        (_fp(tail="double"), "twice the one-sided p"),
        (_fp(observed=False), "the observed table itself counts"),
        (_fp(ties=False), "exactly as probable as the observed one"),
        (fisher_p_lgamma, "exactly as probable as the observed one"),
        (_fp(ties=False, observed=False), "strictly less probable"),
        (_fp(keep="more"), "at least as probable"),
        (fisher_p_chi2, "chi-square (normal) approximation"),
        (lambda *a: fisher_p_chi2(*a, yates=True), "chi-square (normal) approximation"),
        (fisher_p_z, "chi-square (normal) approximation"),
        (fisher_p_observed, "the observed table alone"),
        (lambda *a: (1.0, fisher_p(*a)), "(statistic, p)"),
        (lambda *a: [fisher_p(*a)] * 3, "should be one number"),
        (lambda *a: float("nan"), "is nan"),
        (lambda *a: 1.5, "between 0 and 1"),
        (lambda *a: fisher_p(*a) * 1.01, "nor one of the usual slips"),
        (lambda *a: round(fisher_p(*a), 6), "your p is 0,"),   # 5e-9 is not 0: no atol
        (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    ],
    "check_mass_by_class": [
        (lambda *a: ex.mass_by_class_reference(*a), "the book's own"),
        (_mass(right_at_t=True), "align[t], the source position it copies"),
        (_mass(neighbours_anywhere=True), "the end token after the last word and the start"),
        (_mass(order=("right", "neighbours", "last word", "end", "start")),
         "the last word takes precedence over the neighbours"),
        (_mass(last_twice=True), "counted the last word twice"),
        (_mass(partition=False), "must partition the positions"),
        (_mass(start_always=True), "position 0 is a start token only when start is True"),
        (_mass(swap=True), "'end' and 'start' are swapped"),
        (_mass(average="sum"), "you summed over the steps"),
        (_mass(average="all"), "divides by T·L'"),
        (_mass(average="positions"), "averaged over the positions instead of the steps"),
        (lambda *a: {**mass_by_class(*a), "right": mass_by_class(*a)["right"] + 0.01},
         "your masses sum to"),
        (lambda *a: {**mass_by_class(*a), "right": mass_by_class(*a)["other"],
                     "other": mass_by_class(*a)["right"]}, "your mass on 'right' is off"),
        (lambda *a: list(mass_by_class(*a).values()), "should return a dict"),
        (lambda *a: {c: v for c, v in mass_by_class(*a).items() if c != "other"},
         "missing ['other']"),
        (lambda *a: {**mass_by_class(*a), "pad": 0.0}, "not a class: ['pad']"),
        (lambda *a: {**mass_by_class(*a), "end": [0.0, 0.0]},
         "the mass of 'end' should be one number"),
    ],
    "check_ablation": [
        (lambda h: {"eos": False}, "changes the task (no end to predict"),
        (_design({"eos_side": "source"}, {"end_loss": False}), "keeps the sink"),
        (_design({"eos_side": "target"}, {"end_loss": False}), "changes the source too"),
        (_design({"end_score_grad": False}, {"end_loss": False}), "one push toward the sink"),
        (_design({"end_state_grad": False}, {"end_loss": False}),
         "not whether attention may collect"),
        (_design({"end_loss": False}, {"end_loss": False}), "tests the other hypothesis"),
        (lambda h: {"mask_end": True}, "removes the sink, the other hypothesis"),
        (_design({"mask_end": True}, {"eos_side": "source"}), "removes the whole end step"),
        (_design({"mask_end": True}, {"eos_side": "target"}), "it tests the other hypothesis"),
        (_design({"mask_end": True}, {"end_score_grad": False}), "one route of that loss"),
        (_design({"mask_end": True}, {"end_state_grad": False}), "still trains the output"),
        (lambda h: {}, "that changes nothing"),
        (lambda h: {"eos": False, "start": True}, "a start token instead of the end token"),
        (lambda h: {"eos": False, "start": True, "mask_start": True},
         "removes the end token altogether"),
        (lambda h: {"mask_end": True, "eos_side": "source"}, "the second also removes"),
        (lambda h: {"mask_end": True, "end_loss": False}, "changes 2 things at once"),
        (lambda h: {"min_length": 10}, "lengths that vary change the task"),
        (lambda h: {"min_length": 10, "eos": False}, "changes the lengths and removes"),
        (lambda h: {"min_length": 5}, "none of the chapter's conditions"),
        (lambda h: {"mask_ends": True}, "which is no field of EndTokenConfig"),
        (lambda h: {"hidden": 32}, "changes the model or its training"),
        (lambda h: {"mask_end": "yes"}, "no valid configuration: EndTokenConfig.mask_end"),
        (lambda h: {"eos": False, "mask_end": True}, "no valid configuration"),
        (lambda h: ch.condition_name(ch.condition_config("masked")), "a condition's name"),
        (lambda h: ["mask_end"], "should be a dict"),
        (lambda h: 1 / 0, "raised ZeroDivisionError"),
        (lambda: {"mask_end": True}, "raised TypeError"),
    ],
}


# ------------------------------------------------------------------ the tests
(test_reference_solution_passes, test_known_wrong_answer_gets_its_hint,
 test_stub_is_not_attempted, test_wrong_answer_as_solution_raises, test_bad_arguments,
 test_every_checker_is_tested_and_has_wrong_answers) = scaffold_tests(
    ex, CHECKS, WRONG)


def test_the_module_references_are_refused_as_answers(capsys):
    """#55: handing a checker the library's own reference (or a function that calls it, or
    the metric it wraps) is not the exercise: the checker says so."""
    for check, ref in ((ex.check_fisher_p, ex.fisher_p_reference),
                       (ex.check_fisher_p, lambda *a: fisher_exact(*a)),
                       (ex.check_mass_by_class, ex.mass_by_class_reference)):
        r = check(ref)
        assert r.status == "wrong" and "the book's own implementation" in r.message
    assert ex.check_ablation(ex.ablation_reference, solution=True)
    assert all(ex.fisher_p_reference(*c) == fisher_exact(*c) for c in ex.FISHER_CASES)
    for name in ("check_fisher_p", "check_mass_by_class", "check_ablation"):
        assert CHECKERS[name] is getattr(ex, name) and getattr(ex, name).title
    capsys.readouterr()


def test_the_fisher_cases_hold_the_chapters_comparisons_and_a_float_tie():
    for case in ((35, 40, 9, 40), (21, 40, 9, 40), (9, 40, 9, 40), (40, 40, 19, 40),
                 (0, 40, 9, 40)):
        assert case in ex.FISHER_CASES
    assert fisher_exact(9, 40, 9, 40) == 1.0
    # the log-gamma route keeps the tie of the 40-run tables by luck, drops (0, 2, 4, 6)'s:
    # the case that makes a missing tolerance visible
    assert fisher_p_lgamma(0, 2, 4, 6) == pytest.approx(fisher_exact(0, 2, 4, 6) / 2)


def test_the_ties_hint_is_given_even_where_dropping_a_tie_equals_dropping_the_observed():
    # with groups of one size the mirror table ties with the observed one, so the two
    # mistakes give one p there: the checker names the one that fits every case
    assert fisher_p(35, 40, 9, 40, ties=False) == pytest.approx(
        fisher_p(35, 40, 9, 40, observed=False))
    assert "exactly as probable" in ex.check_fisher_p(_fp(ties=False)).message
    assert "the observed table itself" in ex.check_fisher_p(_fp(observed=False)).message


def _probe_batch(name, length=6):
    """A tiny untrained model of condition ``name`` with random scores (attention spread
    everywhere), two seeds, and a batch of 8 for each: as tests/test_ch7.py builds them."""
    cfg = ch.condition_config(name, length=length)
    task = cfg.task()
    torch.manual_seed(0)
    model = cfg.model_fn(task)(seeds=[0, 1])
    with torch.no_grad():
        model.score.normal_(0, 0.5)
    b = {k: torch.stack([v, v]) for k, v in
         task.sample(torch.Generator().manual_seed(0), 8).items()}
    return task, model, b


@pytest.mark.parametrize("name", ["both", "none", "source", "target", "masked", "start",
                                  "source, masked", "start, masked"])
def test_the_mass_reference_is_the_chapters_end_probe(name):
    task, model, b = _probe_batch(name)
    with torch.no_grad():
        probes = ch.end_probe(task)(model, b)
        alpha = model(b["src"], b["tgt_in"], **forward_masks(b))["alpha"].mean(1)
    first = int(task.start)
    end_pos = task.length + first if task.eos_in_source else None
    for s in range(alpha.shape[0]):
        per_example = []
        for i in range(alpha.shape[1]):
            words = (b["tgt"][s, i] < task.vocab).numpy()
            m = ex.mass_by_class_reference(alpha[s, i].double().numpy()[words],
                                           b["align"][s, i].numpy()[words], first,
                                           task.length, end_pos, task.start)
            assert sum(m.values()) == pytest.approx(1.0, abs=1e-6)
            assert list(m) == list(CLASSES)
            per_example.append([m[c] for c in CLASSES])
        mean = np.mean(per_example, 0)
        np.testing.assert_allclose(mean, [float(probes[f"mass_{c}"][s]) for c in CLASSES],
                                   rtol=1e-5, atol=1e-6)
        assert mean.min() >= 0 and (mean > 0).sum() >= 3, mean   # not a trivial spread


def test_the_mass_cases_sum_to_one_and_use_every_class():
    total = np.zeros(len(CLASSES))
    for case in ex._mass_cases():
        m = ex.mass_by_class_reference(*case)
        assert sum(m.values()) == pytest.approx(1.0, abs=1e-12)
        total += np.array([m[c] for c in CLASSES])
    assert (total > 0).all(), dict(zip(CLASSES, total))


def test_the_ablation_line_prints_the_stored_rows_against_both(capsys):
    rows = ch.load_sweep()
    result = ex.check_ablation(ablation)
    assert result and capsys.readouterr().out.startswith("✓ Exercise 7.2")
    k0, n0 = ch.successes(rows["both, L=20"])
    for hypothesis, name in ex.HYPOTHESES.items():
        k, n = ch.successes(rows[ch.row_name(name)])
        p = fisher_exact(k, n, k0, n0)
        assert (f"{hypothesis} -- {ch.LABELS[name]}: {k} of {n} runs copy, "
                f"{ch.LABELS['both']}: {k0} of {n0} (Fisher p = {p:.2g})") in result.message
    assert ex.HYPOTHESES == {"sink": "masked", "end step loss": "no end loss"}
    for hypothesis, name in ex.HYPOTHESES.items():
        assert ex.ablation_reference(hypothesis) == ch.CONDITIONS[name]


def test_the_ablation_refuses_bad_arguments_naming_them(capsys):
    with pytest.raises(ValueError, match=r"^hypothesis must be one of \('sink', 'end step "
                                         r"loss'\); got 'attention'"):
        ex.ablation_reference("attention")
    with pytest.raises(TypeError, match=r"^hypothesis must be one of"):
        ex.ablation_reference(1)
    with pytest.raises(TypeError, match="answer must be the exercise's function"):
        ex.check_ablation({"mask_end": True})           # the fields, not the function
    with pytest.raises(TypeError, match="solution must be True or False"):
        ex.check_ablation(ablation, solution=1)
    assert capsys.readouterr().out == ""


def test_a_missing_stored_sweep_is_not_the_readers_error(monkeypatch):
    """The stored rows are read once the design is right, outside the hint's try: a
    damaged sweep raises (naming itself), it is not reported as the reader's crash."""
    def broken():
        raise ValueError("the stored sweep x.json is missing: run the sweep")

    monkeypatch.setattr(ch, "load_sweep", broken)
    with pytest.raises(ValueError, match="the stored sweep x.json is missing"):
        ex.check_ablation(ablation)


# ------------------------------------------------------------------ the gaming learner (#30)
def _first_case_only(right, gamed):
    """Right on the checker's first case (its first call), gamed on every other."""
    calls = []

    def answer(*args):
        calls.append(1)
        return right(*args) if len(calls) == 1 else gamed(*args)
    return answer


GAMED = {
    "check_fisher_p": [
        lambda *a: 0.0,
        lambda *a: 0.5,
        lambda *a: 1.0,
        _first_case_only(fisher_p, lambda *a: 0.05),
    ],
    "check_mass_by_class": [
        lambda *a: dict.fromkeys(CLASSES, 1 / 6),
        lambda *a: {**dict.fromkeys(CLASSES, 0.0), "right": 1.0},
        lambda *a: dict.fromkeys(CLASSES, 0.0),
        _first_case_only(mass_by_class, lambda *a: dict.fromkeys(CLASSES, 0.5)),
    ],
    "check_ablation": [
        lambda h: {},
        lambda h: {"eos": False},
        lambda h: {"mask_end": True, "end_loss": False},
    ],
}


(test_every_checker_has_gamed_answers,
 test_gamed_answer_is_refused_and_its_hint_leaks_nothing) = gamed_tests(CHECKS, GAMED)


def test_float32_and_tensor_answers_are_accepted(capsys):
    assert ex.check_fisher_p(lambda *a: np.float32(fisher_p(*a)))
    assert ex.check_fisher_p(lambda *a: torch.tensor(fisher_p(*a), dtype=torch.float64))
    assert ex.check_mass_by_class(lambda al, *a: {c: torch.tensor(v, dtype=torch.float32)
                                                  for c, v in mass_by_class(
                                                      al.astype(np.float32), *a).items()})
    capsys.readouterr()


def test_the_design_exercise_cannot_be_won_by_trying_every_condition(capsys):
    """#55: after DESIGN_TRIES wrong designs the checker grades none, not even the right
    one, and says why; the limit is per session."""
    tries = [lambda h, c=c: dict(ch.CONDITIONS[c]) for c in ch.CONDITIONS
             if c not in ex.HYPOTHESES.values()]
    for answer in tries[:ex.DESIGN_TRIES]:
        r = ex.check_ablation(answer)
        assert r.status == "wrong" and "no longer grades" not in r.message
    for answer in (tries[ex.DESIGN_TRIES], ex.ablation_reference):
        r = ex.check_ablation(answer)
        assert r.status == "wrong" and "no longer grades designs" in r.message
    ex._TRIES["wrong"] = 0                                  # a new kernel
    assert ex.check_ablation(ex.ablation_reference)
    capsys.readouterr()
