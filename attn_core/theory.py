"""Closed-form and ODE results the chapters check training against.

- The toy gated classifier of Snell et al. (blog "Approximating How Single Head Attention
  Learns"; SZKS §2.4): its gradient flow, the flow's closed form, the sigmoid-constrained
  cross-entropy version and plain gradient descent.
- The score / embedding-norm (SEN) relation of Lu, Mao & Nayak (2021), Corollary 1 / Eq. 10.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "gated_loss",
    "gated_flow",
    "gated_flow_closed_form",
    "gated_ce_loss",
    "gated_ce_flow",
    "gated_ce_descent",
    "sen_curve",
    "sen_relative_gap",
    "theorem1_sides",
    "count_table",
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


def _check_time(t_max, n_steps) -> tuple[float, int]:
    t_max = _check_finite("t_max", t_max)
    if t_max <= 0:
        raise ValueError(f"t_max must be > 0; got {t_max}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)):
        raise TypeError(f"n_steps must be an int >= 1; got {type(n_steps).__name__}")
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1; got {n_steps}")
    return t_max, int(n_steps)


def _rk4(f, y0: np.ndarray, t_max: float, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Classical fourth-order Runge-Kutta for dy/dτ = f(y) on [0, t_max]."""
    h = t_max / n_steps
    ys = np.empty((n_steps + 1, len(y0)))
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
    down and the positive one up), which is what this returns.
    """
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
            "loss": gated_loss(ys[:, 0], ys[:, 1], ys[:, 2])}


def gated_flow_closed_form(beta0: float, beta1: float, p: float, tau):
    """Exact solution of :func:`gated_flow`'s ODE.

    With Δ = β1 - β0 the flow is Δ' = 2p, p' = Δ, so p'' = 2p and β0 + β1 is conserved::

        p(τ) = p0 cosh(√2 τ) + (Δ0 / √2) sinh(√2 τ)
        Δ(τ) = Δ0 cosh(√2 τ) + √2 p0 sinh(√2 τ)

    From the uniform start (Δ0 = 0, p0 = 1/2) p(τ) = cosh(√2 τ)/2: flat at first (p'(0) = 0),
    then exponential growth. From Δ0 < 0 (the bad start) p first falls.
    """
    beta0, beta1, p = _check_finite("beta0", beta0), _check_finite("beta1", beta1), _check_p(p)
    tau = np.asarray(tau, dtype=float)
    r = math.sqrt(2.0)
    d0, s = beta1 - beta0, beta0 + beta1
    p_t = p * np.cosh(r * tau) + d0 / r * np.sinh(r * tau)
    d_t = d0 * np.cosh(r * tau) + r * p * np.sinh(r * tau)
    return {"tau": tau, "beta0": (s - d_t) / 2, "beta1": (s + d_t) / 2, "p": p_t,
            "loss": gated_loss((s - d_t) / 2, (s + d_t) / 2, p_t)}


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=float)))


def _softplus(x):
    x = np.asarray(x, dtype=float)
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def gated_ce_loss(beta0, beta1, a):
    """The constrained toy (the blog's note): ``p = σ(a)`` (a softmax over two positions) and a
    cross-entropy loss ``softplus(s0) + softplus(-s1)`` ({0,0} negative, {0,1} positive)."""
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
            "loss": gated_ce_loss(ys[:, 0], ys[:, 1], ys[:, 2])}


def gated_ce_descent(beta0: float, beta1: float, p: float, lr: float, steps: int):
    """Plain gradient descent on :func:`gated_ce_loss` with learning rate ``lr``.

    ``tau = lr * step`` puts it on the same time axis as :func:`gated_ce_flow`; as lr → 0 the
    iterates follow the flow. Returns ``tau, beta0, beta1, p, loss`` of length ``steps + 1``.
    """
    beta0, beta1, p = _check_finite("beta0", beta0), _check_finite("beta1", beta1), _check_p(p)
    lr = _check_finite("lr", lr)
    if lr <= 0:
        raise ValueError(f"lr must be > 0; got {lr}")
    _, steps = _check_time(1.0, steps)
    ys = np.empty((steps + 1, 3))
    ys[0] = y = np.array([beta0, beta1, math.log(p / (1 - p))])
    for i in range(steps):
        y = y - lr * _ce_grad(y)
        ys[i + 1] = y
    return {"tau": lr * np.arange(steps + 1), "beta0": ys[:, 0], "beta1": ys[:, 1],
            "p": _sigmoid(ys[:, 2]), "loss": gated_ce_loss(ys[:, 0], ys[:, 1], ys[:, 2])}


# --------------------------------------------------------------------------- SEN (chapter 2)
def sen_curve(score, m: int):
    """LMN Corollary 1 (Eq. 10): the embedding norm a topic word has at score s::

        ‖v‖ = sqrt(2 (s + (e^s - 1) / m)),   with v = ‖q‖ ν

    ``m`` is the number of non-topic words per sentence (>= 1); defined for s >= 0.
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"m must be an int >= 1; got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"m (non-topic words per sentence) must be >= 1; got {m}")
    s = np.asarray(score, dtype=float)
    if np.any(s < 0):
        raise ValueError("score must be >= 0 (the SEN curve starts at the zero-score init)")
    return np.sqrt(2.0 * (s + np.expm1(s) / m))


# --------------------------------------------------------------------------- count table (ch. 3-4)
def count_table(sources, targets, n_in: int | None = None, n_out: int | None = None) -> np.ndarray:
    """SZKS §4.1 / A.2: the co-occurrence count table of a parallel corpus ::

        C_{i,o} = Σ_m Σ_l Σ_t (1 / L_m) 1[x^m_l = i] 1[y^m_t = o]

    ``sources`` and ``targets`` are equally long sequences of token-id sequences (or 2-D integer
    arrays, one row per pair). Returns an ``n_in × n_out`` float array (sizes default to the
    largest id + 1). At initialisation the bag-of-words proxy's logits move as
    dθ_{i,o}/dτ → 2 (C_{i,o} − mean_o' C_{i,o'}) when its width d → ∞.
    """
    if isinstance(sources, np.ndarray) or hasattr(sources, "numpy"):
        sources = np.asarray(sources)
    if isinstance(targets, np.ndarray) or hasattr(targets, "numpy"):
        targets = np.asarray(targets)
    if len(sources) == 0:
        raise ValueError("sources is empty: the corpus needs at least one sentence pair")
    if len(sources) != len(targets):
        raise ValueError(f"sources and targets must pair up; got {len(sources)} sources and "
                         f"{len(targets)} targets")
    pairs = [(np.asarray(x, dtype=np.int64).ravel(), np.asarray(y, dtype=np.int64).ravel())
             for x, y in zip(sources, targets)]
    for m, (x, y) in enumerate(pairs):
        if len(x) == 0 or len(y) == 0:
            raise ValueError(f"sentence pair {m} has an empty side")
        if x.min() < 0 or y.min() < 0:
            raise ValueError(f"token ids must be >= 0 (pair {m})")
    hi_in = max(int(x.max()) for x, _ in pairs) + 1
    hi_out = max(int(y.max()) for _, y in pairs) + 1
    n_in = hi_in if n_in is None else n_in
    n_out = hi_out if n_out is None else n_out
    if n_in < hi_in or n_out < hi_out:
        raise ValueError(f"n_in/n_out ({n_in}, {n_out}) smaller than the ids used ({hi_in}, {hi_out})")
    C = np.zeros((n_in, n_out))
    for x, y in pairs:
        C += np.outer(np.bincount(x, minlength=n_in), np.bincount(y, minlength=n_out)) / len(x)
    return C


def sen_relative_gap(score, norm, m: int, min_norm: float = 0.1) -> float:
    """The largest relative distance of an empirical (s_t, ‖v_t‖) trajectory from LMN Eq. 10,
    ``max |‖v‖ − sqrt(2(s + (e^s − 1)/m))| / sqrt(2(s + (e^s − 1)/m))`` over the points with
    ``‖v‖ > min_norm`` (below it the relative gap is dominated by the random initial embedding,
    which Corollary 1 neglects). A point with ‖v‖ > min_norm but a negative score is off the
    curve altogether and gives ``inf``. Returns NaN when no point qualifies.
    """
    s = np.asarray(score, dtype=float)
    v = np.asarray(norm, dtype=float)
    if s.shape != v.shape:
        raise ValueError(f"score and norm must have the same shape; got {s.shape} and {v.shape}")
    min_norm = _check_finite("min_norm", min_norm)
    keep = v > min_norm
    if not keep.any():
        return float("nan")
    if np.any(s[keep] <= 0):
        return float("inf")
    curve = sen_curve(s[keep], m)
    return float(np.max(np.abs(v[keep] - curve) / curve))


def theorem1_sides(score, norm_sq_centred, m: int):
    """Both sides of LMN Theorem 1 / Eq. 9 with ⟨1/Z(χ∖t)⟩ = 1/m (non-topic scores 0)::

        left  = s_t + e^{s_t}/m,        right = ½ ‖v_t − ⟨v̄(χ∖t)⟩‖²

    Eq. 9 says the two change by the same amount between any two epochs; with ‖v_t(0)‖ ≈ 0 and
    s_t(0) = 0 that is Corollary 1. Returns ``(left, right)`` arrays.
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be an int >= 1; got {m!r}")
    s = np.asarray(score, dtype=float)
    return s + np.exp(s) / m, 0.5 * np.asarray(norm_sq_centred, dtype=float)
