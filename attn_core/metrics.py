"""Measurements taken on models and training histories.

- :func:`keyword_probe` -- attention and output relevance at the keyword of SZKS §6.1's task.
- :func:`first_step` -- the first evaluation step at which a curve crosses a threshold.
- :func:`wilson_interval` -- a binomial confidence interval for success rates.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

__all__ = ["keyword_probe", "first_step", "wilson_interval"]


def _masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean over dims 1.. of ``values`` where ``mask`` (same shape) is true: (S,)."""
    mask = mask.to(values.dtype)
    return (values * mask).flatten(1).sum(1) / mask.flatten(1).sum(1).clamp(min=1)


@torch.no_grad()
def keyword_probe(model, batch: dict[str, Tensor]) -> dict[str, Tensor]:
    """Output relevance and attention around the keyword, on the positive sequences of a batch.

    For an :class:`~attn_core.models.AttentionClassifier` with ``β_l = W h_l`` (the log-odds
    γ_l of SZKS §6.1 when the model attends only to position l) and attention ``p``, with l* the
    keyword's position, returns per member (S,):

    - ``beta_key``: mean β_{l*};  ``beta_other``: mean β_l over l ≠ l*;
    - ``beta_next``: mean β_{l*+1} (sequences whose keyword is not last);
    - ``beta_mean``: mean over l of β_l;  ``beta_last``: mean β_L;
    - ``attn_key``: mean attention p_{l*} on the keyword (1/L under uniform attention).
    """
    out = model(batch["x"])
    beta, p, pos = out["beta"], out["p"], batch["pos"]
    S, B, L = beta.shape
    positive = (pos >= 0).unsqueeze(-1).expand(S, B, L)
    l = torch.arange(L, device=beta.device).view(1, 1, L)
    key = (l == pos.unsqueeze(-1)) & positive
    nxt = (l == (pos + 1).unsqueeze(-1)) & positive & (pos < L - 1).unsqueeze(-1)
    last = (l == L - 1) & positive
    return {
        "beta_key": _masked_mean(beta, key),
        "beta_other": _masked_mean(beta, positive & ~key),
        "beta_next": _masked_mean(beta, nxt),
        "beta_mean": _masked_mean(beta, positive),
        "beta_last": _masked_mean(beta, last),
        "attn_key": _masked_mean(p, key),
    }


def first_step(steps, values, threshold: float, above: bool = True):
    """The first of ``steps`` at which ``values`` is above (or below) ``threshold``.

    ``values`` may be (E,) or (S, E); returns a float (or an (S,) array), NaN where the
    threshold is never crossed.
    """
    steps = np.asarray(steps, dtype=float)
    v = np.atleast_2d(np.asarray(values, dtype=float))
    if v.shape[-1] != steps.shape[0]:
        raise ValueError(f"values has {v.shape[-1]} points but steps has {steps.shape[0]}")
    hit = v > threshold if above else v < threshold
    out = np.where(hit.any(-1), steps[hit.argmax(-1)], np.nan)
    return out if np.ndim(values) > 1 else float(out[0])


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (successes out of n)."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an int >= 1; got {n!r}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}]; got {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    phat = successes / n
    denom = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
