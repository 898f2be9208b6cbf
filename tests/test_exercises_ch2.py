"""Chapter 2's exercise checkers (attn_core.exercises.ch2): each accepts its reference, rejects
the usual mistakes with their specific hint, reports a stub as not attempted, and raises on a
wrong solution.
That the notebook uses every checker in a stub and a solution cell: tests/test_learning.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from attn_core.exercises import ch2 as ex
from attn_core.theory import sen_curve
from exercise_scaffold import hint_leaks


def _stub(*args):
    raise NotImplementedError("fill me in")


# --------------------------------------------------------------------------- 2.1 forward pass
def _forward(x, emb, keys, q, U, axis=-1, score_table=None, pool=None, probs=False):
    s = (keys if score_table is None else score_table)[x] @ q
    p = torch.softmax(s, dim=axis)
    v_bar = (p.unsqueeze(-1) * (emb if pool is None else pool)[x]).sum(1)
    logits = v_bar @ U
    return p, torch.softmax(logits, -1) if probs else logits


def forward_ref(x, emb, keys, q, U):
    return _forward(x, emb, keys, q, U)


def forward_numpy(x, emb, keys, q, U):
    x, emb, keys, q, U = (np.asarray(a) for a in (x, emb, keys, q, U))
    s = keys[x] @ q
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p, np.einsum("nl,nld->nd", p, emb[x]) @ U


FORWARD_WRONG = {
    "softmax over sentences": (lambda x, e, k, q, U: _forward(x, e, k, q, U, axis=0),
                               "last axis"),
    "scores from embeddings": (lambda x, e, k, q, U: _forward(x, e, k, q, U, score_table=e),
                               "key"),
    "pooled keys": (lambda x, e, k, q, U: _forward(x, e, k, q, U, pool=k), "not the keys"),
    "probabilities": (lambda x, e, k, q, U: _forward(x, e, k, q, U, probs=True),
                      "probabilities"),
    "plain mean": (lambda x, e, k, q, U: (torch.softmax(k[x] @ q, -1), e[x].mean(1) @ U),
                   "plain mean"),
    "unnormalised": (lambda x, e, k, q, U: (torch.exp(k[x] @ q),
                                            (torch.exp(k[x] @ q).unsqueeze(-1) * e[x]).sum(1)
                                            @ U), "sum to 1"),
    "one output": (lambda x, e, k, q, U: _forward(x, e, k, q, U)[1], "pair"),
    "transposed p": (lambda x, e, k, q, U: (_forward(x, e, k, q, U)[0].T,
                                            _forward(x, e, k, q, U)[1]), "shape"),
}


# --------------------------------------------------------------------------- 2.2 half attention
def half_ref(m):
    s = math.log(m)
    return s, math.sqrt(2 * (s + (math.exp(s) - 1) / m))


HALF_WRONG = {
    "m + 1 competitors": (lambda m: (math.log(m + 1), 1.0), "competitors"),
    "log2": (lambda m: (math.log2(m), 1.0), "natural logarithm"),
    "sqrt(2s)": (lambda m: (math.log(m), math.sqrt(2 * math.log(m))), "naive"),
    "no -1": (lambda m: (math.log(m), math.sqrt(2 * (math.log(m) + 1))), "(e^s − 1)/m"),
    "squared": (lambda m: (math.log(m), half_ref(m)[1] ** 2), "square"),
    "no factor 2": (lambda m: (math.log(m), half_ref(m)[1] / math.sqrt(2)), "factor 2"),
    "one number": (lambda m: math.log(m), "pair"),
    "attention not score": (lambda m: (1 / (1 + m), 1.0), "not an attention weight"),
}


# --------------------------------------------------------------------------- 2.3 what if
def _score(v, m, bracket=lambda t, m: t + math.expm1(t) / m, target=lambda v: v * v / 2):
    lo, hi = 0.0, max(target(v), 0.0)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if bracket(mid, m) < target(v) else (lo, mid)
    return (lo + hi) / 2


def _share(s, m, extra=0):
    return math.exp(s) / (math.exp(s) + m + extra)


def attention_ref(v, m):
    return _share(_score(v, m), m)


def attention_interp(v, m):  # another correct method: interpolate Eq. 10 on a grid
    grid = np.linspace(0, max(v * v / 2, 1e-12), 200_001)
    s = float(np.interp(v, sen_curve(grid, m), grid))
    return _share(s, m)


ATTENTION_WRONG = {
    "naive sqrt(2s)": (lambda v, m: _share(v * v / 2, m), "naive"),
    "m + 1": (lambda v, m: _share(_score(v, m), m, extra=1), "competitors"),
    "score": (lambda v, m: _score(v, m), "you return the score"),
    "odds": (lambda v, m: math.exp(_score(v, m)) / m, "between 0 and 1"),
    "no -1": (lambda v, m: _share(_score(v, m, bracket=lambda t, m: t + math.exp(t) / m), m),
              "(e^s − 1)/m"),
    "norm not squared": (lambda v, m: _share(_score(v, m, target=lambda v: v), m),
                         "how ‖v‖ enters"),
    "far off": (lambda v, m: 0.5, "is off"),
}


# --------------------------------------------------------------------------- 2.4 Theorem 1
def theorem1_ref(s, v0, m):
    return math.sqrt(v0 ** 2 + 2 * (s + math.expm1(s) / m))


def _bracket(s, m):
    return s + math.expm1(s) / m


THEOREM1_WRONG = {
    "Eq. 10 (math.sqrt)": (lambda s, v0, m: math.sqrt(2 * _bracket(s, m)), "did not start"),
    "Eq. 10 (np.sqrt)": (lambda s, v0, m: np.sqrt(np.float64(2 * _bracket(s, m))),
                         "did not start"),
    "adds norms": (lambda s, v0, m: v0 + math.sqrt(max(2 * _bracket(s, m), 0)), "squares"),
    "no -1/m": (lambda s, v0, m: math.sqrt(v0 ** 2 + 2 * (s + math.exp(s) / m)), "1/m"),
    "no factor 2": (lambda s, v0, m: math.sqrt(v0 ** 2 + _bracket(s, m)), "factor 2"),
    "squared": (lambda s, v0, m: v0 ** 2 + 2 * _bracket(s, m), "not its square"),
    "far off": (lambda s, v0, m: 1.0, "is off"),
}

CASES = {
    "check_attention_forward": (forward_ref, FORWARD_WRONG),
    "check_half_attention": (half_ref, HALF_WRONG),
    "check_attention_at_norm": (attention_ref, ATTENTION_WRONG),
    "check_theorem1_norm": (theorem1_ref, THEOREM1_WRONG),
}
WRONG = [(name, label, fn, word) for name, (_, wrong) in CASES.items()
         for label, (fn, word) in wrong.items()]


def test_every_checker_has_cases():
    defined = {n for n in vars(ex) if n.startswith("check_")}
    assert defined == set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_reference_passes(name, capsys):
    result = getattr(ex, name)(CASES[name][0], solution=True)
    assert bool(result) is True and result.status == "right"
    assert capsys.readouterr().out.startswith("✓ Exercise 2.")


@pytest.mark.parametrize("answer", [forward_numpy])
def test_forward_accepts_numpy(answer):
    assert ex.check_attention_forward(answer, solution=True)


def test_what_if_accepts_another_method():
    assert ex.check_attention_at_norm(attention_interp, solution=True)


@pytest.mark.parametrize("name,label,fn,word", WRONG, ids=[f"{n}-{lab}" for n, lab, _, _ in WRONG])
def test_wrong_answer_gets_its_hint(name, label, fn, word, capsys):
    result = getattr(ex, name)(fn)
    assert result.status == "wrong" and not result
    assert word in result.message, result.message
    assert capsys.readouterr().out.startswith("✗ Exercise 2.")


@pytest.mark.parametrize("name,label,fn,word", WRONG, ids=[f"{n}-{lab}" for n, lab, _, _ in WRONG])
def test_wrong_solution_raises(name, label, fn, word):
    with pytest.raises(AssertionError, match="fails its checker"):
        getattr(ex, name)(fn, solution=True)


@pytest.mark.parametrize("name", CASES)
def test_stub_is_not_attempted(name, capsys):
    result = getattr(ex, name)(_stub)
    assert result.status == "not attempted" and not result
    assert capsys.readouterr().out.startswith("· Exercise 2.")


def test_sen_score_inverts_the_curve():
    s = np.array([0.0, 0.3, 2.0, 5.0])
    for m in (1, 20):
        np.testing.assert_allclose(ex.sen_score(sen_curve(s, m), m), s, atol=1e-9)
    with pytest.raises(ValueError, match="norm"):
        ex.sen_score(-1.0, 20)
    with pytest.raises(ValueError, match=r"m \(non-topic words per sentence\) must be >= 1"):
        ex.sen_score(1.0, 0)
    with pytest.raises(TypeError, match="m must be an int >= 1"):
        ex.sen_score(1.0, 2.5)


# ------------------------------------------------------------------------- float32 work (#30)
def half_torch32(m):  # torch's default float32 throughout
    s = torch.log(torch.tensor(float(m)))
    return s, torch.sqrt(2 * (s + torch.expm1(s) / m))


def theorem1_torch32(s, v0, m):
    s, v0 = torch.tensor(float(s)), torch.tensor(float(v0))
    return torch.sqrt(v0 ** 2 + 2 * (s + (torch.exp(s) - 1) / m))


def attention_bisect20(v, m):  # float32, 20 bisection steps (score error ~ v²/2 · 1e-6)
    v = torch.tensor(float(v))
    lo, hi = torch.tensor(0.0), v * v / 2
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if torch.sqrt(2 * (mid + torch.expm1(mid) / m)) < v else (lo, mid)
    s = (lo + hi) / 2
    return torch.exp(s) / (torch.exp(s) + m)


def forward_float32(x, emb, keys, q, U):
    return _forward(x, emb.float(), keys.float(), q.float(), U.float())


@pytest.mark.parametrize("name,answer", [
    ("check_half_attention", half_torch32), ("check_theorem1_norm", theorem1_torch32),
    ("check_attention_at_norm", attention_bisect20),
    ("check_attention_forward", forward_float32)])
def test_float32_work_is_accepted(name, answer):
    assert getattr(ex, name)(answer, solution=True)


# ------------------------------------------------------------------- the gaming learner (#30)
def _fwd_const(p_value, logit_value):
    def forward(x, emb, keys, q, U):
        p = torch.full(x.shape, 1 / x.shape[1] if p_value == "uniform" else p_value)
        return p, torch.full((x.shape[0], U.shape[1]), logit_value)
    return forward


def _fwd_right_p(x, emb, keys, q, U):  # one part fixed: the attention right, logits 0
    return forward_ref(x, emb, keys, q, U)[0], torch.zeros(x.shape[0], U.shape[1])


def _fwd_right_logits(x, emb, keys, q, U):  # the other part: logits right, p uniform
    return torch.full(x.shape, 1 / x.shape[1]), forward_ref(x, emb, keys, q, U)[1]


#: Answers of the right form that know nothing: all zeros, a constant, and (for the pair
#: answers) one part right and the other a constant. No checker may accept them, and their
#: hints may show none of the reference's own outputs. No ``allowed`` numbers: the only
#: numbers in these hints are the checkers' inputs (m, v, s, ‖v₀‖), which the hint_leaks
#: test would flag only if one coincided with a reference output.
GAMED = {
    "check_attention_forward": {
        "zeros": _fwd_const(0.0, 0.0), "uniform, logits 1": _fwd_const("uniform", 1.0),
        "p 0.5, logits 0.5": _fwd_const(0.5, 0.5), "p right, logits 0": _fwd_right_p,
        "logits right, p uniform": _fwd_right_logits},
    "check_half_attention": {
        "zeros": lambda m: (0.0, 0.0), "0.5": lambda m: (0.5, 0.5),
        "ones": lambda m: (1.0, 1.0), "s right, v 0": lambda m: (math.log(m), 0.0)},
    "check_attention_at_norm": {
        "zeros": lambda v, m: 0.0, "0.5": lambda v, m: 0.5, "ones": lambda v, m: 1.0,
        "uniform share": lambda v, m: 1 / (m + 1)},
    "check_theorem1_norm": {
        "zeros": lambda s, v0, m: 0.0, "0.5": lambda s, v0, m: 0.5,
        "ones": lambda s, v0, m: 1.0, "norm unchanged": lambda s, v0, m: v0},
}
GAMED_CASES = [(n, g) for n, answers in GAMED.items() for g in answers]


def test_every_checker_is_gamed():
    assert set(GAMED) == set(CASES) and all(len(a) >= 2 for a in GAMED.values())


@pytest.mark.parametrize("name,gamed", GAMED_CASES, ids=[f"{n}-{g}" for n, g in GAMED_CASES])
def test_a_gamed_answer_is_refused_and_its_hint_shows_no_reference_value(name, gamed,
                                                                          capsys):
    leaks = hint_leaks(getattr(ex, name), CASES[name][0], GAMED[name][gamed])
    assert not leaks, f"{gamed}: the hint shows the reference's {leaks}"
    assert "expected" not in capsys.readouterr().out.split("✗")[-1]


#: The hints that name an entry (a case of the checker's inputs): how to read it back.
NAMED_ENTRY = {
    "check_half_attention": (r"for m = (\d+)", lambda g: (int(g[0]),)),
    "check_attention_at_norm": (r"attention_at_norm\(([\d.]+), (\d+)\)",
                                lambda g: (float(g[0]), int(g[1]))),
    "check_theorem1_norm": (r"theorem1_norm\((-?[\d.]+), ([\d.]+), (\d+)\)",
                            lambda g: (float(g[0]), float(g[1]), int(g[2]))),
}


@pytest.mark.parametrize("name", NAMED_ENTRY)
@pytest.mark.parametrize("gamed", ["zeros", "0.5"])
def test_fixing_the_entry_a_hint_names_leaks_nothing_either(name, gamed, capsys):
    """The gamed answer with the entry its hint named made right (as if the learner had
    worked out that one case): still refused, and the next hint shows no reference value
    either, so copying from the hints never reaches ✓."""
    check, reference = getattr(ex, name), CASES[name][0]
    const = GAMED[name][gamed]
    pattern, parse = NAMED_ENTRY[name]
    named = re.search(pattern, check(const).message)
    assert named, "the hint names no entry: update NAMED_ENTRY"
    case = parse(named.groups())

    def one_entry_fixed(*args):
        return reference(*args) if args == case else const(*args)

    leaks = hint_leaks(check, reference, one_entry_fixed)
    assert not leaks, f"{gamed}, {case} fixed: the hint shows the reference's {leaks}"
    again = re.search(pattern, check(one_entry_fixed).message)  # the next hint, if it names one
    assert again is None or again.groups() != named.groups()


def test_forward_uniform_attention_gets_its_own_hint():
    """#30: a uniform attention (the model at initialisation) got "p is off at index (4, 1):
    got 0.25, expected 0.572819" -- a value to copy. Now the hint names the mistake."""
    result = ex.check_attention_forward(_fwd_const("uniform", 0.0))
    assert "uniform" in result.message and "expected" not in result.message


def test_forward_right_attention_wrong_logits_is_told_so():
    result = ex.check_attention_forward(_fwd_right_p)
    assert "attention is right but the logits are off" in result.message
    assert "expected" not in result.message
