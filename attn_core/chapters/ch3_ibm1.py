"""Chapter 3 -- KTIW and IBM Model 1 (Snell, Zhong, Klein & Steinhardt 2021, SZKS §2-4).

The LSTM seq2seq with Luong attention on a synthetic parallel corpus with a hidden dictionary
(:class:`TranslationConfig`; I1, I6, A.6), the bag-of-words proxy trained by SGD
(:func:`run_proxy`, also used by chapter 4), chapter 1's keyword classifier seen through the
lexical probe (:class:`KeywordRelevanceConfig`; I8) and the bag-of-words classifiers of SZKS A.10
(:func:`run_bow_classifier`). The closed forms (count table, IBM Model 1, the proxy's velocity
at initialisation) are in :mod:`attn_core.theory`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from torch import nn

from .. import plotting, theory
from ..checks import (check_choice, check_int, check_int_array, check_prob, check_real,
                      check_real_array, check_token_batches)
from ..config import SEED_SALTS, Preset, first_seeds
from ..data import ClassificationAsTranslation, KeywordTask, ParallelCorpusTask
from ..metrics import agreement, alignment_accuracy, first_step, holds_from, leave_one_out
from ..models import BagOfWordsLogistic, BagOfWordsProxy, Seq2Seq
from ..training import train
from ._experiment import Experiment, check_tensor_dict
from .ch1_gated import KeywordConfig

__all__ = ["TranslationConfig", "TRANSLATION", "TRANSLATION_ATTENTION", "translation_probe",
           "KeywordRelevanceConfig", "KEYWORD_RELEVANCE", "KEYWORD_RELEVANCE_UNIFORM",
           "keyword_eval_set", "run_proxy", "run_bow_classifier", "untrained_curves",
           "lead_steps", "misses_one_off", "relevance_after_keyword", "ReadableSeq2Seq",
           "model_diagram", "ZIPF_SLIDER", "zipf_ibm1", "draw_zipf_ibm1",
           "zipf_row_contest", "draw_zipf_row_contest"]

#: ``"learned"`` (standard training), ``"uniform"`` (attention frozen at 1/L: SZKS §3.2's β^uf
#: model) or ``"attention_only"`` (everything frozen at initialisation but the attention's
#: score matrix: SZKS A.6's frozen-β model).
TRANSLATION_ATTENTION = ("learned", "uniform", "attention_only")


def attention_only_seq2seq(seeds, **kwargs) -> Seq2Seq:
    """A :class:`~attn_core.models.Seq2Seq` whose parameters are all frozen except the
    attention score matrix (SZKS A.6)."""
    model = Seq2Seq(seeds=seeds, **kwargs)
    for name, p in model.named_parameters():
        if name != "score":
            p.requires_grad_(False)
    return model


def translation_probe(eval_set: dict, k: float = 0.05):
    """A probe on a fixed held-out set: the head-averaged attention ``alpha`` and the lexical
    probe ``beta`` (S, B, T, L), how often each one's argmax is the aligned position
    (``alpha_acc``, ``beta_acc``), their agreement ``agree`` = A(α, β) and the held-out
    ``token_acc`` (each (S,))."""
    check_tensor_dict("eval_set", eval_set, ("src", "tgt_in", "tgt", "align"))
    k = check_real("k (the top fraction)", k, 0.0, 1.0, low_open=True)

    @torch.no_grad()
    def probe(model, batch):
        S = model.n_members
        dev = batch["src"].device
        b = {k_: v.unsqueeze(0).expand(S, *v.shape).to(dev) for k_, v in eval_set.items()}
        out = model(b["src"], b["tgt_in"])
        alpha = out["alpha"].mean(1)
        beta = model.lexical_probe(b["src"], b["tgt_in"], b["tgt"])
        align = b["align"]
        agree = torch.tensor([agreement(alpha[s], beta[s], k) for s in range(S)])
        return {"alpha": alpha, "beta": beta,
                "alpha_acc": (alpha.argmax(-1) == align).float().flatten(1).mean(1),
                "beta_acc": (beta.argmax(-1) == align).float().flatten(1).mean(1),
                "agree": agree,
                "token_acc": (out["logits"].argmax(-1) == b["tgt"]).float().flatten(1).mean(1)}

    return probe


@dataclass(frozen=True)
class TranslationConfig(Experiment):
    """The LSTM seq2seq with Luong attention (SZKS §2.1) on a synthetic parallel corpus with a
    hidden dictionary (:class:`~attn_core.data.ParallelCorpusTask`), trained with Adam.

    ``attention``: one of :data:`TRANSLATION_ATTENTION`. ``n_eval`` held-out pairs (drawn once
    from the corpus distribution, the same for every run of one corpus) are where α and β are
    recorded (:func:`translation_probe`).
    """

    name = "translation"
    nonnegative_floats = ("zipf", "reorder")

    vocab: int = 30
    length: int = 10
    n_pairs: int = 2000
    zipf: float = 1.0
    distinct: bool = False
    reorder: float = 0.3
    data_seed: int = 0
    embed: int = 64
    hidden: int = 64
    attention: str = "learned"
    batch_size: int = 32
    steps: int = 500
    lr: float = 2e-3
    eval_every: int = 10
    n_eval: int = 64
    seeds: tuple[int, ...] = (0, 1, 2)

    def __post_init__(self):
        super().__post_init__()
        cls = type(self).__name__
        check_choice(f"{cls}.attention", self.attention, TRANSLATION_ATTENTION)
        # ParallelCorpusTask's bounds
        check_int(f"{cls}.vocab", self.vocab, 2)
        check_prob(f"{cls}.reorder", self.reorder, open_interval=False)
        if self.distinct and self.vocab < self.length:
            raise ValueError(f"{cls}.vocab ({self.vocab}) must be >= length ({self.length}) for "
                             f"distinct words per sentence")

    def task(self) -> ParallelCorpusTask:
        return ParallelCorpusTask(self.vocab, self.length, self.n_pairs, self.zipf, self.distinct,
                                  self.reorder, self.data_seed)

    def eval_set(self, task: ParallelCorpusTask | None = None) -> dict:
        """The fixed held-out pairs every probe of this corpus is recorded on (model ids)."""
        return (task or self.task()).held_out(self.n_eval, seed=1)

    def model_fn(self, task):
        kwargs = dict(vocab=task.model_vocab, embed=self.embed, hidden=self.hidden)
        if self.attention == "attention_only":
            return functools.partial(attention_only_seq2seq, **kwargs)
        return functools.partial(Seq2Seq, attention=self.attention, **kwargs)

    def probes(self, task) -> list:
        return [translation_probe(self.eval_set(task))]

    def train_kwargs(self) -> dict:
        return dict(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                    eval_every=self.eval_every)

    def cache_name(self) -> str:
        return f"{self.name}-{self.attention}"

    def label(self, task) -> str:
        return f"translation ({self.attention} attention)"


#: I1, I6. Fast: V = 30 words, L = 10, 2,000 pairs, hidden 64, 400 Adam steps at 2e-3, 3 seeds
#: (cut from 500 to save CI time: the same runs' first 400 steps. Measured on the 2-core CPU:
#: ~11 s at 500 steps for the learned-attention models, which reach 0.77-0.80 held-out token
#: accuracy at 400 steps, 0.80-0.81 at 500; at 1e-3 / 400 steps they were still climbing).
#: Full: the paper's widths (embedding and hidden 256), V = 200, L = 20, 20,000 pairs, 3,000
#: steps, 5 seeds (not run on a GPU yet).
#: A smoke run keeps the first seed and at most :data:`SMOKE_PAIRS` pairs of the corpus.
SMOKE_PAIRS = 2000


def _smoke_translation(config: TranslationConfig) -> TranslationConfig:
    """:data:`TRANSLATION`'s smoke run: its first seed and at most :data:`SMOKE_PAIRS` pairs
    (the fast corpus's size), at the same vocabulary, length and model widths. The chapter's
    count tables, EM and proxy velocities run over the whole corpus: at the full 20,000
    pairs they took ~40 s of a core in the test command's smoke run, work that
    checks no more plumbing than 2,000 pairs do."""
    return replace(first_seeds(1)(config), n_pairs=min(config.n_pairs, SMOKE_PAIRS))


TRANSLATION = Preset(
    fast=TranslationConfig(steps=400),
    full=TranslationConfig(vocab=200, length=20, n_pairs=20000, embed=256, hidden=256,
                           batch_size=64, steps=3000, eval_every=100, seeds=(0, 1, 2, 3, 4)),
    smoke=_smoke_translation,   # a smoke run: its first seed, a smaller corpus, same shapes
)


def keyword_eval_set(config: KeywordConfig, n: int) -> dict:
    """``n`` held-out *positive* keyword sequences (a fixed generator, see ``SEED_SALTS``)."""
    if not isinstance(config, KeywordConfig):
        raise TypeError(f"config must be a KeywordConfig; got {type(config).__name__}")
    n = check_int("n", n)
    task = KeywordTask(config.length, config.vocab)
    g = torch.Generator().manual_seed(SEED_SALTS["keyword_eval"])
    xs, ps = [], []
    while sum(len(x) for x in xs) < n:
        b = task.sample(g, 2 * n)
        keep = b["pos"] >= 0
        xs.append(b["x"][keep])
        ps.append(b["pos"][keep])
    return {"x": torch.cat(xs)[:n], "pos": torch.cat(ps)[:n]}


@dataclass(frozen=True)
class KeywordRelevanceConfig(KeywordConfig):
    """Chapter 1's keyword task and attention LSTM classifier, recording on ``n_eval`` fixed
    held-out positive sequences the attention ``p``, the relevance ``beta`` = W h_l (the slides'
    r_l) and, for learned attention, the leave-one-out influence ``delta`` (each (S, E, B, L)),
    plus ``pos`` (S, E, B), the keyword positions."""

    name = "keyword-relevance"

    n_eval: int = 64

    def probes(self, task) -> list:
        ev = keyword_eval_set(self, self.n_eval)
        learned = self.attention == "learned"

        @torch.no_grad()
        def probe(model, batch):
            S = model.n_members
            x = ev["x"].unsqueeze(0).expand(S, -1, -1).to(batch["x"].device)
            out = model(x)
            rec = {"p": out["p"], "beta": out["beta"],
                   "pos": ev["pos"].unsqueeze(0).expand(S, -1)}
            if learned:
                rec["delta"] = leave_one_out(model, x)
            return rec

        return [probe]

    def label(self, task) -> str:
        return f"keyword relevance ({self.attention} attention)"


#: I8: chapter 1's keyword classifier, evaluated every 10 steps (fast) for the agreement of the
#: uniform-attention relevance with the standard model's attention and leave-one-out influence.
#: Fast: 150 steps (cut from 200 to save CI time: the same runs' first 150 steps; the agreement
#: reaches 1 by step 70 in every seed).
KEYWORD_RELEVANCE = Preset(
    fast=KeywordRelevanceConfig(steps=150, eval_every=10),
    full=KeywordRelevanceConfig(embed=128, hidden=128, steps=400, seeds=tuple(range(10)), lr=0.5,
                                eval_every=20),
    smoke=first_seeds(1),   # a smoke run: its first seed, same shapes
)

#: I8's uniform-attention model: :data:`KEYWORD_RELEVANCE` with the attention frozen at 1/L,
#: trained past the point where the states after the keyword outscore it (chapter 1 §6). Fast:
#: 400 steps (the normal model's 150 plus 250; +2.7 s on the 2-core CPU); the agreement with the
#: normal model's attention reaches 1 by step 70 and stays below 0.10 from steps 220-270 on in
#: all three seeds (0.08 at step 400). Full: 400 steps as the normal model (run once on the
#: CPU for 800 steps, 97 s: every seed falls below 0.2 between steps 180 and 320 and stays
#: at 0.08-0.11).
KEYWORD_RELEVANCE_UNIFORM = Preset(
    fast=replace(KEYWORD_RELEVANCE.fast, attention="uniform", steps=400),
    full=replace(KEYWORD_RELEVANCE.full, attention="uniform"),
    smoke=first_seeds(1),   # a smoke run: its first seed, same shapes
)


def run_proxy(task, steps: int = 300, lr: float = 1.0, seed: int = 0, batch_size: int = 64):
    """Train the full-rank bag-of-words proxy (SZKS §2.3) on a copy or translation task by SGD:
    a free |I| × |O| logit table θ started at θ = 0 (``BagOfWordsProxy(dim=None)``; the
    factorised θ = W e could not start at W = e = 0, where both gradients vanish). |I| = |O| =
    ``task.model_vocab`` (for a translation task 2V + 1: source words, target words and the
    start symbol). Returns the trained one-member :class:`~attn_core.models.BagOfWordsProxy` and
    the History."""
    if not (hasattr(task, "sample") and hasattr(task, "model_vocab")):
        raise TypeError(f"task must be a copy or translation task (with sample() and "
                        f"model_vocab); got {type(task).__name__}")
    steps, seed = check_int("steps", steps), check_int("seed", seed, 0)
    lr = check_real("lr", lr, 0.0, low_open=True)
    model_fn = functools.partial(BagOfWordsProxy, vocab_in=task.model_vocab,
                                 vocab_out=task.model_vocab)
    h = train(model_fn, task, [seed], steps=steps, optimizer="sgd", lr=lr, batch_size=batch_size,
              eval_every=max(1, steps // 10), progress=False, desc="bag-of-words proxy")
    return h.model, h


BOW_MODELS = ("proxy", "logistic")


def run_bow_classifier(task, model: str = "proxy", steps: int = 300, lr: float = 1.0,
                       batch_size: int = 64, seed: int = 0):
    """Train a bag-of-words classifier from zero by plain SGD through the engine on a binary task
    (wrapped by :class:`~attn_core.data.ClassificationAsTranslation`): the full-rank proxy with
    |O| = 2 (``model="proxy"``, SZKS §2.3) or logistic regression (``"logistic"``, A.10).
    Returns the trained one-member model and its History."""
    check_choice("model", model, BOW_MODELS)
    steps, seed = check_int("steps", steps), check_int("seed", seed, 0)
    lr = check_real("lr", lr, 0.0, low_open=True)
    wrapped = (task if isinstance(task, ClassificationAsTranslation)
               else ClassificationAsTranslation(task))
    if model == "proxy":
        model_fn = functools.partial(BagOfWordsProxy, vocab_in=wrapped.model_vocab, vocab_out=2)
    else:
        model_fn = functools.partial(BagOfWordsLogistic, vocab_in=wrapped.model_vocab)
    h = train(model_fn, wrapped, [seed], steps=steps, optimizer="sgd", lr=lr,
              batch_size=batch_size, eval_every=max(1, steps // 10), progress=False,
              desc=f"bag-of-words {model}")
    return h.model, h


# ------------------------------------------------------------------- the claims' untrained side

def untrained_curves(curves) -> np.ndarray:
    """``curves`` (S, E), one value per member and evaluation, replaced by what a model that
    is never trained records: its value at the first evaluation (step 0), at every step."""
    c = check_real_array("curves", curves)
    if c.ndim != 2 or c.shape[1] < 1:
        raise ValueError(f"curves must be an (S, E) array; got shape {c.shape}")
    return np.repeat(c[:, :1], c.shape[1], axis=1)


def lead_steps(steps, beta_acc, alpha_acc, level: float = 0.3) -> tuple:
    """I1's ordering, robust to a single noisy evaluation: ``(b, a)`` with ``b`` the first of
    ``steps`` from which β's seed-averaged accuracy stays above ``level`` to the end
    (:func:`~attn_core.metrics.holds_from`; None if it ends below) and ``a`` the first step at
    which α's seed-averaged accuracy passes ``level`` (NaN if never). ``beta_acc`` and
    ``alpha_acc`` are (S, E). β leads when ``b is not None and b < a`` (a NaN ``a``, α never
    passing, counts as β leading only if β does stay above)."""
    level = check_real("level", level)
    beta_acc = check_real_array("beta_acc", beta_acc, 2)
    alpha_acc = check_real_array("alpha_acc", alpha_acc, 2)
    n = len(steps) if hasattr(steps, "__len__") else -1
    for name, acc in (("beta_acc", beta_acc), ("alpha_acc", alpha_acc)):
        if acc.shape[1] != n:
            raise ValueError(f"{name} must be (S, E) with one column per step ({n}); got "
                             f"shape {acc.shape}")
    b_mean = beta_acc.mean(0)
    a_mean = alpha_acc.mean(0)
    return holds_from(steps, b_mean > level), first_step(steps, a_mean, level)


def misses_one_off(alpha, src, align) -> float:
    """Of the output words whose argmax_l α is *not* on the right source word, the fraction
    one position away from the gold position (I1). ``alpha`` (..., B, T, L), ``src`` (B, L)
    and ``align`` (B, T); NaN when there is no miss."""
    alpha = check_real_array("alpha", alpha)
    src = check_int_array("src", src, ndim=2)
    align = check_int_array("align", align, ndim=2)
    if alpha.ndim < 3 or alpha.shape[-3:-1] != align.shape or alpha.shape[-1] != src.shape[1] \
            or src.shape[0] != align.shape[0]:
        raise ValueError(f"alpha must be (..., B, T, L) with src (B, L) and align (B, T); got "
                         f"{alpha.shape}, {src.shape} and {align.shape}")
    if align.size and (align.min() < 0 or align.max() >= src.shape[1]):
        raise ValueError(f"align must hold source positions in [0, {src.shape[1] - 1}]; got "
                         f"[{align.min()}, {align.max()}]")
    top = alpha.argmax(-1)                                          # (..., B, T)
    rows = np.arange(len(src))[:, None]
    gold_word = src[rows, align]                                    # (B, T)
    miss = src[rows, top] != gold_word
    if not miss.any():
        return float("nan")
    return float(np.isin((top - align)[miss], (-1, 1)).mean())


def relevance_after_keyword(r, pos) -> dict:
    """Where the relevance r'_l of a keyword classifier puts its maximum, on positive
    sequences with keywords at ``pos`` (S, B); ``r`` is (S, E, B, L), one map per evaluation.
    Per (S, E): ``after``, the fraction of sequences whose argmax_l r' lies after the keyword;
    ``key_minus_mean``, the mean of r'_{l*} - mean_l r'_l (the keyword's own state still
    carries it); ``last_minus_key``, the mean of r'_L - r'_{l*} (the last state beats it)."""
    r = np.asarray(r, dtype=float)
    pos = np.asarray(pos).astype(int)
    if r.ndim != 4 or pos.shape != (r.shape[0], r.shape[2]):
        raise ValueError(f"r must be (S, E, B, L) and pos (S, B); got {r.shape} and {pos.shape}")
    if pos.size and (pos.min() < 0 or pos.max() >= r.shape[3]):
        raise ValueError(f"pos must hold keyword positions in [0, {r.shape[3] - 1}] (L = "
                         f"{r.shape[3]}); got [{pos.min()}, {pos.max()}]")
    key = np.take_along_axis(r, pos[:, None, :, None].repeat(r.shape[1], 1), -1)[..., 0]
    return {"after": (r.argmax(-1) > pos[:, None, :]).mean(-1),
            "key_minus_mean": (key - r.mean(-1)).mean(-1),
            "last_minus_key": (r[..., -1] - key).mean(-1)}


# ------------------------------------------------------------------ the model, readable
class ReadableSeq2Seq(nn.Module):
    """The chapter's seq2seq, one model, line by line as its equations (§1):
    LSTM encoder and decoder sharing one embedding, the score s_tᵀ W h_l, and
    the output network N (one tanh layer, then the output layer). Weights
    start at zero: build it from the engine's model with :meth:`from_seq2seq`.
    """

    def __init__(self, vocab: int, embed: int, hidden: int):
        super().__init__()
        for name, value in (("vocab", vocab), ("embed", embed),
                            ("hidden", hidden)):
            check_int(name, value)
        H = hidden
        self.emb = nn.Embedding(vocab, embed)      # source and target share it
        self.encoder = nn.LSTM(embed, H, batch_first=True)
        self.decoder = nn.LSTM(embed, H, batch_first=True)
        self.W = nn.Parameter(torch.zeros(H, H))   # the score s_tᵀ W h_l
        self.combine = nn.Linear(2 * H, H)         # N: tanh(W_c [s; c] + b_c),
        self.out = nn.Linear(H, vocab)             # then W_o · + b_o: logits

    def states(self, src, tgt_in):
        """Encoder states h (B, L, H) and decoder states s (B, T, H)."""
        h, last = self.encoder(self.emb(src))          # h_1 .. h_L
        s, _ = self.decoder(self.emb(tgt_in), last)    # s_t, teacher-forced
        return h, s

    def N(self, s, c):
        """The output network: logits W_o tanh(W_c [s; c] + b_c) + b_o."""
        return self.out(torch.tanh(self.combine(torch.cat([s, c], dim=-1))))

    def forward(self, src, tgt_in):
        """src (B, L), tgt_in (B, T) -> logits (B, T, V), alpha (B, T, L)."""
        check_token_batches(src, tgt_in, self.emb.num_embeddings)   # ids in [0, V)
        h, s = self.states(src, tgt_in)
        scores = s @ self.W @ h.transpose(1, 2)        # s_tᵀ W h_l: (B, T, L)
        alpha = torch.softmax(scores, dim=-1)          # over positions l
        c = alpha @ h                                  # c_t = Σ_l α_tl h_l
        return {"logits": self.N(s, c), "alpha": alpha}

    @torch.no_grad()
    def lexical_probe(self, src, tgt_in, tgt):
        """β_tl = softmax(N([s_t; h_l]))_{y_t}: the probability of the right
        word y_t if step t attended only to position l. (B, T, L)."""
        h, s = self.states(src, tgt_in)
        T, L = s.shape[1], h.shape[1]
        s_tl = s[:, :, None].expand(-1, -1, L, -1)     # s_t, for every l
        h_tl = h[:, None].expand(-1, T, -1, -1)        # h_l, for every t
        p = torch.softmax(self.N(s_tl, h_tl), dim=-1)  # (B, T, L, V)
        y = tgt[:, :, None, None].expand(-1, -1, L, 1)
        return p.gather(-1, y)[..., 0]                 # p(y_t): (B, T, L)

    @classmethod
    def from_seq2seq(cls, model: Seq2Seq, m: int = 0) -> "ReadableSeq2Seq":
        """Member ``m`` of the engine's stacked Seq2Seq (one head, LSTM cells,
        a shared embedding, learned attention, no projection or bias: the
        chapter's model), with the same weights (a copy)."""
        if not isinstance(model, Seq2Seq):
            raise TypeError(f"model must be a Seq2Seq; got "
                            f"{type(model).__name__}")
        m = check_int("m", m, 0, model.n_members - 1)
        for name, got, want in (
                ("heads", model.heads, 1), ("cell", model.cell, "lstm"),
                ("attention", model.attention, "learned"),
                ("shared_embedding", model.shared_embedding, True),
                ("head_proj", model.head_proj is not None, False),
                ("bias", model.score_bias is not None, False)):
            if got != want:
                raise ValueError(f"model must have {name}={want!r} "
                                 f"(chapter 3's model); got {got!r}")
        out = cls(model.vocab, model.embed, model.hidden)
        ours = {"emb.weight": model.emb.weight, "W": model.score[:, 0],
                "combine.weight": model.combine.weight,
                "combine.bias": model.combine.bias,
                "out.weight": model.out.weight, "out.bias": model.out.bias}
        for rnn in ("encoder", "decoder"):
            for mine, theirs in (("weight_ih_l0", "w_ih"),
                                 ("weight_hh_l0", "w_hh"),
                                 ("bias_ih_l0", "b_ih"), ("bias_hh_l0", "b_hh")):
                ours[f"{rnn}.{mine}"] = getattr(getattr(model, rnn), theirs)
        shapes = {k: v.shape for k, v in out.state_dict().items()}
        out.load_state_dict({k: v.detach()[m].reshape(shapes[k]).clone()
                             for k, v in ours.items()})
        return out


#: The boxes of :func:`model_diagram`: (x, y, label, kind) in the unit square.
_DIAGRAM_BOXES = {
    "x": (0.14, 0.06, "source words\n$x_1, \\ldots, x_L$", "input"),
    "y": (0.86, 0.06, "output so far\n$y_1, \\ldots, y_{t-1}$", "input"),
    "h": (0.14, 0.4, "encoder\nLSTM $h_l$", "state"),
    "s": (0.86, 0.4, "decoder\nLSTM $s_t$", "state"),
    "b": (0.5, 0.24, "probe $\\beta_{t,l} =$\n$N([h_l;\\, s_t])_{y_t}$", "other"),
    "a": (0.42, 0.63, "$\\alpha_{t,l} = \\mathrm{softmax}_l(s_t^\\top W h_l)$\n"
                      "$c_t = \\sum_l \\alpha_{t,l}\\, h_l$", "attention"),
    "p": (0.62, 0.92, "$p_t = N([c_t;\\, s_t])$", "output"),
}
_DIAGRAM_ARROWS = (("x", "h"), ("y", "s"), ("h", "a"), ("s", "a"), ("a", "p"), ("s", "p"),
                   ("h", "b"), ("s", "b"))


def model_diagram() -> Figure:
    """The chapter's model as a block diagram: the LSTM encoder-decoder with Luong
    attention (SZKS §2.1), and the lexical probe β (§2.2), which feeds the output network
    N one source state h_l in place of the context c_t."""
    return plotting.block_diagram(_DIAGRAM_BOXES, _DIAGRAM_ARROWS, size=(4.6, 4.4),
                                  title=r"Seq2seq, Luong attention, and the probe $\beta$")


# ------------------------------------------------------------- the Zipf sliders (§4, Ex. 3.4)
#: The Zipf exponents of the chapter's pre-drawn Zipf sliders (its corpus has 1).
ZIPF_SLIDER = (0.0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0)


def _zipf_task(zipf, config) -> ParallelCorpusTask:
    zipf = check_real("zipf", zipf, 0.0)
    config = TRANSLATION.get() if config is None else config
    if not isinstance(config, TranslationConfig):
        raise TypeError(f"config must be a TranslationConfig; got {type(config).__name__}")
    return replace(config, zipf=float(zipf)).task()


def zipf_ibm1(zipf: float, config: TranslationConfig | None = None,
              iterations: int = 10) -> dict:
    """IBM Model 1 on the chapter's corpus (``config``, default the mode's
    :data:`TRANSLATION`) redrawn with Zipf exponent ``zipf`` (word r has probability
    ∝ 1/r^zipf): what the Zipf slider of §4 shows. Returns

    - ``"trans"``: the one-step table Trans(o | i) = C / row sum, (V, V), its columns in
      dictionary order (true translations on the diagonal), rows by frequency;
    - ``"recovery"``: (iterations,) the row-by-row dictionary recovery after each EM
      iteration (entry 0: the one-step table);
    - ``"mass"``: (iterations,) α^IBM's mean mass on the right source word over the corpus
      (position by position);
    - ``"top_share"``: the most frequent word's share of the corpus's source words.

    Pure and fast: 0.3-0.5 s per call at the fast preset's size (V = 30, 2,000 pairs,
    10 iterations) on this project's 2-core CPU (measured over :data:`ZIPF_SLIDER`)."""
    iterations = check_int("iterations", iterations)
    task = _zipf_task(zipf, config)
    c, V = task.corpus(), task.vocab
    d = task.dictionary.numpy()
    C = theory.count_table(c["src"], c["tgt"], V, V)
    em = theory.ibm1_em(c["src"], c["tgt"], V, V, iterations=iterations)
    src, align = c["src"].numpy(), c["align"].numpy()
    mass = [alignment_accuracy(theory.ibm1_maps(t, src, c["tgt"])[1], src, align)["mass"]
            for t in em["history"]]
    return {"trans": theory.ibm1_translation(C)[:, d],
            "recovery": np.array([theory.dictionary_recovery(t, d) for t in em["history"]]),
            "mass": np.array(mass, dtype=float),
            "top_share": float(np.mean(src == 0))}


def draw_zipf_ibm1(zipf: float, config: TranslationConfig | None = None) -> Figure:
    """The Zipf slider's frame (:func:`zipf_ibm1`): top, the one-step table with each
    row's argmax marked (on the diagonal: recovered); bottom, EM's two readings over its
    iterations. 0.4-0.65 s per call (fast preset, 2-core CPU)."""
    r = zipf_ibm1(zipf, config)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(4.6, 7.4),
                                 gridspec_kw={"height_ratios": [1.35, 1]})
    # a square-root colour scale: the diagonal at s = 0 (about 0.13) and the first
    # column at s = 2 (about 0.56) both stay readable
    im = plotting.heatmap(a1, r["trans"], cmap="magma",
                          norm=PowerNorm(0.5, vmin=0, vmax=0.7))
    fig.colorbar(im, ax=a1, shrink=0.8, ticks=[0, 0.05, 0.2, 0.4, 0.7])
    V = len(r["trans"])
    a1.plot(r["trans"].argmax(1), np.arange(V), "o", ms=4, mfc="none", mec="white", mew=1.2)
    a1.set(xlabel="translation of source word $j$", ylabel="source word $i$",
           title=f"$\\zeta$ = {zipf:g}: one step, Trans($o \\mid i$)\n"
                 "(circles: each row's argmax)")
    its = np.arange(1, len(r["recovery"]) + 1)
    a2.plot(its, r["recovery"], "o-", label="rows recovered")
    a2.plot(its, r["mass"], "^-", color="C2", label=r"$\alpha^{IBM}$ on right word")
    a2.set(xlabel="EM iterations (1 = one step)", ylabel="fraction", ylim=(-0.03, 1.05),
           title=f"one step recovers {r['recovery'][0]:.2f}")
    a2.legend(loc="lower right")
    return fig


def zipf_row_contest(zipf: float, config: TranslationConfig | None = None) -> dict:
    """Exercise 3.4's answer: why Zipf skew spoils the one-step rows. For each source
    word i (by frequency rank) the one-step table's Trans(own translation | i) and
    Trans(translation of word 0 | i), measured on the corpus redrawn with Zipf exponent
    ``zipf``, and their expected-count values for L i.i.d. words with probabilities f ::

        Trans(own | i)  → (1 + (L − 1) f_i) / L      Trans(word 0's | i) → (L − 1) f_0 / L

    (row i gains n_i² / L on its own translation and n_i n_0 / L on word 0's, with
    E[n_i²] = L f_i (1 − f_i) + L² f_i², E[n_i n_0] = L (L − 1) f_i f_0). Returns ``"p"``
    (the probabilities f),
    ``"own"``, ``"rival"``, ``"own_expected"``, ``"rival_expected"`` (each (V,); ``rival``
    of word 0 itself is NaN), ``"n"`` (each word's count in the corpus), ``"recovered"``
    (the measured row-by-row recovery) and ``"predicted"`` (the fraction of words whose
    expected own value beats the expected rival, word 0 counted as recovered).
    0.04-0.07 s per call (fast preset, 2-core CPU)."""
    task = _zipf_task(zipf, config)
    c, V, L = task.corpus(), task.vocab, task.length
    d = task.dictionary.numpy()
    trans = theory.ibm1_translation(theory.count_table(c["src"], c["tgt"], V, V))[:, d]
    p = np.arange(1, V + 1, dtype=float) ** -float(zipf)
    p /= p.sum()
    own_e = (1 + (L - 1) * p) / L
    rival_e = np.full(V, (L - 1) * p[0] / L)
    rival = trans[:, 0].copy()
    rival[0] = rival_e[0] = np.nan
    with np.errstate(invalid="ignore"):
        wins = np.concatenate([[True], own_e[1:] > rival_e[1:]])
    return {"p": p, "own": np.diag(trans).copy(), "rival": rival, "own_expected": own_e,
            "rival_expected": rival_e,
            "n": np.bincount(c["src"].numpy().ravel(), minlength=V),
            "recovered": theory.dictionary_recovery(trans, np.arange(V)),
            "predicted": float(wins.mean())}


def draw_zipf_row_contest(zipf: float, config: TranslationConfig | None = None) -> Figure:
    """Exercise 3.4's answer slider (:func:`zipf_row_contest`): per source word, its own
    translation's one-step probability against word 0's translation, measured (markers)
    and expected (lines). 0.07-0.09 s per call (fast preset, 2-core CPU)."""
    r = zipf_row_contest(zipf, config)
    ranks = np.arange(1, len(r["p"]) + 1)
    fig, ax = plt.subplots(figsize=(4.6, 5.2))
    ax.plot(ranks, r["own"], "o", color="C0", ms=5, label="own translation")
    ax.plot(ranks, r["own_expected"], "-", color="C0", lw=1.2)
    ax.plot(ranks, r["rival"], "x", color="C3", ms=6, label="word 1's translation")
    ax.plot(ranks, r["rival_expected"], "--", color="C3", lw=1.2)
    ax.set(xlabel="source word $i$ (frequency rank)",
           ylabel=r"one-step Trans($\cdot \mid i$)",
           ylim=(0, 0.72),
           title=f"$\\zeta$ = {zipf:g}: one step recovers {r['recovered']:.2f}\n"
                 f"(expected counts: {r['predicted']:.2f})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False,
              title="markers: measured, lines: expected")
    return fig
