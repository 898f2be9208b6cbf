"""Chapter 3-4 pieces: the count table, the bag-of-words proxy and the lexical probe."""

import numpy as np
import pytest
import torch

from attn_core.data import CopyTask
from attn_core.chapters import ch4_copy as ch
from attn_core.chapters.ch4_copy import CopyConfig, run_proxy
from attn_core.models import BagOfWordsProxy, Seq2Seq
from attn_core.theory import count_table


def test_count_table_hand_example():
    # pair 1: x=[0,1] y=[3,4]; pair 2: x=[0,2] y=[3,5]; each (i, o) in a pair adds 1/L_m = 1/2
    C = count_table([[0, 1], [0, 2]], [[3, 4], [3, 5]])
    expected = np.zeros((3, 6))
    expected[0, 3] = 1.0
    expected[0, [4, 5]] = 0.5
    expected[1, [3, 4]] = 0.5
    expected[2, [3, 5]] = 0.5
    np.testing.assert_allclose(C, expected)
    # repeated words count with multiplicity; lengths may differ between pairs
    np.testing.assert_allclose(count_table([[1, 1, 2]], [[0]])[:, 0], [0, 2 / 3, 1 / 3])


def test_count_table_flat_under_permutations_diagonal_under_control():
    g = torch.Generator().manual_seed(0)
    perm = CopyTask(8).sample(g, 300)
    C = count_table(perm["src"], perm["tgt"], 8, 8)
    np.testing.assert_allclose(C, C[0, 0])
    ctrl = CopyTask(8, 12, "distinct").sample(g, 3000)
    C = count_table(ctrl["src"], ctrl["tgt"], 12, 12)
    assert np.all(np.diag(C) > C.max(where=~np.eye(12, dtype=bool), initial=0))


@pytest.mark.parametrize("args, match", [
    (([], []), "empty"),
    (([[0, 1]], [[0], [1]]), "pair up"),
    (([[0, 1], []], [[0], [1]]), "empty side"),
    (([[0, -1]], [[0]]), ">= 0"),
])
def test_count_table_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        count_table(*args)


def test_proxy_rows_stay_identical_under_permutations():
    task = CopyConfig(length=6).task()
    proxy, h = run_proxy(task, steps=50)
    th = proxy.theta()[0, :6]                      # rows of the six input words
    torch.testing.assert_close(th, th[:1].expand_as(th), atol=1e-6, rtol=0)
    ctrl = CopyConfig(length=6, distribution="distinct", vocab=9).task()
    proxy, _ = run_proxy(ctrl, steps=50)
    th = proxy.theta()[0, :9]
    assert (th - th[:1]).abs().max() > 1e-3
    # the proxy's probe prefers the aligned position under the control
    b = {k: v.unsqueeze(0) for k, v in ctrl.sample(torch.Generator().manual_seed(1), 64).items()}
    beta = proxy.lexical_probe(b["src"], b["tgt"])
    assert (beta.argmax(-1) == b["align"]).float().mean() > 0.9


def test_proxy_factorised_is_w_times_e():
    m = BagOfWordsProxy(5, 4, dim=8, seeds=[0, 1])
    torch.testing.assert_close(m.theta()[1], m.e[1] @ m.W[1].T)
    src = torch.tensor([[[0, 1, 1]], [[2, 3, 4]]])
    torch.testing.assert_close(m(src)[0, 0], m.theta()[0, [0, 1, 1]].mean(0))


def test_lexical_probe_is_output_probability_with_one_source_position():
    """With L = 1 attention is all on position 0, so β_{t,0} = p_t(y_t)."""
    m = Seq2Seq(vocab=7, embed=6, hidden=6, seeds=[0, 1])
    src = torch.randint(0, 6, (2, 3, 1))
    tgt_in = torch.randint(0, 6, (2, 3, 4))
    tgt = torch.randint(0, 6, (2, 3, 4))
    beta = m.lexical_probe(src, tgt_in, tgt)
    p = torch.softmax(m(src, tgt_in)["logits"], -1).gather(-1, tgt.unsqueeze(-1))
    assert beta.shape == (2, 3, 4, 1)
    torch.testing.assert_close(beta, p, atol=1e-6, rtol=1e-5)


def test_bad_proxy_and_config_arguments():
    with pytest.raises(ValueError, match="vocab_out"):
        BagOfWordsProxy(5, 1)
    with pytest.raises(ValueError, match="dim"):
        BagOfWordsProxy(5, 4, dim=0)
    with pytest.raises(ValueError, match="vocab"):
        CopyConfig(length=10, distribution="distinct", vocab=5).task()


def test_authors_code_results_are_the_ones_the_script_wrote():
    import json
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "benchmarks" / "authors_copy"
    for name, file in (("permutation", "perm_L20.json"), ("control", "ctrl_L20.json")):
        runs = json.loads((here / file).read_text())
        assert runs["args"]["seq_length"] == 20 and runs["args"]["steps_s1"] == 300
        final = tuple(round(h[-1]["acc"], 4) for h in runs["histories"])
        assert all(h[-1]["step"] == 300 for h in runs["histories"])
        assert final == ch.authors_code_fast()[name]


@pytest.mark.parametrize("L, eos", [(1, False), (5, False), (5, True), (20, False)])
def test_guessing_accuracy_is_guessing_among_the_words_not_yet_emitted(L, eos):
    # simulate the guesser: at each step pick uniformly among the words not emitted yet
    rng = np.random.default_rng(0)
    n, hits = 4000, 0
    for _ in range(n):
        left = list(range(L))
        for t in range(L):
            hits += rng.choice(left) == t
            left.remove(t)
    sim = (hits + (n if eos else 0)) / (n * (L + eos))
    assert abs(ch.guessing_accuracy(L, eos) - sim) < 0.015
    assert ch.guessing_accuracy(20) == pytest.approx(0.1799, abs=1e-4)


def test_guessing_accuracy_bad_input():
    with pytest.raises(ValueError, match="length must be an int >= 1"):
        ch.guessing_accuracy(0)
    with pytest.raises(TypeError, match="eos must be True or False"):
        ch.guessing_accuracy(5, eos=1)


def test_model_ablation_counts_are_the_ones_the_script_wrote():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "authors_copy" / "ablation.json"
    variants = json.loads(path.read_text())["variants"]
    assert set(variants) == set(ch.model_ablation_fast())
    for name, (proj, bias, eos, n_ok, n) in ch.model_ablation_fast().items():
        v = variants[name]
        assert (v["head_proj"], v["bias"], v["eos"]) == (proj, bias, eos)
        assert (sum(a > ch.SUCCESS_LEVEL for a in v["final_acc"]), len(v["final_acc"])) == (n_ok, n)


def test_steps_to_level_is_the_first_evaluation_above_it():
    from attn_core.training import History

    acc = np.array([[0.1, 0.5, 0.96, 0.97], [0.1, 0.2, 0.3, 0.4], [0.99, 0.9, 0.99, 0.99]])
    h = History(seeds=np.arange(3), data_seeds=np.arange(3), train_loss=np.zeros((3, 30)),
                eval_steps=np.array([0, 10, 20, 30]), metrics={"token_acc": acc}, probes={})
    assert ch.steps_to_level(h).tolist() == [20.0, np.inf, 0.0]
    assert ch.steps_to_level(h, level=0.35).tolist() == [10.0, 30.0, 0.0]
    with pytest.raises(ValueError, match="level must be"):
        ch.steps_to_level(h, level=1.5)


# ------------------------------------------------------------------ the readable model
@pytest.mark.parametrize("head_proj, bias", [(True, True), (False, False), (True, False),
                                             (False, True)])
@pytest.mark.parametrize("members", [1, 3])
def test_readable_model_computes_what_the_engine_computes(head_proj, bias, members):
    """LuongSeq2Seq with member m's weights gives member m's logits and attention, with the
    chapter's switches (projection and biases) and without (one member: the engine's fused
    LSTM; three: its batched one)."""
    engine = Seq2Seq(vocab=12, embed=6, hidden=5, seeds=list(range(members)),
                     head_proj=head_proj, bias=bias)
    with torch.no_grad():           # peaked attention, so that a wrong softmax axis shows
        engine.score.mul_(20)
        if bias:
            engine.score_bias.mul_(10)
    task = CopyTask(7, 10, "distinct", eos=True)    # the chapter's kind of batch: EOS, BOS
    b = task.sample(torch.Generator().manual_seed(1), members * 4)
    src, tgt_in = b["src"].view(members, 4, 8), b["tgt_in"].view(members, 4, 8)
    out = engine(src, tgt_in)
    assert out["alpha"].max() > 0.5
    for m in range(members):
        mine = ch.LuongSeq2Seq.from_seq2seq(engine, m)(src[m], tgt_in[m])
        torch.testing.assert_close(mine["logits"], out["logits"][m], atol=1e-5, rtol=0)
        torch.testing.assert_close(mine["alpha"], out["alpha"][m, 0], atol=1e-5, rtol=0)


def test_readable_model_of_the_chapter_is_a_copy_and_checks_its_arguments():
    cfg = CopyConfig(length=5, embed=4, hidden=4)
    engine = cfg.model_fn(cfg.task())(seeds=[0, 1])
    mine = ch.LuongSeq2Seq.from_seq2seq(engine, 1)
    assert mine.a is not None and mine.P is not None and mine.b is not None  # the switches
    assert torch.equal(mine.W, engine.score[1, 0]) and torch.equal(mine.P, engine.head_proj[1, 0])
    assert torch.equal(mine.b, engine.proj_bias[1, 0])
    with torch.no_grad():
        mine.W.zero_()
    assert engine.score.abs().sum() > 0                      # the engine's weights are intact
    plain = ch.LuongSeq2Seq.from_seq2seq(Seq2Seq(vocab=9, embed=4, hidden=4))
    assert plain.a is None and plain.P is None and plain.b is None
    with pytest.raises(ValueError, match="m must be"):
        ch.LuongSeq2Seq.from_seq2seq(engine, 2)
    with pytest.raises(TypeError, match="model must be a Seq2Seq"):
        ch.LuongSeq2Seq.from_seq2seq(mine)
    for kwargs, name in [(dict(cell="gru"), "cell"), (dict(heads=2), "heads"),
                         (dict(attention="uniform"), "attention"),
                         (dict(shared_embedding=False), "shared_embedding")]:
        with pytest.raises(ValueError, match=name):
            ch.LuongSeq2Seq.from_seq2seq(Seq2Seq(vocab=9, embed=4, hidden=4, **kwargs))
    with pytest.raises(TypeError, match="bias"):
        ch.LuongSeq2Seq(9, 4, 4, bias=1)
    with pytest.raises(ValueError, match="hidden"):
        ch.LuongSeq2Seq(9, 4, 0)


@pytest.mark.parametrize("mode", ["fast", "full"])
def test_long_permutation_runs_are_the_base_runs_trained_past_the_budget(mode):
    """§2 reads the success rate at the budget off the long runs' histories: they must be the
    base config (same seeds, data, model) with more steps, and the budget an evaluation step."""
    from dataclasses import replace

    base, long = ch.COPY_BASE.get(mode), ch.PERMUTATION_LONG.get(mode)
    assert long.steps > base.steps
    assert replace(long, steps=base.steps) == base
    assert base.steps % base.eval_every == 0 and long.steps % long.eval_every == 0


# ------------------------------------------------------- findings against untrained models
def _stored(config):
    from attn_core.stored import load_entry
    return load_entry(config)


def test_untrained_history_repeats_step_0_and_fails_the_chapters_findings():
    """ch.untrained(h) is the run as it was before training: the claims' own code applied to it
    gives the untrained values of the chapter's findings, and each fails its threshold, while
    the trained stored runs pass (P2, P3, P4, vocabulary)."""
    from dataclasses import replace

    base = ch.COPY_BASE.fast
    perm, ctrl = _stored(ch.PERMUTATION_LONG.fast), _stored(ch.control(base))
    mix = _stored(ch.MIXTURE.fast)
    u = ch.untrained(ctrl)
    for group in ("metrics", "probes"):
        for k, v in getattr(u, group).items():
            ref = getattr(ctrl, group)[k]
            assert v.shape == ref.shape
            np.testing.assert_array_equal(v, np.repeat(ref[:, :1], v.shape[1], axis=1))
    assert u.train_loss.shape[1] == 1 and ctrl.train_loss.shape[1] > 1   # the copy is new
    j = ctrl.index_of(base.steps)
    # P2/P3/vocabulary: every seed succeeds trained, none untrained
    assert ch.succeeded(ctrl, at=j).all() and not ch.succeeded(u, at=j).any()
    up = ch.untrained(perm)
    assert ch.succeeded(perm).mean() - ch.succeeded(perm, at=j).mean() >= 0.2
    assert ch.succeeded(up).mean() - ch.succeeded(up, at=j).mean() < 0.2
    # slow, not stuck: an untrained run gains nothing
    acc = up.metrics["token_acc"]
    assert np.all(acc[:, -1] - acc[:, -6] == 0)
    # P4: the mixture's seeds pass 0.95 or end above 0.9; untrained they never get there
    um = ch.untrained(mix)
    assert np.isinf(ch.steps_to_level(um)).all() and np.isfinite(ch.steps_to_level(mix)).any()
    assert mix.metrics["token_acc"][:, -1].min() >= 0.9 > um.metrics["token_acc"][:, -1].max()
    # a run not evaluated at step 0 has no untrained record
    late = replace(ctrl, eval_steps=ctrl.eval_steps + 20)
    with pytest.raises(ValueError, match="evaluated at step 0"):
        ch.untrained(late)


def test_untrained_proxy_fails_the_control_finding_and_a_flat_table_gives_a_flat_proxy():
    """P5: the trained proxy finds the aligned position under the control (>= 0.9), the proxy
    at θ = 0 does not (chance, 1/L); under permutations both are at chance (an identity)."""
    ctrl = CopyConfig(length=6, distribution="distinct", vocab=9).task()
    trained, _ = run_proxy(ctrl, steps=100)
    spread, align = ch.proxy_alignment(trained, ctrl, torch.Generator().manual_seed(0))
    assert align >= 0.9 and spread > 0.01
    spread0, align0 = ch.proxy_alignment(ch.untrained_proxy(ctrl), ctrl,
                                         torch.Generator().manual_seed(0))
    assert spread0 == 0 and align0 < 0.9 and align0 == pytest.approx(1 / 6, abs=1e-6)
    perm = CopyConfig(length=6).task()
    proxy, _ = run_proxy(perm, steps=100)
    spread, align = ch.proxy_alignment(proxy, perm, torch.Generator().manual_seed(0))
    assert spread < 1e-6 and align <= 1.5 / 6


def test_fisher_exact_and_newcombe_interval():
    # textbook values: Fisher's tea-tasting 3/4 vs 1/4 -> two-sided p = 34/70 = 0.486
    assert ch.fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)
    assert ch.fisher_exact(5, 20, 2, 20) == pytest.approx(0.4075, abs=1e-4)
    assert ch.fisher_exact(18, 20, 2, 20) == pytest.approx(5.30e-7, rel=1e-2)
    assert ch.fisher_exact(4, 4, 4, 4) == 1.0
    # Newcombe (1998), Table II, example (a): 56/70 vs 48/80 -> [0.0524, 0.3339]
    d, lo, hi = ch.newcombe_interval(56, 70, 48, 80)
    assert d == pytest.approx(0.2) and (lo, hi) == pytest.approx((0.0524, 0.3339), abs=1e-4)
    d, lo, hi = ch.newcombe_interval(5, 20, 2, 20)
    assert (round(lo, 2), round(hi, 2)) == (-0.09, 0.38)
    with pytest.raises(ValueError, match=r"k1 \(of n1\) must be"):
        ch.fisher_exact(5, 4, 1, 4)
    with pytest.raises(ValueError, match="alternative must be 'two-sided' or 'greater'"):
        ch.fisher_exact(1, 4, 1, 4, alternative="less")


# ------------------------------------------------------------------ #31: diagram and slider
def _texts(fig):
    from matplotlib.text import Text
    return " ".join(t.get_text() for t in fig.findobj(Text))


def test_model_diagram_shows_every_part_of_the_model(book_style):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt

    fig = ch.model_diagram()
    try:
        assert isinstance(fig, Figure)
        text = _texts(fig)
        for part in (r"$x_1 \ldots x_L$, EOS", "embedding $E$\n(shared)", "$y_{t-1}$",
                     "encoder LSTM\n" r"$h_1 \ldots h_{L+1}$", "decoder LSTM\n$s_t$",
                     r"attention $\alpha_{t,l}$", r"$s_t^\top W h_l + b_a^\top h_l$",
                     r"$c_t = P \sum_l \alpha_{t,l} h_l + b$",
                     r"$W_o \tanh(W_c [s_t; c_t] + b_c) + b_o$", "last state"):
            assert part in text, part
        pt = rendered_text_pt(fig)
        assert pt["desktop"] >= MIN_TEXT_PT and pt["phone"] >= MIN_TEXT_PT
    finally:
        plt.close(fig)


def _exact_centred_diagonal(L, V):
    """E[L·C/n] on the diagonal minus the row mean, in closed form: a word is in an input
    with probability L/V, two given words together with L(L-1)/(V(V-1))."""
    d, e = L / V, L * (L - 1) / (V * (V - 1))
    return d - (d + (V - 1) * e) / V


#: the live slider's range (V from L = 20 to 2L = 40): both ends and points between
SLIDER_V = [20, 21, 22, 25, 30, 35, 39, 40]


@pytest.mark.parametrize("V", SLIDER_V)
def test_centred_count_table_over_the_slider_range(V):
    L = 20
    t = ch.centred_count_table(L, V)
    assert t.shape == (V, V)
    np.testing.assert_allclose(t.mean(1), 0, atol=1e-12)            # centred rows
    # an independent count of the same draws: every (input word, output word) pair of
    # every sentence pair, added one by one (L·C/n = pairs per sentence pair)
    b = CopyTask(L, V, "distinct").sample(torch.Generator().manual_seed(0), 2000)
    src, tgt = b["src"][:, :L].numpy(), b["tgt"][:, :L].numpy()
    ref = np.zeros((V, V))
    np.add.at(ref, (np.repeat(src, L, axis=1).ravel(), np.tile(tgt, (1, L)).ravel()), 1)
    ref /= 2000
    np.testing.assert_allclose(t, ref - ref.mean(1, keepdims=True), atol=1e-12)
    # its diagonal against the closed form (2,000 pairs: a few hundredths of noise)
    exact = _exact_centred_diagonal(L, V)
    assert ch.count_diagonal(L, V) == pytest.approx(exact, abs=0.01)
    assert ch.count_diagonal(L, V) == pytest.approx(np.diag(t).mean(), abs=1e-12)
    if V == L:          # permutations: exactly flat
        assert np.all(t == 0)
    else:               # a diagonal, and every word's diagonal entry the largest of its row
        assert np.all(np.diag(t) > 0)
        assert (t.argmax(1) == np.arange(V)).mean() > 0.9


def test_count_diagonal_grows_as_the_vocabulary_grows():
    d = [ch.count_diagonal(20, V) for V in SLIDER_V]
    assert d[0] == 0 and all(b > a for a, b in zip(d, d[1:4]))       # it moves with V
    assert d[-1] == pytest.approx(0.25, abs=0.01)                      # V = 2L: 1/4
    # the same arguments give the same table (seeded), another seed another sample
    np.testing.assert_array_equal(ch.centred_count_table(6, 9, 50, 3),
                                  ch.centred_count_table(6, 9, 50, 3))
    assert not np.array_equal(ch.centred_count_table(6, 9, 50, 3),
                              ch.centred_count_table(6, 9, 50, 4))


@pytest.mark.parametrize("args, exc, match", [
    ((0, 5), ValueError, "length must be an int"),
    ((2.5, 5), TypeError, "length must be an int"),
    ((20, 19), ValueError, "vocab must be an int >= 20"),
    ((20, "30"), TypeError, "vocab must be an int"),
    ((20, 30, 0), ValueError, "n must be an int"),
    ((20, 30, 100, -1), ValueError, "seed must be an int"),
    ((20, [30]), TypeError, "vocab must be an int"),
])
def test_slider_functions_bad_input(args, exc, match):
    for f in (ch.centred_count_table, ch.count_diagonal):
        with pytest.raises(exc, match=match):
            f(*args)
    vocab, *rest = args[1:] or (None,)
    kw = dict(zip(("n", "seed"), rest))
    with pytest.raises(exc, match=match):
        ch.draw_count_diagonal(vocab, args[0], **kw)


@pytest.mark.parametrize("V", [20, 21, 30, 40])
def test_draw_count_diagonal_draws_the_numbers_and_is_readable(V, book_style):
    import time

    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from attn_core.plotting import MIN_TEXT_PT, rendered_text_pt

    ch.count_diagonal(20, 40)                     # as in a slider: the curve is computed
    t0 = time.perf_counter()
    fig = ch.draw_count_diagonal(V)
    fig.canvas.draw()
    took = time.perf_counter() - t0
    try:
        assert isinstance(fig, Figure)
        top, bottom = fig.axes[0], fig.axes[1]    # axes[2]: the table's colour bar
        np.testing.assert_array_equal(top.images[0].get_array(),
                                      ch.centred_count_table(20, V))
        assert len(fig.axes) == 3 and top.images[0].colorbar is not None
        curve, mark = bottom.get_lines()
        np.testing.assert_allclose(curve.get_xdata(), np.arange(20, 41) / 20)
        np.testing.assert_allclose(curve.get_ydata(),
                                   [ch.count_diagonal(20, v) for v in range(20, 41)])
        assert mark.get_xdata()[0] == V / 20
        assert mark.get_ydata()[0] == pytest.approx(ch.count_diagonal(20, V))
        assert f"V = {V}" in _texts(fig) and f"{ch.count_diagonal(20, V):.3f}" in _texts(fig)
        assert ("flat, all 0" in _texts(fig)) == (V == 20)   # the first frame says so
        pt = rendered_text_pt(fig)
        assert pt["desktop"] >= MIN_TEXT_PT and pt["phone"] >= MIN_TEXT_PT
        assert took < 1.0 * 3   # < 1 s on the book's CPU; x3 for a loaded test machine
    finally:
        plt.close(fig)


def test_the_controls_take_their_first_seeds_and_refuse_more_than_there_are(env):
    import dataclasses
    from attn_core.chapters import ch4_copy as ch
    base = ch.COPY_BASE.fast
    assert ch.uniform_attention(base).seeds == base.seeds[:2]
    assert ch.fixed_permutation(base, 5).seeds == base.seeds[:5]
    assert ch.one_word_left_out(base).vocab == base.length + 1
    with pytest.raises(ValueError, match=r"^n_seeds must be an int in \[1, 10\]; got 11"):
        ch.fixed_permutation(base, 11)
    with pytest.raises(TypeError, match=r"^config must be a copy-task config"):
        ch.uniform_attention("base")
    one = dataclasses.replace(base, seeds=(0,))  # a smoke run's presets keep one seed
    with pytest.raises(ValueError, match=r"^n_seeds must be an int in \[1, 1\]; got 2"):
        ch.uniform_attention(one)
    env("ATTN_MAX_STEPS", "2")
    assert ch.uniform_attention(one).seeds == (0,)
