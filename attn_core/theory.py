"""Closed-form and ODE results the chapters check training against.

- The toy gated classifier of Snell et al. (blog "Approximating How Single Head Attention
  Learns"; SZKS §2.4): its gradient flow, the flow's closed form, the sigmoid-constrained
  cross-entropy version and plain gradient descent.
- The score / embedding-norm (SEN) relation of Lu, Mao & Nayak (2021): Corollary 1 / Eq. 10
  (:func:`sen_curve`, :func:`sen_relative_gap`) and Theorem 1 / Eq. 9 (:func:`sen_theorem1`).
- SZKS §4 and A.2-A.3: the count table, IBM Model 1 (its one-step translation table, EM and
  lexical probe) and the bag-of-words proxy's velocity at initialisation.
- SZKS §6 / A.7: the optimal attention for given per-position log-odds.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .checks import check_bool, check_int, check_int_array, check_real, check_real_array, check_seeds

__all__ = [
    "gated_loss",
    "gated_flow",
    "gated_flow_closed_form",
    "gated_flow_critical_gap",
    "gated_ce_loss",
    "gated_ce_flow",
    "gated_ce_flow_end",
    "gated_ce_descent",
    "sen_curve",
    "sen_relative_gap",
    "sen_theorem1",
    "count_table",
    "ibm1_translation",
    "ibm1_probe",
    "ibm1_em",
    "dictionary_recovery",
    "ibm1_maps",
    "proxy_init_velocity",
    "softmax_velocity",
    "attention_loss",
    "optimal_attention",
    "optimal_attentions",
]


def _check_finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}")
    return float(value)


def _check_p(p) -> float:
    p = _check_finite("p", p)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p (the attention on token 1) must be in the open interval (0, 1); got {p}")
    return p


def _smoke_cap(n: int) -> int:
    """``n`` iterations, or a smoke run's cap (``ATTN_MAX_STEPS``) when that is smaller: an
    iterative fit (the optimal attentions' projected gradient) is a training run too, and a
    smoke run proves its plumbing at the papers' shapes, not its result. (Not EM's
    iterations: chapter 3 reads its history at fixed iterations.)"""
    from .config import env_max_steps

    cap = env_max_steps()
    return n if cap is None else min(n, cap)


def _check_time(t_max, n_steps, steps_name: str = "n_steps") -> tuple[float, int]:
    t_max = _check_finite("t_max", t_max)
    if t_max <= 0:
        raise ValueError(f"t_max must be > 0; got {t_max}")
    if isinstance(n_steps, (bool, np.bool_)) or not isinstance(n_steps, (int, np.integer)):
        raise TypeError(f"{steps_name} must be an int >= 1; got {type(n_steps).__name__}")
    if n_steps < 1:
        raise ValueError(f"{steps_name} must be >= 1; got {n_steps}")
    return t_max, int(n_steps)


def _check_broadcast(**arrays) -> None:
    """A ValueError naming the arguments when their shapes do not broadcast together."""
    try:
        np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        raise ValueError(f"{', '.join(arrays)} must have broadcastable shapes; got {shapes}") from None


def _rk4(f, y0: np.ndarray, t_max: float, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Classical fourth-order Runge-Kutta for dy/dτ = f(y) on [0, t_max]; ``y0`` of any shape
    (a state, or a state per column to integrate many starts at once)."""
    h = t_max / n_steps
    ys = np.empty((n_steps + 1, *np.shape(y0)))
    ys[0] = y = np.asarray(y0, dtype=float)
    for i in range(n_steps):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys[i + 1] = y
    return np.linspace(0.0, t_max, n_steps + 1), ys


# --------------------------------------------------------------------------- gated classifier
def gated_loss(beta0, beta1, p):
    """The blog's toy loss on the sequences {0,0} (negative) and {0,1} (positive).

    Scores: ``s0 = β0`` and ``s1 = (1 - p) β0 + p β1``. The blog writes ``L = s1 - s0`` but its
    algebra and gradient flow are those of ``L = s0 - s1 = p (β0 - β1)`` (push the negative score
    down and the positive one up), which is what this returns. Arguments are finite numbers or
    arrays of them (broadcast together).
    """
    b0, b1 = check_real_array("beta0", beta0), check_real_array("beta1", beta1)
    q = check_real_array("p", p)
    _check_broadcast(beta0=b0, beta1=b1, p=q)
    return _gated_loss(b0, b1, q)


def _gated_loss(beta0, beta1, p):
    return np.asarray(p) * (np.asarray(beta0) - np.asarray(beta1))


def gated_flow(beta0: float, beta1: float, p: float, t_max: float = 3.0, n_steps: int = 600):
    """Integrate the gradient flow of :func:`gated_loss` (blog, "Gradient")::

        dβ0/dτ = -∂L/∂β0 = -p,    dβ1/dτ = -∂L/∂β1 = p,    dp/dτ = -∂L/∂p = β1 - β0

    ``p`` is unconstrained here, as in the blog (it starts in (0, 1) and may leave it).
    Returns a dict of arrays ``tau, beta0, beta1, p, loss`` (length ``n_steps + 1``).
    """
    beta0, beta1, p = _check_finite("beta0", beta0), _check_finite("beta1", beta1), _check_p(p)
    t_max, n_steps = _check_time(t_max, n_steps)

    def f(y):
        b0, b1, q = y
        return np.array([-q, q, b1 - b0])

    tau, ys = _rk4(f, np.array([beta0, beta1, p]), t_max, n_steps)
    return {"tau": tau, "beta0": ys[:, 0], "beta1": ys[:, 1], "p": ys[:, 2],
            "loss": _gated_loss(ys[:, 0], ys[:, 1], ys[:, 2])}


def gated_flow_closed_form(beta0: float, beta1: float, p: float, tau):
    """Exact solution of :func:`gated_flow`'s ODE.

    With Δ = β1 - β0 the flow is Δ' = 2p, p' = Δ, so p'' = 2p and β0 + β1 is conserved::

        p(τ) = p0 cosh(√2 τ) + (Δ0 / √2) sinh(√2 τ)
        Δ(τ) = Δ0 cosh(√2 τ) + √2 p0 sinh(√2 τ)

    From the uniform start (Δ0 = 0, p0 = 1/2) p(τ) = cosh(√2 τ)/2: flat at first (p'(0) = 0),
    then exponential growth. From Δ0 < 0 (the bad start) p first falls.
    """
    beta0, beta1, p = _check_finite("beta0", beta0), _check_finite("beta1", beta1), _check_p(p)
    tau = check_real_array("tau", tau)
    r = math.sqrt(2.0)
    d0, s = beta1 - beta0, beta0 + beta1
    p_t = p * np.cosh(r * tau) + d0 / r * np.sinh(r * tau)
    d_t = d0 * np.cosh(r * tau) + r * p * np.sinh(r * tau)
    return {"tau": tau, "beta0": (s - d_t) / 2, "beta1": (s + d_t) / 2, "p": p_t,
            "loss": _gated_loss((s - d_t) / 2, (s + d_t) / 2, p_t)}


def gated_flow_critical_gap(p: float) -> float:
    """The initial gap β0 - β1 above which :func:`gated_flow` sends ``p`` to -∞: ``√2 · p``.

    In the closed form (:func:`gated_flow_closed_form`) with r = √2,
    ``p(τ) = A e^{rτ} + B e^{-rτ}`` with ``A = (p0 + Δ0/r)/2`` and ``B = (p0 - Δ0/r)/2``. So
    ``p → +∞`` if A > 0, ``p → 0`` if A = 0 and ``p → -∞`` if A < 0, that is if
    ``β0 - β1 = -Δ0 > √2 p0``. Past this gap the attention never turns around: A < 0 < B
    makes ``dp/dτ = r(A e^{rτ} - B e^{-rτ})`` negative for all τ, and ``dΔ/dτ = 2p`` is negative
    once ``p`` is. ``p`` is the initial attention, in (0, 1) as for :func:`gated_flow`.
    """
    return math.sqrt(2.0) * _check_p(p)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))


def _softplus(x):
    x = np.asarray(x, dtype=float)
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def gated_ce_loss(beta0, beta1, a):
    """The constrained toy (the blog's note): ``p = σ(a)`` (a softmax over two positions) and a
    cross-entropy loss ``softplus(s0) + softplus(-s1)`` ({0,0} negative, {0,1} positive).
    Arguments are finite numbers or arrays of them (broadcast together)."""
    b0, b1 = check_real_array("beta0", beta0), check_real_array("beta1", beta1)
    a = check_real_array("a", a)
    _check_broadcast(beta0=b0, beta1=b1, a=a)
    return _gated_ce_loss(b0, b1, a)


def _gated_ce_loss(beta0, beta1, a):
    p = _sigmoid(a)
    s0, s1 = np.asarray(beta0), (1 - p) * beta0 + p * np.asarray(beta1)
    return _softplus(s0) + _softplus(-s1)


def _ce_grad(y):
    b0, b1, a = y
    p = _sigmoid(a)
    s1 = (1 - p) * b0 + p * b1
    g_s0, g_s1 = _sigmoid(b0), -_sigmoid(-s1)  # ∂L/∂s0, ∂L/∂s1
    return np.array([g_s0 + g_s1 * (1 - p), g_s1 * p, g_s1 * (b1 - b0) * p * (1 - p)])


def gated_ce_flow(beta0: float, beta1: float, p: float, t_max: float = 20.0, n_steps: int = 2000):
    """Gradient flow of :func:`gated_ce_loss` in (β0, β1, a), started from attention ``p``::

        dβ0/dτ = -σ(s0) + σ(-s1)(1 - p),   dβ1/dτ = σ(-s1) p,   da/dτ = σ(-s1)(β1 - β0) p(1 - p)

    Returns ``tau, beta0, beta1, p, loss``.
    """
    beta0, beta1, p = _check_finite("beta0", beta0), _check_finite("beta1", beta1), _check_p(p)
    t_max, n_steps = _check_time(t_max, n_steps)
    tau, ys = _rk4(lambda y: -_ce_grad(y), np.array([beta0, beta1, math.log(p / (1 - p))]),
                   t_max, n_steps)
    return {"tau": tau, "beta0": ys[:, 0], "beta1": ys[:, 1], "p": _sigmoid(ys[:, 2]),
            "loss": _gated_ce_loss(ys[:, 0], ys[:, 1], ys[:, 2])}


def gated_ce_flow_end(gaps, p0: float = 0.5, t_max: float = 60.0,
                      n_steps: int = 3000) -> np.ndarray:
    """The attention p at τ = ``t_max`` of :func:`gated_ce_flow` started from β0 = gap/2,
    β1 = -gap/2 (backwards by ``gap``) and p = ``p0``, for every gap of the 1-D ``gaps`` at
    once: the same RK4 on the same vector field, run on all the gaps together."""
    g = check_real_array("gaps", gaps, ndim=1)
    p0 = check_real("p0", p0, 0.0, 1.0, low_open=True, high_open=True)
    t_max = check_real("t_max", t_max, 0.0, low_open=True)
    n_steps = check_int("n_steps", n_steps, 1)
    y0 = np.stack([g / 2, -g / 2, np.full_like(g, np.log(p0 / (1 - p0)))])
    _, ys = _rk4(lambda y: -_ce_grad(y), y0, t_max, n_steps)
    return _sigmoid(ys[-1, 2])


def gated_ce_descent(beta0: float, beta1: float, p: float, lr: float, steps: int):
    """Plain gradient descent on :func:`gated_ce_loss` with learning rate ``lr``.

    ``tau = lr * step`` puts it on the same time axis as :func:`gated_ce_flow`; as lr → 0 the
    iterates follow the flow. Returns ``tau, beta0, beta1, p, loss`` of length ``steps + 1``.
    """
    beta0, beta1, p = _check_finite("beta0", beta0), _check_finite("beta1", beta1), _check_p(p)
    lr = _check_finite("lr", lr)
    if lr <= 0:
        raise ValueError(f"lr must be > 0; got {lr}")
    _, steps = _check_time(1.0, steps, "steps")
    ys = np.empty((steps + 1, 3))
    ys[0] = y = np.array([beta0, beta1, math.log(p / (1 - p))])
    for i in range(steps):
        y = y - lr * _ce_grad(y)
        ys[i + 1] = y
    return {"tau": lr * np.arange(steps + 1), "beta0": ys[:, 0], "beta1": ys[:, 1],
            "p": _sigmoid(ys[:, 2]), "loss": _gated_ce_loss(ys[:, 0], ys[:, 1], ys[:, 2])}


# --------------------------------------------------------------------------- SEN (chapter 2)
def sen_curve(score, m: int):
    """LMN Corollary 1 (Eq. 10): the embedding norm a topic word has at score s::

        ‖v‖ = sqrt(2 (s + (e^s - 1) / m)),   with v = ‖q‖ ν

    ``m`` is the number of non-topic words per sentence (>= 1); defined for finite s >= 0.
    """
    m = _check_m(m)
    s = check_real_array("score", score)
    if np.any(s < 0):
        raise ValueError("score must be >= 0 (the SEN curve starts at the zero-score init)")
    return np.sqrt(2.0 * (s + np.expm1(s) / m))


def _check_m(m) -> int:
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"m must be an int >= 1; got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"m (non-topic words per sentence) must be >= 1; got {m}")
    return int(m)


# --------------------------------------------------------------------------- count table (ch. 3-4)
def count_table(sources, targets, n_in: int | None = None, n_out: int | None = None) -> np.ndarray:
    """SZKS §4.1 / A.2: the co-occurrence count table of a parallel corpus ::

        C_{i,o} = Σ_m Σ_l Σ_t (1 / L_m) 1[x^m_l = i] 1[y^m_t = o]

    ``sources`` and ``targets`` are equally long sequences of token-id sequences (or 2-D integer
    arrays, one row per pair). Returns an ``n_in × n_out`` float array (sizes default to the
    largest id + 1). At initialisation the bag-of-words proxy's logits move as
    dθ_{i,o}/dτ → 2 (C_{i,o} − mean_o' C_{i,o'}) when its width d → ∞.
    """
    pairs = _check_corpus(sources, targets)
    n_in, n_out = _corpus_sizes(pairs, n_in, n_out)
    C = np.zeros((n_in, n_out))
    # Each pair's word counts as a row of X (n_in wide) and of Y (n_out wide), a block of
    # pairs at a time: C = Σ_m X_m^T Y_m / L_m is one matrix product per block (the sum
    # over pairs in BLAS instead of one outer product per pair: ~100x faster on SZKS's
    # 20,000 pairs). Pairs of equal length L are counted in integers and divided by L once.
    block = max(1, 2 ** 22 // max(n_in, n_out))          # <= 32 MB per count matrix
    for start in range(0, len(pairs), block):
        chunk = pairs[start:start + block]
        X, lx = _count_rows([x for x, _ in chunk], n_in)
        Y, _ = _count_rows([y for _, y in chunk], n_out)
        if np.all(lx == lx[0]):
            C += (X.T @ Y) / lx[0]
        else:
            C += (X / lx[:, None]).T @ Y
    return C


def _count_rows(seqs, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Word counts of each sequence as the rows of an ``len(seqs) × n`` float array, and
    the sequences' lengths."""
    lengths = np.array([len(s) for s in seqs])
    rows = np.repeat(np.arange(len(seqs)), lengths)
    ids = rows * n + np.concatenate(seqs)
    counts = np.bincount(ids, minlength=len(seqs) * n).astype(np.float64)
    return counts.reshape(len(seqs), n), lengths


SEN_CURVES = ("eq10", "sqrt2s")
_GAP_REDUCTIONS = ("max", "min")


def sen_relative_gap(score, norm, m: int, min_norm: float = 0.1, *, curve: str = "eq10",
                     min_score: float | None = None, score_range=None,
                     reduce: str = "max") -> float:
    """The relative distance of an empirical (s_t, ‖v_t‖) trajectory from a SEN curve ::

        max |‖v‖ − c(s)| / c(s)      with c(s) = sqrt(2(s + (e^s − 1)/m))   (LMN Eq. 10)

    over the points with ``‖v‖ > min_norm`` (below it the relative gap is dominated by the random
    initial embedding, which Corollary 1 neglects). ``curve="sqrt2s"`` measures the gap to the
    naive c(s) = sqrt(2 s) instead (Eq. 10 without its e^s/m term); ``min_score`` keeps only the
    points with s >= min_score and ``score_range=(lo, hi)`` those with lo <= s <= hi (to compare
    trajectories on a common score window); ``reduce="min"`` returns the smallest gap instead of
    the largest. A kept point with a score <= 0 is off the curve altogether and gives ``inf``.
    Returns NaN when no point qualifies.
    """
    m = _check_m(m)
    s = check_real_array("score", score)
    v = check_real_array("norm", norm)
    if s.shape != v.shape:
        raise ValueError(f"score and norm must have the same shape; got {s.shape} and {v.shape}")
    min_norm = _check_finite("min_norm", min_norm)
    if curve not in SEN_CURVES:
        raise ValueError(f"curve must be one of {SEN_CURVES}; got {curve!r}")
    if reduce not in _GAP_REDUCTIONS:
        raise ValueError(f"reduce must be one of {_GAP_REDUCTIONS}; got {reduce!r}")
    keep = v > min_norm
    if min_score is not None:
        keep &= s >= _check_finite("min_score", min_score)
    if score_range is not None:
        if isinstance(score_range, (str, bytes)) or not (
                isinstance(score_range, (tuple, list)) and len(score_range) == 2):
            raise TypeError(f"score_range must be a pair (lo, hi) of numbers; got {score_range!r}")
        lo = _check_finite("score_range[0]", score_range[0])
        hi = _check_finite("score_range[1]", score_range[1])
        if not lo < hi:
            raise ValueError(f"score_range must have lo < hi; got {score_range!r}")
        keep &= (s >= lo) & (s <= hi)
    if not keep.any():
        return float("nan")
    if np.any(s[keep] <= 0):
        return float("inf")
    c = sen_curve(s[keep], m) if curve == "eq10" else np.sqrt(2.0 * s[keep])
    gap = np.abs(v[keep] - c) / c
    return float(gap.max() if reduce == "max" else gap.min())


def sen_theorem1(score, norm, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Both sides of LMN Theorem 1 (Eq. 9) along a trajectory, from its first point τ₀, with
    the non-topic terms dropped (⟨1/Z(χ∖t)⟩ = 1/m, ⟨v̄(χ∖t)⟩ ≈ 0: Assumption 1) ::

        lhs = [s + e^s / m]_{τ₀}^{τ} = s − s₀ + (e^s − e^{s₀}) / m
        rhs = [½ ‖v‖²]_{τ₀}^{τ}      = ½ (‖v‖² − ‖v₀‖²)

    ``score`` and ``norm`` are 1-D trajectories (``[0]`` is τ₀). Unlike Corollary 1 (Eq. 10)
    this needs neither s₀ = 0 nor ‖v₀‖ ≈ 0: it is the statement to check when the embeddings
    start large (the ablation of LMN §5.1). Returns ``(lhs, rhs)``, arrays of the input's shape.
    """
    m = _check_m(m)
    s = check_real_array("score", score)
    v = check_real_array("norm", norm)
    if s.ndim != 1 or s.shape != v.shape or s.size < 1:
        raise ValueError(f"score and norm must be 1-D trajectories of the same length; got "
                         f"shapes {s.shape} and {v.shape}")
    lhs = s - s[0] + (np.exp(s) - np.exp(s[0])) / m
    rhs = 0.5 * (v ** 2 - v[0] ** 2)
    return lhs, rhs


# --------------------------------------------------------------------------- IBM Model 1 (ch. 3)
def _corpus_sizes(pairs, n_in, n_out) -> tuple[int, int]:
    """Vocabulary sizes for a checked corpus: the given ones, or the largest ids + 1."""
    hi_in = max(int(x.max()) for x, _ in pairs) + 1
    hi_out = max(int(y.max()) for _, y in pairs) + 1
    n_in = hi_in if n_in is None else check_int("n_in", n_in)
    n_out = hi_out if n_out is None else check_int("n_out", n_out)
    if n_in < hi_in or n_out < hi_out:
        raise ValueError(f"n_in/n_out ({n_in}, {n_out}) smaller than the ids used ({hi_in}, {hi_out})")
    return n_in, n_out


def _check_corpus(sources, targets):
    """Validate a parallel corpus; return a list of (x, y) int64 arrays."""
    if isinstance(sources, (str, bytes)) or isinstance(targets, (str, bytes)):
        raise TypeError("sources and targets must be sequences of token-id sequences, not strings")
    for name, side in (("sources", sources), ("targets", targets)):
        if not isinstance(side, (list, tuple, np.ndarray, torch.Tensor)):
            raise TypeError(f"{name} must be a sequence of token-id sequences (or a 2-D integer "
                            f"array); got {type(side).__name__}")
    if isinstance(sources, torch.Tensor):
        sources = sources.detach().cpu().numpy()
    if isinstance(targets, torch.Tensor):
        targets = targets.detach().cpu().numpy()
    if len(sources) == 0:
        raise ValueError("sources is empty: the corpus needs at least one sentence pair")
    if len(sources) != len(targets):
        raise ValueError(f"sources and targets must pair up; got {len(sources)} sources and "
                         f"{len(targets)} targets")
    # a 2-D array is checked in one go (ids are ints >= 0: floats such as 1.7 are not truncated)
    whole = [isinstance(side, np.ndarray) and side.ndim == 2 and side.size > 0
             for side in (sources, targets)]
    if whole[0]:
        sources = check_int_array("sources", sources, 0)
    if whole[1]:
        targets = check_int_array("targets", targets, 0)
    pairs = []
    for m, (x, y) in enumerate(zip(sources, targets)):
        x = x if whole[0] else check_int_array(f"sources[{m}]", x, 0, ndim=1, allow_empty=True)
        y = y if whole[1] else check_int_array(f"targets[{m}]", y, 0, ndim=1, allow_empty=True)
        if len(x) == 0 or len(y) == 0:
            raise ValueError(f"sentence pair {m} has an empty side")
        pairs.append((x, y))
    return pairs


def ibm1_translation(C) -> np.ndarray:
    """SZKS §4.2, Eq. 14: the one-step IBM Model 1 estimate from the count table ::

        Trans(o | i) = C_{i,o} / Σ_{o'} C_{i,o'}

    ``C`` is :func:`count_table`'s ``|I| × |O|`` array (rows: input words). A row of zeros (an
    input word the corpus never uses) gets the uniform distribution 1/|O|. This is exactly the
    first EM iteration of IBM Model 1 from a uniform start (see :func:`ibm1_em`): with uniform
    translation probabilities the E-step's alignment posterior is 1/L_m, the uniform attention.
    """
    C = check_real_array("C (the count table)", C, finite=False)
    if C.ndim != 2 or min(C.shape) < 1:
        raise ValueError(f"C must be a non-empty 2-D count table; got shape {C.shape}")
    if np.any(C < 0) or not np.all(np.isfinite(C)):
        raise ValueError("C must hold finite counts >= 0")
    rows = C.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        T = np.where(rows > 0, C / np.where(rows > 0, rows, 1.0), 1.0 / C.shape[1])
    return T


def ibm1_probe(trans, source, target) -> tuple[np.ndarray, np.ndarray]:
    """β^IBM and α^IBM for one sentence pair (SZKS §4.2, Eq. 15-16) ::

        β^IBM_{t,l} = Trans(y_t | x_l),      α^IBM(t, l) = β^IBM_{t,l} / Σ_{l'} β^IBM_{t,l'}

    ``trans``: an ``|I| × |O|`` table (:func:`ibm1_translation` or :func:`ibm1_em`);
    ``source`` (L,) and ``target`` (T,) token ids. Returns ``(beta, alpha)``, each (T, L).
    α^IBM is also the E-step's alignment posterior of IBM Model 1 for this pair.
    """
    trans = check_real_array("trans", trans)
    x = check_int_array("source", source, None, ndim=1, allow_empty=True)
    y = check_int_array("target", target, None, ndim=1, allow_empty=True)
    if trans.ndim != 2:
        raise ValueError(f"trans must be a 2-D |I| x |O| table; got shape {trans.shape}")
    if len(x) == 0 or len(y) == 0:
        raise ValueError("source and target must each hold at least one token")
    if x.min() < 0 or x.max() >= trans.shape[0] or y.min() < 0 or y.max() >= trans.shape[1]:
        raise ValueError(f"token ids out of range for a {trans.shape[0]} x {trans.shape[1]} table")
    beta, alpha = _ibm1_beta_alpha(trans, x[None], y[None])
    return beta[0], alpha[0]


def _ibm1_beta_alpha(trans: np.ndarray, x: np.ndarray, y: np.ndarray):
    """β^IBM and α^IBM (M, T, L) of checked (M, L) source and (M, T) target ids; an all-zero
    row of β gives a uniform α."""
    beta = trans[x[:, None, :], y[:, :, None]]                # (M, T, L): Trans(y_t | x_l)
    z = beta.sum(2, keepdims=True)
    alpha = np.where(z > 0, beta / np.where(z > 0, z, 1.0), 1.0 / x.shape[1])
    return beta, alpha


def ibm1_em(sources, targets, n_in: int | None = None, n_out: int | None = None,
            iterations: int = 10, null: bool = False, init=None) -> dict:
    """IBM Model 1 trained by expectation-maximisation (Brown et al. 1993, §4.1, Eq. 17-20).

    The model: an output word y_t is generated by first choosing a source position a_t uniformly
    (probability 1/L, or 1/(L+1) with the NULL word) and then translating ``t(y_t | x_{a_t})``.
    EM alternates (one *iteration* = one E-step + one M-step):

    - **E-step** (Brown et al. Eq. 18-19): for every pair m and output position t, the alignment
      posterior ``P(a_t = l | x, y) = t(y_t | x_l) / Σ_{l'} t(y_t | x_{l'})`` -- α^IBM of SZKS
      Eq. 16 -- and the expected counts ``c(i, o) = Σ_j Σ_t Σ_l P(a_t = l) 1[x_l = i] 1[y_t = o]``;
    - **M-step** (Eq. 20): ``t(o | i) = c(i, o) / Σ_{o'} c(i, o')``.

    From the uniform start ``t(o | i) = 1/|O|`` the first E-step's posterior is 1/L_m, its counts
    are exactly the count table C of SZKS Eq. 13 (:func:`count_table`) and the first M-step gives
    the one-step estimate of SZKS Eq. 14 (:func:`ibm1_translation`). Later iterations sharpen
    it: a word that co-occurs with everything is explained away by the words that translate it.

    ``null=True`` adds Brown et al.'s empty word NULL at source position 0 of every sentence (id
    ``n_in``, the last row of the table), which absorbs output words no source word translates.
    ``init`` (optional) is a starting ``(n_in [+1]) × n_out`` table instead of the uniform one.

    Returns ``{"trans": (n_in [+1], n_out), "history": [table after each iteration],
    "log_likelihood": (iterations + 1,)}``: the corpus log-likelihood
    ``Σ_m Σ_t log((1/L') Σ_l t(y_t | x_l))`` before each iteration and after the last (EM never
    decreases it).
    """
    pairs = _check_corpus(sources, targets)
    null = check_bool("null", null)
    if isinstance(iterations, (bool, np.bool_)) or not isinstance(iterations, (int, np.integer)):
        raise TypeError(f"iterations must be an int >= 1; got {type(iterations).__name__}")
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1; got {iterations}")
    n_in, n_out = _corpus_sizes(pairs, n_in, n_out)
    rows = n_in + 1 if null else n_in
    if null:
        pairs = [(np.concatenate([[n_in], x]), y) for x, y in pairs]
    if init is None:
        trans = np.full((rows, n_out), 1.0 / n_out)
    else:
        trans = check_real_array("init", init).copy()
        if trans.shape != (rows, n_out):
            raise ValueError(f"init must have shape {(rows, n_out)}; got {trans.shape}")
        if np.any(trans < 0) or not np.all(np.isfinite(trans)):
            raise ValueError("init must hold finite probabilities >= 0")
    # pad the corpus into arrays once: (M, Lmax) sources and (M, Tmax) targets with masks
    M = len(pairs)
    Lmax = max(len(x) for x, _ in pairs)
    Tmax = max(len(y) for _, y in pairs)
    X = np.zeros((M, Lmax), dtype=np.int64)
    Y = np.zeros((M, Tmax), dtype=np.int64)
    xm = np.zeros((M, Lmax), dtype=bool)
    ym = np.zeros((M, Tmax), dtype=bool)
    for m, (x, y) in enumerate(pairs):
        X[m, :len(x)], xm[m, :len(x)] = x, True
        Y[m, :len(y)], ym[m, :len(y)] = y, True
    lengths = xm.sum(1)

    def loglik(tr):
        lik = tr[X[:, None, :], Y[:, :, None]] * xm[:, None, :]            # (M, T, L)
        per = np.log(np.maximum(lik.sum(2), 1e-300) / lengths[:, None])
        return float((per * ym).sum())

    history, ll = [], [loglik(trans)]
    for _ in range(iterations):
        lik = trans[X[:, None, :], Y[:, :, None]] * xm[:, None, :]         # t(y_t | x_l): (M, T, L)
        z = lik.sum(2, keepdims=True)
        post = np.where(z > 0, lik / np.where(z > 0, z, 1.0), xm[:, None, :] / lengths[:, None, None])
        post = post * ym[:, :, None]                                       # E-step
        counts = np.zeros((rows, n_out))
        np.add.at(counts, (np.broadcast_to(X[:, None, :], post.shape),
                           np.broadcast_to(Y[:, :, None], post.shape)), post)
        trans = ibm1_translation(counts)                                   # M-step
        history.append(trans)
        ll.append(loglik(trans))
    return {"trans": trans, "history": history, "log_likelihood": np.array(ll)}


def dictionary_recovery(trans, dictionary) -> float:
    """The fraction of input words i whose most probable translation ``argmax_o Trans(o | i)``
    is the true one ``dictionary[i]`` (a hidden word-to-word dictionary, e.g.
    :attr:`~attn_core.data.ParallelCorpusTask.dictionary`). Rows beyond ``len(dictionary)``
    (the NULL word) are ignored."""
    trans = check_real_array("trans", trans)
    d = check_int_array("dictionary", dictionary, 0, ndim=1, allow_empty=True)
    if trans.ndim != 2 or trans.shape[0] < len(d) or len(d) == 0:
        raise ValueError(f"trans ({trans.shape}) must have at least one row per dictionary entry "
                         f"({len(d)}), and the dictionary must not be empty")
    if d.max() >= trans.shape[1]:
        raise ValueError(f"dictionary must hold output word ids in [0, {trans.shape[1] - 1}] "
                         f"(trans has {trans.shape[1]} columns); got {d.max()}")
    return float(np.mean(trans[: len(d)].argmax(1) == d))


def ibm1_maps(trans, sources, targets) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ibm1_probe` for a whole corpus of equal-length pairs at once: β^IBM and α^IBM
    (SZKS Eq. 15-16), each (M, T, L), for ``sources`` (M, L) and ``targets`` (M, T) token-id
    arrays (or tensors) and an ``|I| × |O|`` table ``trans``. Entry ``[m]`` equals
    ``ibm1_probe(trans, sources[m], targets[m])``."""
    trans = check_real_array("trans", trans)
    if trans.ndim != 2:
        raise ValueError(f"trans must be a 2-D |I| x |O| table; got shape {trans.shape}")
    n_in, n_out = trans.shape
    x = check_int_array("sources", sources, 0, n_in - 1)
    y = check_int_array("targets", targets, 0, n_out - 1)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or x.size == 0 or y.size == 0:
        raise ValueError(f"sources and targets must be non-empty (M, L) and (M, T) arrays that "
                         f"pair up; got shapes {x.shape} and {y.shape}")
    return _ibm1_beta_alpha(trans, x, y)


def proxy_init_velocity(sources, targets, n_in: int, n_out: int, dims, seeds=(0, 1, 2)):
    """SZKS §4.1 / A.2 measured by autograd: the velocity dθ/dτ = d(W e)/dτ of the factorised
    bag-of-words proxy (:class:`~attn_core.models.BagOfWordsProxy` with ``dim=d``, W and e drawn
    from N(0, I/d)) at initialisation, under gradient flow on the *summed* loss
    L = −Σ_m Σ_t log p^m_{y_t} over the whole corpus ::

        dθ_{i,o}/dτ = ė_i · W_o + e_i · Ẇ_o,    ė = −∂L/∂e,  Ẇ = −∂L/∂W

    For every width in ``dims`` and seed in ``seeds`` returns an array (len(dims), len(seeds),
    n_in, n_out). As d → ∞ it converges in probability to 2 (C − mean_o C) with C the
    :func:`~attn_core.theory.count_table`.
    """
    from .models import BagOfWordsProxy

    n_in, n_out = check_int("n_in", n_in), check_int("n_out", n_out, 2)
    src = check_int_array("sources", sources, 0, n_in - 1, allow_empty=True)
    tgt = check_int_array("targets", targets, 0, n_out - 1, allow_empty=True)
    if src.ndim != 2 or tgt.ndim != 2 or src.shape[0] != tgt.shape[0] or src.size == 0 \
            or tgt.size == 0:
        raise ValueError("sources and targets must be non-empty (M, L) and (M, T) arrays that pair "
                         f"up; got shapes {src.shape} and {tgt.shape}")
    src, tgt = torch.from_numpy(src), torch.from_numpy(tgt)
    if isinstance(dims, (int, np.integer)):
        raise TypeError(f"dims must be a sequence of widths (ints >= 1); got the int {dims!r}")
    dims = check_int_array("dims", dims, 1, ndim=1).tolist()
    seeds = check_seeds("seeds", seeds)
    out = np.empty((len(dims), len(seeds), n_in, n_out))
    # the proxy's logits, (1/L) Σ_l θ_{x_l}, as (bag of words / L) @ θ, and the summed loss as
    # Σ_m Σ_o (count of o in y^m) log p^m_o: the model's forward and loss, without the
    # (M, L, |O|) gather (30x faster on chapter 3's full corpus)
    def word_counts(ids, n):                      # (M, n): how often each word is in a row
        rows = torch.arange(len(ids)).unsqueeze(1).expand_as(ids)
        return torch.zeros(len(ids), n, dtype=torch.float64).index_put_(
            (rows, ids), torch.tensor(1.0, dtype=torch.float64), accumulate=True)

    bag, counts = word_counts(src, n_in) / src.shape[1], word_counts(tgt, n_out)
    for a, d in enumerate(dims):
        for b, s in enumerate(seeds):
            model = BagOfWordsProxy(n_in, n_out, dim=d, seeds=[s]).double()
            logp = torch.log_softmax(bag @ model.theta()[0], -1)           # (M, O)
            loss = -(counts * logp).sum()
            g_e, g_w = torch.autograd.grad(loss, [model.e, model.W])
            with torch.no_grad():
                vel = -(g_e[0] @ model.W[0].T + model.e[0] @ g_w[0].T)
            out[a, b] = vel.numpy()
    return out


def softmax_velocity(logits, logit_velocity) -> np.ndarray:
    """The velocity of the probabilities p = softmax(θ) (last axis) when the logits θ move at
    θ̇: the chain rule through the softmax Jacobian, diag(p) − p pᵀ ::

        ṗ_o = p_o (θ̇_o − Σ_{o'} p_{o'} θ̇_{o'})

    At the proxy's initialisation (p ≈ 1/|O|) this turns SZKS A.2's logit velocity
    2 (C − mean_o C) into (2/|O|) (C − mean_o C), the velocity of SZKS Eq. 11's θ^px, which is
    a probability. ``logits`` and ``logit_velocity``: real arrays of the same shape (..., |O|).
    """
    th = check_real_array("logits", logits)
    v = check_real_array("logit_velocity", logit_velocity)
    if th.shape != v.shape or th.ndim < 1 or th.shape[-1] < 1:
        raise ValueError(f"logits and logit_velocity must have the same shape (..., |O|), "
                         f"|O| >= 1; got {th.shape} and {v.shape}")
    p = np.exp(th - th.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p * (v - (p * v).sum(-1, keepdims=True))


# --------------------------------------------------------------------------- optimal attention (A.1)
def _project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (Duchi et al. 2008, Fig. 1)."""
    return _project_simplex_rows(v[None])[0]


def attention_loss(alpha, gammas, target: int, gamma_s=None) -> float:
    """SZKS A.1, Eq. 23-25: the loss ``-log softmax(Σ_l α_l γ_l + γ_s)_target`` of an output layer
    that sees the attention-weighted logits ``γ_l = W_c h_l`` (rows of ``gammas``, L × |O|);
    ``alpha`` (L,) is the attention and ``gamma_s`` (|O|,) an optional offset."""
    g = _check_gammas(gammas)
    a = check_real_array("alpha", alpha, ndim=1)
    if a.shape != (g.shape[0],):
        raise ValueError(f"alpha must have one weight per row of gammas ({g.shape[0]}); got "
                         f"shape {a.shape}")
    target = _check_target(target, g.shape[1])
    z = a @ g + _check_gamma_s(gamma_s, g.shape[1])
    zmax = z.max()
    return float(zmax + np.log(np.exp(z - zmax).sum()) - z[target])


def _check_gammas(gammas) -> np.ndarray:
    g = check_real_array("gammas", gammas, finite=False)
    if g.ndim != 2 or g.shape[0] < 1 or g.shape[1] < 2:
        raise ValueError(f"gammas must be an L x |O| array with |O| >= 2; got shape {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("gammas must be finite")
    return g


def _check_target(target, n_out: int) -> int:
    if isinstance(target, (bool, np.bool_)) or not isinstance(target, (int, np.integer)) \
            or not 0 <= target < n_out:
        raise ValueError(f"target must be an output index in [0, {n_out - 1}]; got {target!r}")
    return int(target)


def _check_gamma_s(gamma_s, n_out: int) -> np.ndarray:
    if gamma_s is None:
        return np.zeros(n_out)
    gs = check_real_array("gamma_s", gamma_s)
    if gs.shape != (n_out,):
        raise ValueError(f"gamma_s must have one entry per output (|O| = {n_out},); got shape "
                         f"{gs.shape}")
    return gs


def _project_simplex_rows(v: np.ndarray) -> np.ndarray:
    """:func:`_project_simplex` of every row of ``v`` (N, L) at once (Duchi et al. 2008,
    Fig. 1: sort, find the last index ρ where the sorted value exceeds its threshold)."""
    u = -np.sort(-v, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    k = np.arange(1, v.shape[1] + 1)
    positive = u - css / k > 0                             # True on a prefix of each row
    rho = v.shape[1] - 1 - np.argmax(positive[:, ::-1], axis=1)   # its last True
    theta = css[np.arange(len(v)), rho] / (rho + 1)
    return np.maximum(v - theta[:, None], 0.0)


def optimal_attentions(gammas, targets, lr: float = 0.5, steps: int = 5000,
                       tol: float = 1e-12) -> np.ndarray:
    """:func:`optimal_attention` (``method="projected"``) for many output words at once:
    ``gammas`` (N, L, |O|), ``targets`` (N,) -> the optimal attentions (N, L). Every row
    runs the same iteration as the one-word function and stops on its own when an update
    moves it by less than ``tol``; the loss trajectories are not kept.

    One difference, for flat rows only: a row takes the step ``max(lr, 1/Σ_l ‖γ_l‖²)``. The
    loss's curvature along α is at most Σ_l ‖γ_l‖² (its Hessian is Γ (diag(p) − p pᵀ) Γᵀ), so
    that step is still safe; where it exceeds ``lr`` the logits are nearly flat (a barely
    trained model: chapter 3's full-size proxy after a smoke run's one step, ‖γ‖ ~ 1e-3),
    and at ``lr`` such a row would need thousands of steps. Every other row runs exactly
    :func:`optimal_attention`'s iteration."""
    g = check_real_array("gammas", gammas)
    if g.ndim != 3 or g.shape[1] < 1 or g.shape[2] < 2:
        raise ValueError(f"gammas must be an N x L x |O| array with |O| >= 2; got shape "
                         f"{g.shape}")
    t = np.asarray(targets)
    if t.dtype == bool or not np.issubdtype(t.dtype, np.integer) or t.shape != (len(g),):
        raise ValueError(f"targets must be {len(g)} integer output indices (one per row of "
                         f"gammas); got {t.dtype} of shape {t.shape}")
    if len(t) and (t.min() < 0 or t.max() >= g.shape[2]):
        raise ValueError(f"targets must be output indices in [0, {g.shape[2] - 1}]; got "
                         f"values in [{t.min()}, {t.max()}]")
    lr = _check_finite("lr", lr)
    if lr <= 0:
        raise ValueError(f"lr must be > 0; got {lr}")
    _, steps = _check_time(1.0, steps, "steps")
    steps = _smoke_cap(steps)
    tol = check_real("tol", tol, 0.0)
    n, L, _ = g.shape
    alpha = np.full((n, L), 1.0 / L)
    with np.errstate(divide="ignore"):
        step = np.maximum(lr, 1.0 / np.einsum("nlo,nlo->n", g, g))[:, None]   # (N, 1)
    active = np.arange(n)
    for _ in range(steps):
        if not active.size:
            break
        ga, a = g[active], alpha[active]
        z = np.einsum("nl,nlo->no", a, ga)
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(active)), t[active]] -= 1.0
        new = _project_simplex_rows(a - step[active] * np.einsum("nlo,no->nl", ga, p))
        moved = np.abs(new - a).max(1)
        alpha[active] = new
        active = active[moved >= tol]
    return alpha


def optimal_attention(gammas, target: int = 0, gamma_s=None, method: str = "projected",
                      lr: float | None = None, steps: int = 5000, tol: float = 1e-12) -> dict:
    """The attention α on the simplex that minimises :func:`attention_loss` (SZKS A.1).

    The loss ``L(α) = log Σ_o exp(z_o) - z_target``, ``z = Σ_l α_l γ_l + γ_s``, is convex in α
    (log-sum-exp of an affine map), so gradient descent on the simplex finds the global optimum.
    Its gradient is ``∂L/∂α_l = γ_l · (softmax(z) - e_target)``.

    ``method="projected"``: α ← Π_Δ(α - lr ∇L) with the Euclidean projection Π_Δ onto the simplex
    (reaches faces exactly); ``"exponentiated"``: α ← α ⊙ exp(-lr ∇L) / Z (mirror descent,
    approaches faces geometrically). ``lr`` defaults to 0.5 (projected) or 0.05 (exponentiated:
    steps much above 2 / curvature oscillate, and on the A.1 example the curvature along
    α_2 - α_3 is ≈ 30). Starts from uniform attention; stops when an update moves
    α by less than ``tol`` (max-norm). Also returns the lexical probe
    ``β_l = softmax(γ_l + γ_s)_target`` (A.1 Eq. 24) so the two can be compared.

    The paper's counter-example: γ_1 = [0, 0, 0], γ_2 = [0, -10, 5], γ_3 = [0, 5, -10], target 0:
    β_1 = 1/3 is by far the largest, yet α_opt = (0, ½, ½).
    """
    g = _check_gammas(gammas)
    target = _check_target(target, g.shape[1])
    if method not in ("projected", "exponentiated"):
        raise ValueError(f"method must be 'projected' or 'exponentiated'; got {method!r}")
    if lr is None:
        lr = 0.5 if method == "projected" else 0.05
    lr = _check_finite("lr", lr)
    if lr <= 0:
        raise ValueError(f"lr must be > 0; got {lr}")
    _, steps = _check_time(1.0, steps, "steps")
    tol = check_real("tol", tol, 0.0)
    gs = _check_gamma_s(gamma_s, g.shape[1])
    L = g.shape[0]
    alpha = np.full(L, 1.0 / L)
    losses = [attention_loss(alpha, g, target, gs)]
    for _ in range(steps):
        z = alpha @ g + gs
        p = np.exp(z - z.max())
        p /= p.sum()
        p[target] -= 1.0
        grad = g @ p
        if method == "projected":
            new = _project_simplex(alpha - lr * grad)
        else:
            w = alpha * np.exp(-lr * (grad - grad.min()))
            new = w / w.sum()
        moved = np.abs(new - alpha).max()
        alpha = new
        losses.append(attention_loss(alpha, g, target, gs))
        if moved < tol:
            break
    logits = g + gs
    beta = np.exp(logits - logits.max(1, keepdims=True))
    beta = beta[:, target] / beta.sum(1)
    return {"alpha": alpha, "loss": np.array(losses), "beta": beta}
