"""Property-based tests of the public API (issue #35 item 6), with Hypothesis.

Every entry below is a public function, class or config with a valid call and, for each of
its scalar parameters, what the parameter takes: an int in a range, a real number in a range,
True/False, or one of some strings. Hypothesis then generates values that the parameter does
*not* take -- a bool or an integral float (2.0) where an int goes, NaN or inf, a number just
outside the range, a string, None, a list, a NumPy scalar of the wrong kind, a string that is
almost a choice -- and the only outcome allowed is a ``ValueError`` or ``TypeError`` raised by
``attn_core`` whose message names the parameter: never a silent acceptance, a crash inside
torch or NumPy, or an error that names nothing. ``tests/test_api_probe.py`` keeps the
hand-written cases (tensors of wrong shapes, files, environment variables); these cover the
scalar space those cases sample a few points of.

Deterministic (``derandomize``: the same examples in every run and process) and without an
example database (a failure is reproduced by running it again); Hypothesis's own cache goes
to the temporary folder, not the clone.
"""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# every module _get() reads an entry point from (by name: older checkouts may lack some)
from attn_core import claims, data, metrics, models, theory, training  # noqa: E402,F401
from attn_core.chapters import ch1_gated, ch2_sen, ch3_ibm1  # noqa: E402,F401
from attn_core.chapters import ch4_copy, ch5_multihead, ch6_transformer  # noqa: E402,F401
from attn_core.chapters import ch7_end_token  # noqa: E402,F401

EXAMPLES = 8    # per parameter: ~1,000 calls in the unit stage (scripts/api_probe.py: 14)
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
# Hypothesis keeps a cache of its own (text strategies) in ./.hypothesis: not in the clone
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "attn_core-hypothesis")


# --------------------------------------------------------------------- what a parameter takes
def Int(low=None, high=None):
    return ("int", low, high)


def Real(low=None, high=None, low_open=False, high_open=False, finite=True):
    return ("real", low, high, low_open, high_open, finite)


BOOL = ("bool",)


def Choice(*options):
    return ("choice", options)


_ANY_BAD = st.one_of(st.none(), st.text(max_size=4), st.just([1]), st.just((0.5,)),
                     st.just({"a": 1}), st.complex_numbers(max_magnitude=4, min_magnitude=1),
                     st.just(object()))


def Ids(shape, vocab):
    """A long tensor of token ids of ``shape``, each in [0, vocab)."""
    return ("ids", tuple(shape), vocab)


def Fractions(shape):
    """A real array of ``shape`` (accuracies), each in [0, 1]."""
    return ("fractions", tuple(shape))


def Opt(kind):
    """``kind``, or None (the documented default)."""
    return ("optional", kind)


def bad_values(kind) -> st.SearchStrategy:
    """Values that a parameter of ``kind`` does not take."""
    tag = kind[0]
    if tag == "optional":
        return bad_values(kind[1]).filter(lambda v: v is not None)
    if tag == "int":
        low, high = kind[1], kind[2]
        parts = [_ANY_BAD, st.booleans(), st.just(np.bool_(True)),
                 st.floats(allow_nan=True, allow_infinity=True),   # 2.0 included
                 st.floats(-1e3, 1e3).map(np.float64)]
        if low is not None:
            parts.append(st.integers(low - 10**6, low - 1))
        if high is not None:
            parts.append(st.integers(high + 1, high + 10**6))
        return st.one_of(parts)
    if tag == "real":
        low, high, low_open, high_open, finite = kind[1:]
        parts = [_ANY_BAD, st.booleans(), st.just(np.bool_(False)), st.just(float("nan"))]
        if finite:
            parts.append(st.sampled_from([float("inf"), float("-inf")]))
        if low is not None:
            parts.append(st.floats(low - 1e6, low, exclude_max=not low_open,
                                   allow_nan=False))
        if high is not None:
            parts.append(st.floats(high, high + 1e6, exclude_min=not high_open,
                                   allow_nan=False))
        return st.one_of(parts)
    if tag == "bool":
        return st.one_of(_ANY_BAD, st.integers(-2, 2), st.floats(allow_nan=True),
                         st.sampled_from(["True", "False", "yes", "no"]),
                         st.just(np.int64(1)))
    if tag == "ids":
        shape, vocab = kind[1], kind[2]

        def with_id(v):
            t = torch.zeros(shape, dtype=torch.long)
            t.view(-1)[-1] = v
            return t

        return st.one_of(
            st.integers(vocab, vocab + 10**6).map(with_id),
            st.integers(-10**6, -1).map(with_id),
            st.sampled_from([
                torch.zeros(shape), torch.zeros(shape, dtype=torch.bool),
                torch.full(shape, float("nan")), torch.zeros(shape[1:], dtype=torch.long),
                torch.zeros((*shape, 1), dtype=torch.long),
                torch.zeros((*shape[:-1], 0), dtype=torch.long),
                np.zeros(shape, dtype=np.int64), [[0, 1]], None, "0 1"]))
    if tag == "fractions":
        shape = kind[1]

        def with_value(v):
            a = np.full(shape, 0.5)
            a.flat[-1] = v
            return a

        return st.one_of(
            st.sampled_from([float("nan"), float("inf"), float("-inf")]).map(with_value),
            st.floats(1, 1e6, exclude_min=True).map(with_value),
            st.floats(-1e6, 0, exclude_max=True).map(with_value),
            st.sampled_from([None, "0.5", np.full(shape, "a"), np.zeros((0,) + shape[1:]),
                             np.zeros(shape[:-1])]))
    if tag == "choice":
        options = kind[1]
        near = [o.upper() for o in options if o.upper() != o] + [o + " " for o in options]
        return st.one_of(st.none(), st.integers(-2, 2), st.booleans(), st.just([options[0]]),
                         st.sampled_from(near), st.text(max_size=6).filter(
                             lambda s: s not in options))
    raise AssertionError(kind)


# ------------------------------------------------------------------------- the public API
def _get(path: str):
    """The public object at ``path`` ("module.name"), or None where this checkout of the
    package lacks it (``scripts/api_probe.py`` probes older checkouts too)."""
    module, _, name = path.partition(".")
    return getattr(globals()[module], name, None)


def _const(module, name: str, default: tuple) -> tuple:
    return getattr(module, name, default)


MODES = _const(models, "ATTENTION_MODES", ("learned", "uniform"))
EXECUTIONS = _const(training, "EXECUTIONS", ("auto", "batched", "looped"))
OPS = _const(claims, "OPS", (">", ">=", "<", "<=", "==", "in"))
CLASSIFIERS = _const(models, "CLASSIFIERS", ("FC", "TC", "TL"))
REDUCTIONS = _const(models, "HEAD_REDUCTIONS", ("mean", "sum"))
OPTIMIZERS = tuple(_const(training, "OPTIMIZERS", ("adam", "sgd")))
TRANSLATION3 = _const(ch3_ibm1, "TRANSLATION_ATTENTION", ("learned", "uniform"))
POSITIONS = _const(ch6_transformer, "POSITIONS", ("learned",))
NORMS = _const(ch6_transformer, "NORMS", ("pre", "post"))
SWEEP6 = tuple(_const(ch6_transformer, "SWEEP_CONDITIONS", {"learned": None}))
FULL6 = _const(ch6_transformer, "FULL_CONDITIONS", ("learned",))
CONDITIONS7 = tuple(_const(ch7_end_token, "CONDITIONS", {"both": None}))
SWEEP7 = tuple(_const(ch7_end_token, "SWEEP_ROWS", {"both, L=20": None}))
CAUSES7 = tuple(_const(ch7_end_token, "CAUSE_ROWS", {"front word": None}))
TRANSFORMER7 = tuple(_const(ch7_end_token, "TRANSFORMER_ROWS", {"1 head, none": None}))
RESCUE7 = tuple(_const(ch7_end_token, "RESCUE_ROWS", {"1 head, none": None}))
PUSH7 = _const(ch7_end_token, "PUSH_ROWS", ("both, L=20",))
HELD_OUT7 = _const(ch7_end_token, "HELD_OUT_ROWS", ("none, L=20",))
CLASSES7 = _const(ch7_end_token, "POSITION_CLASSES", ())


_CLAIM = dict(id="X1", statement="s", kind="identity", measured=1.0, op=">=", threshold=0.5)


def _claim(**kw):
    return claims.Claims("t").check(**{k: v for k, v in kw.items() if k not in
                                       ("id", "statement")}, id=kw["id"],
                                    statement=kw["statement"])


_CLASSIFIER = _get("models.AttentionClassifier")(vocab=4, embed=2, hidden=2)
_SEQ2SEQ = _get("models.Seq2Seq")(vocab=5, embed=2, hidden=2)


def _closing(fn):
    """``fn`` (which draws a Figure) with its Figure closed: the valid calls draw one each."""
    if fn is None:
        return None

    @functools.wraps(fn)
    def call(**kwargs):
        import matplotlib.pyplot as plt
        plt.close(fn(**kwargs))

    return call


# chapters 6 and 7: the stored rows' smallest valid forms (two runs, evaluated at 0 and 300)
_ROWS6 = {"learned": {"eval_steps": [0, 300], "token_acc": [[0.1, 0.99]]}}
_INITIAL6 = {"learned": {"token_acc": [[0.0]], "attn_acc": [[0.0]], "beta_align": [[0.0]]}}
_ROW7 = {"eval_steps": [0, 300], "copy_acc": [[0.1, 0.99], [0.2, 0.5]],
         **{f"mass_{c}": [[0.2, 0.2], [0.1, 0.1]] for c in CLASSES7}}
_ROWS7 = {name: _ROW7 for name in SWEEP7}
_PUSHES7 = {"both, L=20": {"seeds": [0, 1], "push_diag_copy": [0.1, -0.2]}}
_HELD7 = {"none, L=20": {"copy_acc": [[0.1, 0.99], [0.1, 0.2]], "push_diag_copy": [0.3, -0.1]}}
#: the scalar fields of chapter 6's TransformerCopyConfig (and of chapter 7's subclass);
#: pos_std and emb_std may be 0 (its nonnegative_floats)
_TRANSFORMER_FIELDS = dict(
    length=Int(1), d_model=Int(1), heads=Int(1), d_ff=Int(1), pos_std=Real(0), emb_std=Real(0),
    shared_positions=BOOL, eos=BOOL,
    positions=Choice(*POSITIONS), norm=Choice(*NORMS), attention=Choice(*MODES),
    execution=Choice(*EXECUTIONS), batch_size=Int(1), steps=Int(1), lr=Real(0, low_open=True),
    eval_every=Int(1), eval_batch_size=Int(1))

#: the scalar fields of chapter 1's KeywordConfig (and of chapter 3's subclass)
_KEYWORD_FIELDS = dict(
    length=Int(2), vocab=Int(2), embed=Int(1), hidden=Int(1), attention=Choice(*MODES),
    optimizer=Choice(*OPTIMIZERS), lr=Real(0, low_open=True), batch_size=Int(1), steps=Int(1),
    eval_every=Int(1), eval_batch_size=Int(1), bidirectional=BOOL)
#: the scalar fields of chapter 5's HeadsRun (and of chapter 7's subclass)
_HEADS_FIELDS = dict(base_seed=Int(0), head_proj=BOOL, head_reduce=Choice(*REDUCTIONS))
_POSITIVE_REAL = Real(0, low_open=True)


def _classify(x):
    return _CLASSIFIER(x)


def _seq2seq(src, tgt_in):
    return _SEQ2SEQ(src, tgt_in)


#: (name, callable, valid keyword arguments, {parameter: what it takes})
API = [
    ("models.AttentionClassifier.forward", _classify,
     dict(x=torch.zeros(1, 2, 3, dtype=torch.long)), dict(x=Ids((1, 2, 3), 4))),
    ("models.Seq2Seq.forward", _seq2seq,
     dict(src=torch.zeros(1, 2, 3, dtype=torch.long), tgt_in=torch.zeros(1, 2, 4, dtype=torch.long)),
     dict(src=Ids((1, 2, 3), 5), tgt_in=Ids((1, 2, 4), 5))),
    ("metrics.verdict_repeat", _get("metrics.verdict_repeat"),
     dict(final_acc=[[0.9, 0.99], [0.3, 0.2]]), dict(final_acc=Fractions((2, 2)))),
    ("metrics.classify_heads (accuracies)", _get("metrics.classify_heads"),
     dict(final_acc=[[0.9, 0.99]]), dict(final_acc=Fractions((1, 2)))),
    ("metrics.first_to_diagonal", _get("metrics.first_to_diagonal"),
     dict(head_attn_acc=[[0.1, 0.2], [0.6, 0.7]], steps=[0, 10]),
     dict(head_attn_acc=Fractions((2, 2)))),
    ("data.KeywordTask", _get("data.KeywordTask"), dict(length=3, vocab=4, keyword=0),
     dict(length=Int(2), vocab=Int(2), keyword=Int(0, 3))),
    ("data.CopyTask", _get("data.CopyTask"), dict(length=3),
     dict(length=Int(1), distribution=Choice("permutation", "distinct", "iid"), eos=BOOL,
          eos_side=Choice("both", "source", "target"), start=BOOL, mask_end=BOOL,
          end_loss=BOOL, end_score_grad=BOOL, end_state_grad=BOOL, mask_start=BOOL,
          min_length=Opt(Int(1)))),
    ("data.ParallelCorpusTask", _get("data.ParallelCorpusTask"),
     dict(vocab=6, length=3, n_pairs=10, seed=0),
     dict(vocab=Int(2), length=Int(1), n_pairs=Int(1), zipf=Real(0), distinct=BOOL,
          reorder=Real(0, 1), seed=Int(0))),
    ("data.TopicTask", _get("data.TopicTask"),
     dict(n_topics=2, words_per_topic=1, m=2, n_nontopic=5, n_train=6, n_test=2),
     dict(n_topics=Int(1), words_per_topic=Int(1), m=Int(1), n_train=Int(1), seed=Int(0))),
    ("models.AttentionClassifier", _get("models.AttentionClassifier"),
     dict(vocab=4, embed=2, hidden=2),
     dict(vocab=Int(1), embed=Int(1), hidden=Int(1),
          attention=Choice(*MODES))),
    ("models.Seq2Seq", _get("models.Seq2Seq"), dict(vocab=5, embed=2, hidden=2),
     dict(vocab=Int(1), embed=Int(1), hidden=Int(1), heads=Int(1), cell=Choice("lstm", "gru"),
          attention=Choice(*MODES), bias=BOOL, head_proj=BOOL)),
    ("models.BagOfWordsProxy", _get("models.BagOfWordsProxy"), dict(vocab_in=4, vocab_out=3),
     dict(vocab_in=Int(1), vocab_out=Int(1))),
    ("models.TopicAttention", _get("models.TopicAttention"), dict(vocab=7, n_topics=2, dim=2),
     dict(vocab=Int(1), n_topics=Int(1), dim=Int(1), embed_var=Real(0, low_open=True),
          query_norm=Real(0, low_open=True), classifier=Choice("FC", "TC"))),
    ("metrics.wilson_interval", _get("metrics.wilson_interval"), dict(successes=3, n=10),
     dict(successes=Int(0, 10), n=Int(1), confidence=Real(0, 1, True, True))),
    ("metrics.fisher_exact", _get("metrics.fisher_exact"), dict(k1=3, n1=10, k2=5, n2=10),
     dict(k1=Int(0, 10), n1=Int(1), k2=Int(0, 10), n2=Int(1),
          alternative=Choice("two-sided", "greater", "less"))),
    ("metrics.newcombe_interval", _get("metrics.newcombe_interval"), dict(k1=3, n1=10, k2=5, n2=10),
     dict(k1=Int(0, 10), n1=Int(1), k2=Int(0, 10), n2=Int(1))),
    ("metrics.classify_heads", _get("metrics.classify_heads"), dict(final_acc=[[0.9, 0.99]]),
     dict(good=Real(0, 1, True, True), bad=Real(0, 1, True, True))),
    ("metrics.agreement_baseline", _get("metrics.agreement_baseline"), dict(v=np.eye(3)[None]),
     dict(k=Real(0, 1, True, False))),
    ("theory.gated_flow", _get("theory.gated_flow"), dict(beta0=0.0, beta1=0.0, p=0.5, n_steps=10),
     dict(beta0=Real(), beta1=Real(), p=Real(0, 1, True, True), t_max=Real(0, low_open=True),
          n_steps=Int(1))),
    ("theory.gated_flow_critical_gap", _get("theory.gated_flow_critical_gap"), dict(p=0.5),
     dict(p=Real(0, 1, True, True))),
    ("theory.gated_ce_descent", _get("theory.gated_ce_descent"),
     dict(beta0=0.0, beta1=0.0, p=0.5, lr=0.1, steps=3),
     dict(beta0=Real(), beta1=Real(), p=Real(0, 1, True, True), lr=Real(0, low_open=True),
          steps=Int(1))),
    ("theory.sen_curve", _get("theory.sen_curve"), dict(score=[0.1, 0.2], m=20), dict(m=Int(1))),
    ("theory.ibm1_em", _get("theory.ibm1_em"),
     dict(sources=[[0, 1], [1, 2]], targets=[[2, 0], [0, 1]]),
     dict(iterations=Int(1), null=BOOL)),
    ("theory.optimal_attention", _get("theory.optimal_attention"),
     dict(gammas=[[0.0, 0.0, 0.0], [0.0, -10.0, 5.0], [0.0, 5.0, -10.0]], steps=10),
     dict(target=Int(0, 2), method=Choice("projected", "mirror"), steps=Int(1),
          tol=Real(0, low_open=True))),
    ("training.Trainer", _get("training.Trainer"), dict(steps=1, batch_size=2, progress=False),
     dict(steps=Int(1), batch_size=Int(1), lr=Opt(Real(0, low_open=True)),
          eval_every=Int(1), progress=BOOL, execution=Choice(*EXECUTIONS),
          optimizer=Choice("adam", "sgd"), workers=Opt(Int(1)))),
    ("claims.Claims.check", _claim, _CLAIM,
     dict(kind=Choice("finding", "identity"), op=Choice(*OPS))),
    ("ch1_gated.KeywordConfig", _get("ch1_gated.KeywordConfig"), dict(), _KEYWORD_FIELDS),
    # SENConfig.dim is at least n_topics (4 by default)
    ("ch2_sen.SENConfig", _get("ch2_sen.SENConfig"), dict(),
     dict(classifier=Choice(*CLASSIFIERS), m=Int(1), n_topics=Int(2), words_per_topic=Int(1),
          n_nontopic=Int(1), n_train=Int(1), n_test=Int(1), dim=Int(4),
          embed_var=_POSITIVE_REAL, query_norm=_POSITIVE_REAL, train_query=BOOL,
          lr=_POSITIVE_REAL, epochs=Int(1), eval_every=Int(1), eq8=BOOL, all_words=BOOL)),
    # the default frequent counts (103 + 25 sentences) must fit into rare_per_class *
    # rare_count sentences: rare_count >= 12 at rare_per_class 11, rare_per_class >= 4 at 36
    ("ch2_sen.PurityConfig", _get("ch2_sen.PurityConfig"), dict(),
     dict(classifier=Choice(*CLASSIFIERS), rare_count=Int(12), rare_per_class=Int(4), m=Int(2),
          n_nontopic=Int(1), n_test=Int(1), dim=Int(2), embed_var=_POSITIVE_REAL,
          lr=_POSITIVE_REAL, epochs=Int(1), eval_every=Int(1))),
    # n_words is at least 4 * pairs_per_topic (8 by default); pairs_per_topic and n_sample
    # are left out: CNNConfig accepts 0 for both (xfail cases in tests/test_api_probe.py)
    ("ch2_sen.CNNConfig", _get("ch2_sen.CNNConfig"), dict(),
     dict(n_words=Int(8), length=Int(2), n_train=Int(1), n_test=Int(1), dim=Int(2),
          embed_var=_POSITIVE_REAL, query_norm=_POSITIVE_REAL, train_cnn=BOOL,
          lr=_POSITIVE_REAL, epochs=Int(1), eval_every=Int(1))),
    ("ch3_ibm1.TranslationConfig", _get("ch3_ibm1.TranslationConfig"), dict(),
     dict(vocab=Int(2), length=Int(1), n_pairs=Int(1), zipf=Real(0), distinct=BOOL,
          reorder=Real(0, 1), data_seed=Int(0), embed=Int(1), hidden=Int(1),
          attention=Choice(*TRANSLATION3), batch_size=Int(1), steps=Int(1), lr=_POSITIVE_REAL,
          eval_every=Int(1), n_eval=Int(1))),
    ("ch3_ibm1.KeywordRelevanceConfig", _get("ch3_ibm1.KeywordRelevanceConfig"), dict(),
     dict(_KEYWORD_FIELDS, n_eval=Int(1))),
    ("ch4_copy.CopyConfig", _get("ch4_copy.CopyConfig"), dict(),
     dict(length=Int(1), embed=Int(1), hidden=Int(1), heads=Int(1), cell=Choice("lstm", "gru"),
          eos=BOOL, bias=BOOL, batch_size=Int(1), steps=Int(1), lr=Real(0, low_open=True),
          eval_every=Int(1))),
    ("ch4_copy.guessing_accuracy", _get("ch4_copy.guessing_accuracy"), dict(length=20),
     dict(length=Int(1), eos=BOOL)),
    ("ch5_multihead.HeadsRun", _get("ch5_multihead.HeadsRun"), dict(), _HEADS_FIELDS),
    ("ch5_multihead.RescueConfig", _get("ch5_multihead.RescueConfig"), dict(),
     dict(base_seed=Int(0), head_proj=BOOL, n_candidates=Int(1),
          good=Real(0.6, 1, True, True), bad=Real(0, 0.95, True, True), n_combinations=Int(1))),
    ("ch6_transformer.TransformerCopyConfig", _get("ch6_transformer.TransformerCopyConfig"), dict(),
     _TRANSFORMER_FIELDS),
    ("ch6_transformer.position_logits", _get("ch6_transformer.position_logits"),
     dict(sigma=1.0, d_model=8, heads=2, n_positions=4, draws=2),
     dict(sigma=Real(0, low_open=True), d_model=Int(1), heads=Int(1), n_positions=Int(2),
          draws=Int(1), seed=Int(0))),
    ("ch6_transformer.sinusoidal_positions", _get("ch6_transformer.sinusoidal_positions"),
     dict(n=4, d=8), dict(n=Int(1), d=Int(1))),
    ("ch6_transformer.MultiHeadAttention", _get("ch6_transformer.MultiHeadAttention"),
     dict(d=4, heads=2), dict(d=Int(1), heads=Int(1))),
    ("ch6_transformer.TransformerSeq2Seq", _get("ch6_transformer.TransformerSeq2Seq"),
     dict(vocab=5, d_model=4, heads=2, d_ff=4, max_len=8),
     dict(vocab=Int(2), d_model=Int(1), heads=Int(1), d_ff=Int(1), max_len=Int(1),
          positions=Choice(*POSITIONS), norm=Choice(*NORMS), attention=Choice(*MODES),
          pos_std=Real(0), emb_std=Real(0), shared_positions=BOOL)),
    ("ch6_transformer.StackedTransformer", _get("ch6_transformer.StackedTransformer"),
     dict(vocab=5, d_model=4, heads=2, d_ff=4, max_len=8),
     dict(vocab=Int(2), d_model=Int(1), heads=Int(1), positions=Choice(*POSITIONS),
          norm=Choice(*NORMS), attention=Choice(*MODES), pos_std=Real(0),
          shared_positions=BOOL)),
    ("ch6_transformer.sweep_config", _get("ch6_transformer.sweep_config"),
     dict(name="learned"), dict(name=Choice(*SWEEP6))),
    ("ch6_transformer.live_config", _get("ch6_transformer.live_config"),
     dict(name="learned"), dict(name=Choice(*SWEEP6), n=Int(1))),
    ("ch6_transformer.full_sweep_config", _get("ch6_transformer.full_sweep_config"),
     dict(name="learned"), dict(name=Choice(*FULL6))),
    ("ch6_transformer.lstm_reference", _get("ch6_transformer.lstm_reference"), dict(step=300),
     dict(step=Int(0))),
    ("ch6_transformer.check_initial", _get("ch6_transformer.check_initial"),
     dict(rows=_INITIAL6, names=["learned"], n=1), dict(n=Opt(Int(1)))),
    ("ch6_transformer.draw_position_logits",
     _closing(_get("ch6_transformer.draw_position_logits")), dict(sigma=1.0),
     dict(sigma=Real(0, low_open=True), heads=Int(1))),
    ("ch6_transformer.draw_success_counts",
     _closing(_get("ch6_transformer.draw_success_counts")),
     dict(rows=_ROWS6, step=300, count=lambda row, level, step: 1, names=["learned"]),
     dict(step=Int(0))),
    ("ch7_end_token.EndTokenConfig", _get("ch7_end_token.EndTokenConfig"), dict(),
     dict(length=Int(1), eos=BOOL, eos_side=Choice("both", "source", "target"), start=BOOL,
          mask_end=BOOL, end_loss=BOOL, end_score_grad=BOOL, end_state_grad=BOOL,
          mask_start=BOOL, min_length=Opt(Int(1, 20)), push=BOOL, cell=Choice("lstm", "gru"),
          attention=Choice(*MODES), execution=Choice(*EXECUTIONS), embed=Int(1),
          hidden=Int(1), heads=Int(1), head_proj=BOOL, bias=BOOL,
          permutation_seed=Opt(Int(0)), batch_size=Int(1), steps=Int(1),
          lr=Real(0, low_open=True), eval_every=Int(1), eval_batch_size=Int(1))),
    ("ch7_end_token.CauseConfig", _get("ch7_end_token.CauseConfig"), dict(),
     dict(spare_word=BOOL, front_word=BOOL, end_weight=Real(0, low_open=True),
          mask_end_words=BOOL, step_input=BOOL, optimizer=Choice("adam", "sgd"),
          length=Int(1), steps=Int(1), lr=Real(0, low_open=True))),
    ("ch7_end_token.FlagConfig", _get("ch7_end_token.FlagConfig"), dict(),
     dict(end_flag=BOOL, end_weight=Real(0, low_open=True), optimizer=Choice("adam", "sgd"))),
    ("ch7_end_token.cause_config", _get("ch7_end_token.cause_config"),
     dict(row="front word"), dict(row=Choice(*CAUSES7))),
    ("ch7_end_token.EndTransformerConfig", _get("ch7_end_token.EndTransformerConfig"), dict(),
     _TRANSFORMER_FIELDS),
    ("ch7_end_token.EndHeadsRun", _get("ch7_end_token.EndHeadsRun"), dict(), _HEADS_FIELDS),
    ("ch7_end_token.condition_config", _get("ch7_end_token.condition_config"),
     dict(name="both"),
     dict(name=Choice(*CONDITIONS7), length=Int(2), task=Choice("permutation", "control"))),
    ("ch7_end_token.row_name", _get("ch7_end_token.row_name"), dict(name="both"),
     dict(name=Choice(*CONDITIONS7), length=Int(2), task=Choice("permutation", "control"))),
    ("ch7_end_token.sweep_config", _get("ch7_end_token.sweep_config"), dict(row="both, L=20"),
     dict(row=Choice(*SWEEP7))),
    ("ch7_end_token.live_config", _get("ch7_end_token.live_config"), dict(row="both, L=20"),
     dict(row=Choice(*SWEEP7), n=Int(1))),
    ("ch7_end_token.transformer_config", _get("ch7_end_token.transformer_config"),
     dict(row="1 head, none"), dict(row=Choice(*TRANSFORMER7))),
    ("ch7_end_token.rescue_config", _get("ch7_end_token.rescue_config"),
     dict(row="1 head, none"), dict(row=Choice(*RESCUE7))),
    ("ch7_end_token.push_config", _get("ch7_end_token.push_config"), dict(row="both, L=20"),
     dict(row=Choice(*PUSH7))),
    ("ch7_end_token.held_out_config", _get("ch7_end_token.held_out_config"),
     dict(row="none, L=20"), dict(row=Choice(*HELD_OUT7))),
    ("ch7_end_token.successes", _get("ch7_end_token.successes"), dict(row=_ROW7),
     dict(level=Real(0, 1), step=Opt(Int(0)))),
    ("ch7_end_token.compare", _get("ch7_end_token.compare"),
     dict(rows=_ROWS7, a="both, L=20", b="none, L=20"), dict(level=Real(0, 1))),
    ("ch7_end_token.mass_by_outcome", _get("ch7_end_token.mass_by_outcome"), dict(row=_ROW7),
     dict(level=Real(0, 1))),
    ("ch7_end_token.ablation_table", _get("ch7_end_token.ablation_table"), dict(rows=_ROWS7),
     dict(level=Real(0, 1))),
    ("ch7_end_token.first_seeds_p", _get("ch7_end_token.first_seeds_p"),
     dict(rows=_ROWS7, n=2), dict(n=Int(1, 40))),
    ("ch7_end_token.draw_seeds", _closing(_get("ch7_end_token.draw_seeds")),
     dict(rows=_ROWS7, n=2), dict(n=Int(1, 40))),
    ("ch7_end_token.draw_ablations", _closing(_get("ch7_end_token.draw_ablations")),
     dict(rows=_ROWS7), dict(level=Real(0, 1))),
    ("ch7_end_token.CopyOnly", _get("ch7_end_token.CopyOnly"), dict(vocab=20),
     dict(vocab=Int(1))),
    ("ch7_end_token.outcome_auc", _get("ch7_end_token.outcome_auc"),
     dict(score=[1.0, 2.0, 3.0], ok=np.array([True, False, True]), shuffles=10),
     dict(shuffles=Int(1), seed=Int(0))),
    ("ch7_end_token.push_prediction", _get("ch7_end_token.push_prediction"),
     dict(pushes=_PUSHES7, rows=_ROWS7), dict(level=Real(0, 1))),
    ("ch7_end_token.draw_push", _closing(_get("ch7_end_token.draw_push")),
     dict(pushes=_PUSHES7, rows=_ROWS7), dict(level=Real(0, 1))),
    ("ch7_end_token.held_out_auc", _get("ch7_end_token.held_out_auc"),
     dict(rows=_HELD7, shuffles=10),
     dict(level=Real(0, 1), step=Choice("first", "last"), shuffles=Int(1), seed=Int(0))),
]

CASES = [pytest.param(fn, valid, name, kind, id=f"{label}-{name}")
         for label, fn, valid, params in API for name, kind in params.items()]


def names(name: str, message: str) -> bool:
    """Whether an error message names the parameter ``name`` (as a word of its own);
    ``scripts/api_probe.py`` sorts its outcomes with this too."""
    return re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", message) is not None


def _raised_by_attn_core(excinfo) -> bool:
    return "attn_core" in Path(str(excinfo.traceback[-1].path)).parts


@pytest.mark.parametrize("fn, valid, name, kind", CASES)
def test_a_value_a_parameter_does_not_take_is_refused_naming_it(fn, valid, name, kind):
    assert fn is not None, "an entry point of the list is missing from the package"
    fn(**valid)                                         # the valid call is valid

    @SETTINGS
    @given(value=bad_values(kind))
    def refused(value):
        with pytest.raises((ValueError, TypeError)) as excinfo:
            fn(**{**valid, name: value})
        message = str(excinfo.value)
        assert names(name, message), (
            f"{name}={value!r}: {excinfo.type.__name__} does not name {name!r}: {message}")
        assert _raised_by_attn_core(excinfo), (
            f"{name}={value!r}: raised inside {excinfo.traceback[-1].path}, not by attn_core: "
            f"{excinfo.type.__name__}: {message}")

    refused()


def test_the_bad_values_are_bad_for_the_checks_of_their_kind():
    # the strategies themselves: every generated value fails the package's own check of that
    # kind (else a test above could pass on a value the parameter rightly takes)
    from attn_core.checks import check_bool, check_choice, check_int, check_real

    @SETTINGS
    @given(st.data())
    def each_kind(data_):
        for kind, check in [(Int(2, 9), lambda v: check_int("x", v, 2, 9)),
                            (Real(0, 1, True, False), lambda v: check_real("x", v, 0, 1, True)),
                            (BOOL, lambda v: check_bool("x", v)),
                            (Choice("a", "b"), lambda v: check_choice("x", v, ("a", "b")))]:
            value = data_.draw(bad_values(kind))
            with pytest.raises((ValueError, TypeError), match=r"^x must"):
                check(value)

    each_kind()


def _run_property(fn, valid, name, kind):
    test_a_value_a_parameter_does_not_take_is_refused_naming_it(fn, valid, name, kind)


def test_the_property_fails_a_parameter_that_accepts_a_bad_value():
    def lenient(n=1):                 # takes anything, silently
        return n

    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        _run_property(lenient, {}, "n", Int(1))


def test_the_property_fails_an_error_that_names_nothing_or_comes_from_torch():
    def unnamed(n=1):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError("bad value")
        return n

    with pytest.raises(AssertionError, match=r"does not name 'n'"):
        _run_property(unnamed, {}, "n", Int(1))

    def from_torch(n=1):             # torch's own errors, or silence (torch.zeros(True))
        return torch.zeros(n)

    # Hypothesis reports each distinct failure: several at once come as an exception group
    with pytest.raises((AssertionError, pytest.fail.Exception, RuntimeError,
                        BaseExceptionGroup)):
        _run_property(from_torch, {}, "n", Int(1))


def test_the_probe_script_sorts_every_outcome():
    # scripts/api_probe.py counts what the property test asserts; each of its five outcomes
    import importlib.util
    import time
    spec = importlib.util.spec_from_file_location(
        "api_probe", Path(__file__).resolve().parents[1] / "scripts" / "api_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    from attn_core.checks import check_int

    def clear(n=1):
        return check_int("n", n)

    def unclear(n=1):
        raise ValueError("bad")

    def crash(n=1):
        return [][int(n)]            # IndexError

    def hang(n=1):
        time.sleep(5)

    got = {f.__name__: probe.classify(f, {}, "n", 2.0, timeout=0.2)[0]
           for f in (clear, unclear, crash, hang, lambda n=1: n)}
    assert got == {"clear": "clear", "unclear": "unclear", "crash": "crash", "hang": "hang",
                   "<lambda>": "silent"}
