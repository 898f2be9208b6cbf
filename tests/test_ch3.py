"""Chapter 3: IBM Model 1, the agreement metric, the optimal-attention solver, the corpora."""

import math

import numpy as np
import pytest
import torch

from attn_core import theory
from attn_core.data import (TOY_CORPUS, ClassificationAsTranslation, KeywordTask,
                            ParallelCorpusTask, encode_corpus)
from attn_core.chapters.ch3_ibm1 import run_bow_classifier
from attn_core.metrics import agreement, agreement_baseline, alignment_accuracy, kendall_tau
from attn_core.models import BagOfWordsLogistic

# "das Haus -> the house", "das Buch -> the book": source das=0 Haus=1 Buch=2, target the=0
# house=1 book=2 (the classic two-sentence IBM Model 1 example).
SRC = [[0, 1], [0, 2]]
TGT = [[0, 1], [0, 2]]


def test_ibm1_em_two_sentences_by_hand():
    r = theory.ibm1_em(SRC, TGT, iterations=2)
    # iteration 1 (uniform start): every alignment 1/2, counts = the count table
    np.testing.assert_allclose(r["history"][0], [[1 / 2, 1 / 4, 1 / 4],
                                                 [1 / 2, 1 / 2, 0],
                                                 [1 / 2, 0, 1 / 2]])
    # iteration 2: "house" aligns to das with t=1/4 vs Haus 1/2 -> posteriors 1/3, 2/3;
    # c(das, ·) = (1, 1/3, 1/3) -> (3/5, 1/5, 1/5); c(Haus, ·) = (1/2, 2/3, 0) -> (3/7, 4/7, 0)
    np.testing.assert_allclose(r["history"][1], [[3 / 5, 1 / 5, 1 / 5],
                                                 [3 / 7, 4 / 7, 0],
                                                 [3 / 7, 0, 4 / 7]])
    # log-likelihood: before = 2 * 2 * log(1/3); EM never lowers it
    assert math.isclose(r["log_likelihood"][0], 4 * math.log(1 / 3))
    assert np.all(np.diff(r["log_likelihood"]) > 0)


def test_ibm1_first_iteration_is_the_one_step_estimate():
    task = ParallelCorpusTask(vocab=8, length=4, n_pairs=50, distinct=False, seed=3)
    c = task.corpus()
    C = theory.count_table(c["src"], c["tgt"], 8, 8)
    r = theory.ibm1_em(c["src"], c["tgt"], 8, 8, iterations=1)
    np.testing.assert_allclose(r["history"][0], theory.ibm1_translation(C))


def test_ibm1_em_recovers_dictionary_where_one_step_fails():
    task = ParallelCorpusTask(vocab=20, length=8, n_pairs=800, zipf=1.0, distinct=False, seed=0)
    c = task.corpus()
    C = theory.count_table(c["src"], c["tgt"], 20, 20)
    assert theory.dictionary_recovery(theory.ibm1_translation(C), task.dictionary) < 0.5
    em = theory.ibm1_em(c["src"], c["tgt"], 20, 20, iterations=5)
    assert theory.dictionary_recovery(em["trans"], task.dictionary) == 1.0


def test_ibm1_null_word_and_probe():
    r = theory.ibm1_em(SRC, TGT, iterations=3, null=True)
    assert r["trans"].shape == (4, 3)                       # NULL is the last row
    np.testing.assert_allclose(r["trans"].sum(1), 1)
    beta, alpha = theory.ibm1_probe(r["trans"][:3], [0, 1], [0, 1])
    assert beta.shape == alpha.shape == (2, 2)
    np.testing.assert_allclose(alpha.sum(1), 1)
    assert alpha[1, 1] > alpha[1, 0]                        # "house" aligns to Haus


def test_ibm1_translation_rows_and_slides_table():
    T = theory.ibm1_translation([[2, 2, 0], [0, 0, 0]])
    np.testing.assert_allclose(T, [[0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    toy = encode_corpus(TOY_CORPUS)
    assert toy["src_words"][:5] == ("Dieser", "Film", "ist", "großartig", "schlecht")
    C = 4 * theory.count_table(toy["src"][:2], toy["tgt"][:2], 5, 5)
    np.testing.assert_array_equal(C, [[2, 2, 2, 1, 1]] * 3 + [[1, 1, 1, 1, 0], [1, 1, 1, 0, 1]])


def test_count_table_divides_by_the_source_length():
    # L = 2 source words, T = 3 target words: every co-occurrence adds 1/L = 1/2 (SZKS Eq. 13).
    # Dividing by T, or swapping the sides, gives a different table (the slides' 2-pair table is
    # symmetric and cannot tell).
    C = theory.count_table([[0, 1]], [[0, 0, 1]], 2, 2)
    np.testing.assert_allclose(C, [[1.0, 0.5], [1.0, 0.5]])
    assert not np.allclose(theory.count_table([[0, 0, 1]], [[0, 1]], 2, 2), C)


def test_ibm1_maps_equal_the_per_pair_probe():
    task = ParallelCorpusTask(vocab=8, length=5, n_pairs=40, distinct=False, reorder=0.3, seed=4)
    c = task.corpus()
    trans = theory.ibm1_translation(theory.count_table(c["src"], c["tgt"], 8, 8))
    beta, alpha = theory.ibm1_maps(trans, c["src"], c["tgt"])
    assert beta.shape == alpha.shape == (40, 5, 5)
    for m in (0, 7, 39):
        b, a = theory.ibm1_probe(trans, c["src"][m], c["tgt"][m])
        np.testing.assert_array_equal(beta[m], b)
        np.testing.assert_allclose(alpha[m], a)


def test_one_step_alignment_is_right_where_row_recovery_fails():
    """SZKS Eq. 15-16: the one-step table's argmax over *source positions* holds the right
    word for every output word, although its argmax over *output words* (dictionary recovery)
    is wrong for most rows on a Zipfian corpus. Its strict score is exactly the tie ceiling."""
    task = ParallelCorpusTask(vocab=20, length=8, n_pairs=800, zipf=1.0, distinct=False,
                              reorder=0.3, seed=0)
    c = task.corpus()
    trans = theory.ibm1_translation(theory.count_table(c["src"], c["tgt"], 20, 20))
    assert theory.dictionary_recovery(trans, task.dictionary) < 0.5
    r = alignment_accuracy(theory.ibm1_maps(trans, c["src"], c["tgt"])[0], c["src"], c["align"])
    assert r["word"] == 1.0 and r["position"] == pytest.approx(r["ceiling"], abs=1e-12)
    assert r["ceiling"] < 1.0                                   # Zipf: words repeat
    # the raw counts (not normalised per source word) point elsewhere
    raw = alignment_accuracy(theory.ibm1_maps(theory.count_table(c["src"], c["tgt"], 20, 20),
                                              c["src"], c["tgt"])[0], c["src"], c["align"])
    assert raw["word"] < 0.6


def test_alignment_accuracy_by_hand():
    src = np.array([[3, 5, 3]])                     # word 3 at positions 0 and 2
    align = np.array([[2, 1, 2]])                   # gold positions of the 3 output words
    maps = np.array([[[0.2, 0.0, 0.8],              # t=0: gold position 2
                      [1.0, 0.2, 0.8],              # t=1: wrong word (gold is word 5)
                      [0.9, 0.0, 0.1]]])            # t=2: right word, other copy
    r = alignment_accuracy(maps, src, align)
    assert r["position"] == pytest.approx(1 / 3)
    assert r["word"] == pytest.approx(2 / 3)
    assert r["ceiling"] == pytest.approx(1 / 3)     # position 2 is not the first copy of 3
    assert r["mass"] == pytest.approx((1.0 + 0.1 + 1.0) / 3)   # row 1 sums to 2
    # leading axes are kept; negative maps have no mass
    both = alignment_accuracy(np.stack([maps, -maps]), src, align)
    assert both["position"].shape == (2,) and both["word"][0] == pytest.approx(2 / 3)
    assert np.isnan(both["mass"]).all()


def test_softmax_velocity_is_the_chain_rule():
    rng = np.random.default_rng(0)
    th, v = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    h = 1e-6
    sm = lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    fd = (sm(th + h * v) - sm(th - h * v)) / (2 * h)
    np.testing.assert_allclose(theory.softmax_velocity(th, v), fd, atol=1e-8)
    # at uniform probabilities it is the centred velocity divided by |O|
    np.testing.assert_allclose(theory.softmax_velocity(np.zeros((2, 6)), v[:2]),
                               (v[:2] - v[:2].mean(1, keepdims=True)) / 6)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: theory.ibm1_maps(np.ones((2, 2)), [[0, 5]], [[0]]), ValueError, "sources"),
    (lambda: theory.ibm1_maps(np.ones((2, 2)), [[0, 1]], [[0], [1]]), ValueError, "pair up"),
    (lambda: theory.ibm1_maps(np.ones(2), [[0]], [[0]]), ValueError, "2-D"),
    (lambda: theory.ibm1_maps(np.ones((2, 2)), [[0.0]], [[0]]), TypeError, "sources"),
    (lambda: theory.softmax_velocity(np.ones(3), np.ones(4)), ValueError, "same shape"),
    (lambda: theory.softmax_velocity(np.ones(3), [np.nan] * 3), ValueError, "logit_velocity"),
    (lambda: alignment_accuracy(np.ones((1, 2, 2)), [[0, 1]], [[0, 2]]), ValueError,
     r"align must hold source positions in \[0, 1\]"),
    (lambda: alignment_accuracy(np.ones((2, 2)), [[0, 1]], [[0, 1]]), ValueError,
     r"\(\.\.\., B, T, L\)"),
    (lambda: alignment_accuracy(np.ones((1, 2, 2)), [[0, 1, 2]], [[0, 1]]), ValueError,
     "sources must be"),
    (lambda: alignment_accuracy(np.ones((1, 2, 2)), [[0, -1]], [[0, 1]]), ValueError,
     "sources"),
])
def test_new_chapter3_functions_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("call, exc, match", [
    (lambda: theory.ibm1_em([], []), ValueError, "empty"),
    (lambda: theory.ibm1_em([[0]], [[0], [1]]), ValueError, "pair up"),
    (lambda: theory.ibm1_em([[0], []], [[0], [1]]), ValueError, "empty side"),
    (lambda: theory.ibm1_em(SRC, TGT, iterations=0), ValueError, "iterations"),
    (lambda: theory.ibm1_em("ab", "ab"), TypeError, "strings"),
    (lambda: theory.ibm1_translation([[-1.0]]), ValueError, ">= 0"),
    (lambda: theory.ibm1_probe(np.ones((2, 2)), [0, 5], [0]), ValueError, "out of range"),
    (lambda: theory.optimal_attention([[0, 0]], target=2), ValueError, "target"),
    (lambda: theory.optimal_attention([[0, 0]], method="newton"), ValueError, "method"),
])
def test_ibm1_and_solver_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------------------------- agreement
def test_agreement_top_k_with_integer_rounding():
    u = np.array([[0.0, 1.0, 0.0, 0.0]])                   # argmax u = position 1
    assert agreement(u, np.array([[0.1, 0.9, 0.3, 0.2]])) == 1.0
    assert agreement(u, np.array([[0.95, 0.9, 0.3, 0.2]])) == 0.0   # one position above, L < 20
    # L = 30, k = 5%: k*L = 1.5 -> ranks 0 and 1 count, rank 2 does not
    v = np.arange(30.0)[::-1].copy()                        # position j has rank j
    for rank, hit in [(0, 1.0), (1, 1.0), (2, 0.0)]:
        u = np.zeros(30); u[rank] = 1
        assert agreement(u, v) == hit
    # k = 0.05, L = 60: k*L = 3 exactly (3.0000000000000004 in floating point): ranks 0..2 only
    v = np.arange(60.0)[::-1].copy()
    u = np.zeros(60); u[3] = 1
    assert agreement(u, v) == 0.0
    assert agreement(u, v, k=1.0) == 1.0


def test_agreement_baseline_exact():
    assert agreement_baseline(10) == pytest.approx(0.1)
    assert agreement_baseline(30) == pytest.approx(2 / 30)
    assert agreement_baseline(60) == pytest.approx(3 / 60)
    assert agreement_baseline([10, 20]) == pytest.approx((0.1 + 0.05) / 2)
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 30))
    assert agreement_baseline(v) == pytest.approx(2 / 30)
    # ties raise the baseline: with a constant row every position is in the top
    assert agreement_baseline(np.ones((3, 10))) == 1.0
    # the exact baseline equals the average over every possible argmax of u
    v = rng.normal(size=(5, 12)).round(0)                   # many ties
    avg = np.mean([agreement(np.eye(12)[j][None].repeat(5, 0), v) for j in range(12)])
    assert agreement_baseline(v) == pytest.approx(avg)


def test_kendall_tau():
    u = np.array([1.0, 2.0, 3.0, 4.0])
    assert kendall_tau(u, u) == 1.0 and kendall_tau(u, -u) == -1.0
    assert kendall_tau(u, np.array([1.0, 3.0, 2.0, 4.0])) == pytest.approx(4 / 6)
    assert math.isnan(kendall_tau(np.ones(4), u))           # constant: undefined
    # tau-b with ties: x = (1, 2, 2, 3), y = (1, 2, 3, 4): n_c = 5, n_d = 0, one tie in x
    assert kendall_tau(np.array([1.0, 2, 2, 3]), u) == pytest.approx(5 / math.sqrt(5 * 6))


K_RANGE = r"k \(the top fraction\) must be"


@pytest.mark.parametrize("call, exc, match", [
    (lambda: agreement(np.ones(3), np.ones(3), k=0), ValueError, K_RANGE),
    (lambda: agreement(np.ones(3), np.ones(3), k=1.5), ValueError, K_RANGE),
    (lambda: agreement(np.ones(3), np.ones(3), k="5%"), TypeError, K_RANGE),
    (lambda: agreement(np.ones(3), np.ones(4)), ValueError, "u and v must have the same shape"),
    (lambda: agreement_baseline(np.ones(3), k=-0.1), ValueError, K_RANGE),
    (lambda: agreement_baseline([0, 3]), ValueError, "lengths must be >= 1"),
])
def test_agreement_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------------------------- optimal attention
def test_optimal_attention_counter_example():
    gammas = [[0, 0, 0], [0, -10, 5], [0, 5, -10]]
    for method in ("projected", "exponentiated"):
        r = theory.optimal_attention(gammas, target=0, method=method)
        np.testing.assert_allclose(r["alpha"], [0, 0.5, 0.5], atol=1e-3)
        assert r["loss"][-1] <= r["loss"][0]
    assert r["beta"].argmax() == 0 and r["beta"][0] == pytest.approx(1 / 3)


def test_optimal_attention_picks_the_right_word_when_it_is_simple():
    # one position predicts the target, the others are neutral: all attention goes there
    r = theory.optimal_attention([[0, 0], [3, 0], [0, 0]], target=0)
    np.testing.assert_allclose(r["alpha"], [0, 1, 0], atol=1e-6)
    assert r["loss"][-1] == pytest.approx(theory.attention_loss([0, 1, 0], [[0, 0], [3, 0], [0, 0]], 0))


# --------------------------------------------------------------------------- corpora
def test_parallel_corpus_translates_through_the_dictionary():
    task = ParallelCorpusTask(vocab=12, length=6, n_pairs=100, reorder=0.5, seed=2)
    c = task.corpus()
    d = task.dictionary
    assert sorted(d.tolist()) == list(range(12))            # a bijection
    torch.testing.assert_close(c["tgt"], d[c["src"].gather(1, c["align"])])
    assert (c["align"] != torch.arange(6)).any()            # some pairs are reordered
    assert all(len(set(row.tolist())) == 6 for row in c["src"])   # distinct by default
    b = task.sample(torch.Generator().manual_seed(0), 5)
    assert b["src"].max() < 12 and b["tgt"].min() >= 12 and (b["tgt_in"][:, 0] == task.bos).all()
    torch.testing.assert_close(b["tgt_in"][:, 1:], b["tgt"][:, :-1])
    assert task.model_vocab == 25
    # same seed, same corpus; held-out pairs come from the same dictionary
    torch.testing.assert_close(ParallelCorpusTask(vocab=12, length=6, n_pairs=100, reorder=0.5,
                                                  seed=2).corpus()["src"], c["src"])
    h = task.held_out(20)
    torch.testing.assert_close(h["tgt"] - 12, d[h["src"].gather(1, h["align"])])


def test_overlap_controls_the_diagonal():
    lo = ParallelCorpusTask.from_overlap(0.25, length=4, n_pairs=400)
    hi = ParallelCorpusTask.from_overlap(1.0, length=4, n_pairs=50)
    assert lo.vocab == 16 and lo.overlap == 0.25 and hi.vocab == 4
    for task, flat in ((lo, False), (hi, True)):
        c = task.corpus()
        T = theory.ibm1_translation(theory.count_table(c["src"], c["tgt"], task.vocab, task.vocab))
        T = T[:, task.dictionary.numpy()]
        off = T[~np.eye(task.vocab, dtype=bool)]
        if flat:
            np.testing.assert_allclose(T, 1 / task.vocab)    # permutations: a flat table
        else:
            assert np.diag(T).min() > off.max()


def test_overlap_contrast_is_an_identity():
    """With L distinct, uniformly drawn words per sentence every row of Trans has 1/L on the
    diagonal and (1 - 1/L)/(V - 1) off it on average: contrast (V - 1)/(L - 1) for any corpus."""
    for overlap, seed in ((0.25, 0), (0.5, 3)):
        task = ParallelCorpusTask.from_overlap(overlap, length=4, n_pairs=300, seed=seed)
        c = task.corpus()
        T = theory.ibm1_translation(theory.count_table(c["src"], c["tgt"], task.vocab,
                                                       task.vocab))[:, task.dictionary.numpy()]
        off = T[~np.eye(task.vocab, dtype=bool)].mean()
        assert np.diag(T).mean() / off == pytest.approx((task.vocab - 1) / 3, rel=1e-12)


def test_zipf_frequencies():
    task = ParallelCorpusTask(vocab=20, length=5, n_pairs=2000, zipf=1.0, distinct=False)
    counts = torch.bincount(task.corpus()["src"].flatten(), minlength=20)
    assert counts[0] > 3 * counts[10] and counts[0] > counts[1] > counts[5]


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"vocab": 1}, ValueError, r"vocab must be an int in \[2, "),
    ({"vocab": 5, "length": 6}, ValueError, r"vocab \(5\) must be >= length \(6\)"),
    ({"n_pairs": 0}, ValueError, r"n_pairs must be an int in \[1, "),
    ({"zipf": -1.0}, ValueError, "zipf must be a finite number >= 0"),
    ({"reorder": 1.5}, ValueError, r"reorder must be a probability in \[0, 1\]"),
    ({"vocab": 3.0}, TypeError, "vocab must be an int"),
    ({"distinct": 1}, TypeError, "distinct must be a bool"),
])
def test_parallel_corpus_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ParallelCorpusTask(**kwargs)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: ParallelCorpusTask.from_overlap(0.0), ValueError, "overlap"),
    (lambda: ParallelCorpusTask.from_overlap(1.2), ValueError, "overlap"),
    (lambda: encode_corpus([]), ValueError, "empty"),
    (lambda: encode_corpus([(["a"], [])]), ValueError, "empty side"),
    (lambda: encode_corpus([(["a"],)]), ValueError, "pair"),
    (lambda: encode_corpus([("ab", ["a"])]), TypeError, "string"),
    (lambda: ClassificationAsTranslation(object()), TypeError, "sample"),
])
def test_corpus_helpers_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------------------------- proxy pieces
def test_init_velocity_approaches_twice_centred_count_table():
    task = ParallelCorpusTask(vocab=6, length=3, n_pairs=60, distinct=False, seed=1)
    c = task.corpus()
    C = theory.count_table(c["src"], c["tgt"], 6, 6)
    target = 2 * (C - C.mean(1, keepdims=True))
    vel = theory.proxy_init_velocity(c["src"], c["tgt"], 6, 6, dims=[8, 8192], seeds=[0, 1])
    err = np.linalg.norm(vel - target, axis=(2, 3)) / np.linalg.norm(target)
    assert err[1].max() < 0.1 and err[1].max() < err[0].min()


def test_proxy_equals_logistic_regression():
    task = KeywordTask(length=8, vocab=10)
    proxy, _ = run_bow_classifier(task, "proxy", steps=40, lr=1.0, batch_size=16)
    logi, _ = run_bow_classifier(task, "logistic", steps=40, lr=2.0, batch_size=16)
    th = proxy.theta()[0].detach()
    torch.testing.assert_close(th[:, 1] - th[:, 0], logi.w[0].detach(), atol=1e-5, rtol=0)
    b = ClassificationAsTranslation(task).sample(torch.Generator().manual_seed(0), 32)
    src, tgt = b["src"].unsqueeze(0), b["tgt"].unsqueeze(0)
    torch.testing.assert_close(proxy.lexical_probe(src, tgt), logi.lexical_probe(src, tgt),
                               atol=1e-5, rtol=0)
    assert float(logi.w.detach()[0, task.keyword]) > 0.5            # the keyword is learned


def test_logistic_forward_is_mean_of_word_weights():
    m = BagOfWordsLogistic(5, seeds=[0, 1])
    with torch.no_grad():
        m.w.copy_(torch.arange(10.0).view(2, 5))
    src = torch.tensor([[[0, 1, 1]], [[2, 3, 4]]])
    torch.testing.assert_close(m(src), torch.tensor([[2 / 3], [8.0]]))


# ------------------------------------------------------------ the findings' untrained side (#29)

def test_lead_steps_survives_one_noisy_evaluation_and_untrained_curves_never_lead():
    from attn_core.chapters.ch3_ibm1 import lead_steps, untrained_curves
    steps = np.array([0, 10, 20, 30, 40, 50])
    beta = np.array([[0.1, 0.31, 0.29, 0.35, 0.5, 0.6]] * 2)     # passes 0.3 at 10, dips at 20
    alpha = np.array([[0.1, 0.1, 0.1, 0.2, 0.35, 0.5]] * 2)
    assert lead_steps(steps, beta, alpha) == (30, 40)            # stays above from 30, not 10
    b0, a0 = lead_steps(steps, untrained_curves(beta), untrained_curves(alpha))
    assert b0 is None and np.isnan(a0)                            # never trained: no lead
    np.testing.assert_array_equal(untrained_curves(beta)[:, -1], beta[:, 0])


def test_misses_one_off_by_hand():
    from attn_core.chapters.ch3_ibm1 import misses_one_off
    src = np.array([[5, 6, 7, 8]])
    align = np.array([[0, 1, 2, 3]])
    alpha = np.zeros((1, 4, 4))
    alpha[0, [0, 1, 2, 3], [0, 2, 0, 3]] = 1      # right, one off, two off, right
    assert misses_one_off(alpha, src, align) == pytest.approx(1 / 2)
    assert np.isnan(misses_one_off(np.eye(4)[None], src, align))   # no miss at all


def test_relevance_after_keyword_by_hand():
    from attn_core.chapters.ch3_ibm1 import relevance_after_keyword
    r = np.array([[[[0.0, 3.0, 1.0, 5.0],       # keyword at 1, the last state larger
                    [0.0, 3.0, 1.0, 2.0]]]])    # keyword at 1 is the argmax
    out = relevance_after_keyword(r, np.array([[1, 1]]))
    np.testing.assert_allclose(out["after"], [[0.5]])
    np.testing.assert_allclose(out["key_minus_mean"], [[(3 - 9 / 4 + 3 - 6 / 4) / 2]])
    np.testing.assert_allclose(out["last_minus_key"], [[(2 - 1) / 2]])
    with pytest.raises(ValueError, match="must be"):
        relevance_after_keyword(r[0], np.array([[1, 1]]))


def test_untrained_keyword_classifier_fails_the_collapse_findings():
    """The notebook's I8 findings about the long uniform run (r''s argmax after the keyword
    on >= 0.85 of the sequences, r'_{l*} - mean >= 3, r'_L - r'_{l*} >= 2) fail for the
    same classifiers untrained: the thresholds tell training from none."""
    from attn_core.chapters.ch3_ibm1 import (KEYWORD_RELEVANCE_UNIFORM, keyword_eval_set,
                                             relevance_after_keyword)
    cfg = KEYWORD_RELEVANCE_UNIFORM.get("fast")
    model = cfg.model_fn(cfg.task())(seeds=list(cfg.seeds))
    ev = keyword_eval_set(cfg, cfg.n_eval)
    with torch.no_grad():
        r = model(ev["x"].unsqueeze(0).expand(len(cfg.seeds), -1, -1))["beta"].numpy()
    out = relevance_after_keyword(r[:, None], np.tile(ev["pos"].numpy(), (len(cfg.seeds), 1)))
    assert (out["after"] < 0.85).all()
    assert (out["key_minus_mean"] < 3).all() and (out["last_minus_key"] < 2).all()


def test_untrained_translation_model_and_proxy_fail_the_alignment_findings():
    """I1 and I2 at initialisation: a fresh seq2seq's β is not on the right word (>= 0.95
    needed), its α does not agree with β (>= 0.45) and its misses are not next door (>= 0.8);
    the proxy at θ = 0 ties every position, so its argmax is position 0."""
    from attn_core.chapters.ch3_ibm1 import TRANSLATION, misses_one_off, translation_probe
    from attn_core.models import BagOfWordsProxy
    cfg = TRANSLATION.get("fast")
    task = cfg.task()
    ev = cfg.eval_set(task)
    model = cfg.model_fn(task)(seeds=list(cfg.seeds))
    rec = translation_probe(ev)(model, {"src": ev["src"]})
    src, al = ev["src"].numpy(), ev["align"].numpy()
    word = alignment_accuracy(rec["beta"].numpy(), src, al)["word"]
    assert (word < 0.95).all()
    assert (rec["agree"].numpy() < 0.45).all()
    assert misses_one_off(rec["alpha"].numpy(), src, al) < 0.8
    proxy0 = BagOfWordsProxy(task.model_vocab, task.model_vocab)
    b0 = proxy0.lexical_probe(ev["src"][None], ev["tgt"][None])[0].numpy()
    r0 = alignment_accuracy(b0, src, al)
    assert r0["word"] < 0.95 and abs(r0["position"] - r0["ceiling"]) > 0.01
    assert r0["position"] == pytest.approx(float((al == 0).mean()))   # argmax = position 0


# ------------------------------------------------- #31: the model diagram, the readable model
def test_model_diagram_shows_every_box():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from attn_core.chapters.ch3_ibm1 import _DIAGRAM_BOXES, model_diagram
    fig = model_diagram()
    try:
        assert isinstance(fig, Figure)
        texts = {t.get_text() for t in fig.findobj(Text)}
        for name, (_, _, label, _) in _DIAGRAM_BOXES.items():
            assert label in texts, f"box {name!r} ({label!r}) is not drawn"
        for needed in ("encoder", "decoder", r"\alpha_{t,l}", r"\beta_{t,l}", "p_t"):
            assert any(needed in t for t in texts), needed
    finally:
        plt.close(fig)


def test_readable_model_computes_what_the_engine_computes():
    """The readable one-model seq2seq, loaded with member 1 of the engine's stacked model,
    gives its logits, attention and lexical probe (the engine's probe is a rearranged,
    faster form of the same sum)."""
    from attn_core.chapters.ch3_ibm1 import TRANSLATION, ReadableSeq2Seq
    cfg = TRANSLATION.get("fast")
    task = cfg.task()
    engine = cfg.model_fn(task)(seeds=[3, 4])
    ev = {k: v[:16] for k, v in cfg.eval_set(task).items()}
    mine = ReadableSeq2Seq.from_seq2seq(engine, 1)
    stack = {k: v[None].expand(2, *v.shape) for k, v in ev.items()}
    with torch.no_grad():
        ours, theirs = mine(ev["src"], ev["tgt_in"]), engine(stack["src"], stack["tgt_in"])
    torch.testing.assert_close(ours["logits"], theirs["logits"][1], atol=1e-5, rtol=0)
    torch.testing.assert_close(ours["alpha"], theirs["alpha"][1, 0], atol=1e-6, rtol=0)
    beta = mine.lexical_probe(ev["src"], ev["tgt_in"], ev["tgt"])
    torch.testing.assert_close(
        beta, engine.lexical_probe(stack["src"], stack["tgt_in"], stack["tgt"])[1],
        atol=1e-6, rtol=0)
    # and the probe by its definition, one (t, l) at a time: N([s_t; h_l]) at y_t
    h, s = mine.states(ev["src"], ev["tgt_in"])
    with torch.no_grad():
        p = torch.softmax(mine.N(s[3, 2], h[3, 5]), -1)
    assert float(p[ev["tgt"][3, 2]]) == pytest.approx(float(beta[3, 2, 5]), abs=1e-6)
    # member 0 is another model
    other = ReadableSeq2Seq.from_seq2seq(engine, 0)
    with torch.no_grad():
        assert (other(ev["src"], ev["tgt_in"])["logits"] - ours["logits"]).abs().max() > 1e-3


@pytest.mark.parametrize("call, exc, match", [
    (lambda ch, e: ch.ReadableSeq2Seq.from_seq2seq("a model", 0), TypeError, "model"),
    (lambda ch, e: ch.ReadableSeq2Seq.from_seq2seq(e, 2), ValueError, "m must"),
    (lambda ch, e: ch.ReadableSeq2Seq.from_seq2seq(e, 0.5), TypeError, "m must"),
    (lambda ch, e: ch.ReadableSeq2Seq.from_seq2seq(
        type(e)(vocab=9, heads=2, seeds=[0]), 0), ValueError, "heads"),
    (lambda ch, e: ch.ReadableSeq2Seq.from_seq2seq(
        type(e)(vocab=9, attention="uniform", seeds=[0]), 0), ValueError, "attention"),
    (lambda ch, e: ch.ReadableSeq2Seq.from_seq2seq(
        type(e)(vocab=9, bias=True, seeds=[0]), 0), ValueError, "bias"),
    (lambda ch, e: ch.ReadableSeq2Seq(0, 4, 4), ValueError, "vocab"),
])
def test_readable_model_bad_arguments(call, exc, match):
    from attn_core.chapters import ch3_ibm1 as ch
    from attn_core.models import Seq2Seq
    engine = Seq2Seq(vocab=9, embed=4, hidden=4, seeds=[0, 1])
    with pytest.raises(exc, match=match):
        call(ch, engine)


# ------------------------------------------------------------ #31: the Zipf sliders (§4, 3.4)
def _corpus_by_hand(zipf):
    from dataclasses import replace

    from attn_core.chapters.ch3_ibm1 import TRANSLATION
    task = replace(TRANSLATION.get("fast"), zipf=zipf).task()
    c = task.corpus()
    return (task, c["src"].numpy(), c["tgt"].numpy(), c["align"].numpy(),
            task.dictionary.numpy())


def _em_by_hand(src, tgt, V, iterations):
    """IBM Model 1's EM written out again (not theory.ibm1_em): the table after each
    iteration, from the uniform one."""
    M, L = src.shape
    T = tgt.shape[1]
    xs = np.broadcast_to(src[:, None, :], (M, T, L))
    ys = np.broadcast_to(tgt[:, :, None], (M, T, L))
    table, out = np.full((V, V), 1 / V), []
    for _ in range(iterations):
        beta = table[xs, ys]                                 # Trans(y_t | x_l)
        counts = np.zeros((V, V))
        np.add.at(counts, (xs, ys), beta / beta.sum(2, keepdims=True))
        table = counts / counts.sum(1, keepdims=True)
        out.append(table)
    return out


@pytest.mark.parametrize("zipf", [0.0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0])
def test_zipf_slider_against_an_independent_computation(zipf):
    """Every frame of the Zipf slider (its whole range): the one-step table, EM's
    row-by-row recovery and α^IBM's mass on the right word, each recomputed here by hand,
    and the top word's share against its closed form 1 / Σ_r r^-s."""
    from attn_core.chapters.ch3_ibm1 import ZIPF_SLIDER, TRANSLATION, zipf_ibm1
    assert zipf in ZIPF_SLIDER
    task, src, tgt, align, d = _corpus_by_hand(zipf)
    V, (M, L) = task.vocab, src.shape
    r = zipf_ibm1(zipf, TRANSLATION.get("fast"), iterations=6)
    C = np.zeros((V, V))
    for x, y in zip(src, tgt):
        for i in x:
            for o in y:
                C[i, o] += 1 / L
    trans = C / C.sum(1, keepdims=True)
    np.testing.assert_allclose(r["trans"], trans[:, d], atol=1e-12)
    tables = _em_by_hand(src, tgt, V, 6)
    np.testing.assert_allclose(tables[0], trans, atol=1e-12)      # EM's step 1 = one step
    np.testing.assert_allclose(r["recovery"], [np.mean(t.argmax(1) == d) for t in tables])
    gold = src[np.arange(M)[:, None], align]                         # (M, T) right words
    on = src[:, None, :] == gold[:, :, None]
    mass = []
    for t in tables:
        b = t[src[:, None, :], tgt[:, :, None]]
        mass.append(((b * on).sum(2) / b.sum(2)).mean())
    np.testing.assert_allclose(r["mass"], mass, atol=1e-12)
    p1 = 1 / np.sum(np.arange(1, V + 1, dtype=float) ** -zipf)
    assert abs(r["top_share"] - p1) < 4 * math.sqrt(p1 * (1 - p1) / (M * L))


def test_zipf_slider_moves_with_the_exponent():
    """Across the slider's range the top word's share grows, the one-step recovery falls
    from the whole dictionary (s = 0) to one word (s = 1, 2), and EM needs more iterations
    to recover it as the skew grows."""
    from attn_core.chapters.ch3_ibm1 import ZIPF_SLIDER, TRANSLATION, zipf_ibm1
    cfg = TRANSLATION.get("fast")
    rs = [zipf_ibm1(s, cfg) for s in ZIPF_SLIDER]
    assert np.all(np.diff([r["top_share"] for r in rs]) > 0)
    one = [r["recovery"][0] for r in rs]
    assert np.all(np.diff(one) <= 0) and one[0] == 1.0 and one[-1] == pytest.approx(1 / 30)
    first_full = [int(np.argmax(r["recovery"] == 1.0)) for r in rs]
    assert first_full[0] == 0 and first_full[ZIPF_SLIDER.index(1.0)] == 1
    assert first_full[-1] == 3 and np.all(np.diff(first_full) >= 0)
    assert all(r["recovery"][-1] == 1.0 for r in rs)


@pytest.mark.parametrize("zipf", [0.0, 0.5, 0.7, 1.0, 1.5, 2.0])
def test_row_contest_against_its_expected_counts(zipf):
    """Exercise 3.4's answer slider over its range: per source word, the one-step
    Trans(own | i) and Trans(word 1's | i) average (weighted by the word's count, over the
    words seen >= 400 times) to their expected-count values (1 + (L-1) p_i)/L and
    (L-1) p_1/L within 5% (dropping (L-1)/L would be 10% off); the recovery is the
    table's, the prediction the closed form's."""
    from attn_core.chapters.ch3_ibm1 import TRANSLATION, zipf_row_contest
    task, src, tgt, _, d = _corpus_by_hand(zipf)
    V, L = task.vocab, task.length
    r = zipf_row_contest(zipf, TRANSLATION.get("fast"))
    p = np.arange(1, V + 1, dtype=float) ** -zipf
    p /= p.sum()
    np.testing.assert_allclose(r["p"], p)
    np.testing.assert_allclose(r["own_expected"], (1 + (L - 1) * p) / L)
    np.testing.assert_allclose(r["rival_expected"][1:], (L - 1) * p[0] / L)
    n = np.bincount(src.ravel(), minlength=V)
    np.testing.assert_array_equal(r["n"], n)
    ok = n >= 400
    assert ok.sum() >= 5
    ratio = np.average(r["own"][ok] / r["own_expected"][ok], weights=n[ok])
    assert abs(ratio - 1) < 0.05
    ok[0] = False
    if ok.any():
        ratio = np.average(r["rival"][ok] / r["rival_expected"][ok], weights=n[ok])
        assert abs(ratio - 1) < 0.05
    C = theory.count_table(src, tgt, V, V)
    assert r["recovered"] == theory.dictionary_recovery(theory.ibm1_translation(C), d)
    assert r["predicted"] == pytest.approx(
        np.mean(np.r_[True, 1 + (L - 1) * p[1:] > (L - 1) * p[0]]))
    assert np.isnan(r["rival"][0]) and np.isnan(r["rival_expected"][0])


def test_row_contest_moves_with_the_exponent():
    from attn_core.chapters.ch3_ibm1 import ZIPF_SLIDER, TRANSLATION, zipf_row_contest
    cfg = TRANSLATION.get("fast")
    rs = [zipf_row_contest(s, cfg) for s in ZIPF_SLIDER]
    rival = [r["rival_expected"][1] for r in rs]
    assert np.all(np.diff(rival) > 0)
    assert [r["recovered"] for r in rs][0] == 1.0 and rs[-1]["recovered"] < 0.1
    assert np.all(np.diff([r["predicted"] for r in rs]) <= 0)


@pytest.mark.parametrize("zipf", [0.0, 0.7, 2.0])
def test_zipf_slider_frames_are_readable_and_change(zipf):
    import matplotlib.pyplot as plt

    from attn_core.chapters.ch3_ibm1 import (TRANSLATION, draw_zipf_ibm1,
                                             draw_zipf_row_contest)
    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt, set_style
    cfg = TRANSLATION.get("fast")
    with plt.rc_context():
        set_style()                                   # the book's style, as in the chapter
        for draw in (draw_zipf_ibm1, draw_zipf_row_contest):
            fig = draw(zipf, cfg)
            try:
                pt = rendered_text_pt(fig)
                assert pt["desktop"] >= MIN_TEXT_PT and pt["phone"] >= MIN_TEXT_PT, pt
                titles = " ".join(ax.get_title() for ax in fig.axes)
                assert f"$\\zeta$ = {zipf:g}" in titles
            finally:
                plt.close(fig)


@pytest.mark.parametrize("call, exc, match", [
    (lambda ch: ch.zipf_ibm1(-0.5), ValueError, "zipf"),
    (lambda ch: ch.zipf_ibm1("1"), TypeError, "zipf"),
    (lambda ch: ch.zipf_ibm1(float("inf")), ValueError, "zipf"),
    (lambda ch: ch.zipf_ibm1(1.0, config=ch.KEYWORD_RELEVANCE.fast), TypeError, "config"),
    (lambda ch: ch.zipf_ibm1(1.0, iterations=0), ValueError, "iterations"),
    (lambda ch: ch.zipf_row_contest(float("nan")), ValueError, "zipf"),
    (lambda ch: ch.zipf_row_contest(1.0, config="fast"), TypeError, "config"),
    (lambda ch: ch.draw_zipf_ibm1(-1), ValueError, "zipf"),
    (lambda ch: ch.draw_zipf_row_contest(None), TypeError, "zipf"),
])
def test_zipf_slider_bad_arguments(call, exc, match):
    from attn_core.chapters import ch3_ibm1 as ch
    with pytest.raises(exc, match=match):
        call(ch)
