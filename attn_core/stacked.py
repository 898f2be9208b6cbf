"""The member-stacking machinery: S independent models computed as one.

Every model of :mod:`attn_core.models` has a leading *member* dimension ``S``: parameters are
stacked (``weight.shape == (S, ...)``), each member sees its own data batch
(``x.shape == (S, B, ...)``) and ``loss(batch)`` returns the S per-member losses. Because Adam
and SGD are elementwise, one optimiser over the stacked parameters whose objective is
``loss.sum()`` is exactly S independent optimisers (the gradient of the sum with respect to member
i's parameters is the gradient of member i's loss). A model built with ``seeds=[s]`` is the
ordinary single model of seed ``s``; a model built with ``seeds=[s1, ..., sS]`` holds exactly
those S models, parameter for parameter (each member's weights are drawn from its own
``torch.Generator(seed)`` in the same order).

With S = 1 the recurrent layers call PyTorch's fused LSTM/GRU kernels (``torch.lstm``,
``torch.gru``); with S > 1 they run a hand-written cell with one batched matmul per time step.
Both compute the same function (tests check they agree to float rounding).

Building blocks: :class:`StackedModule` (the base class), :class:`StackedLinear`,
:class:`StackedEmbedding`, :class:`StackedRNN`; and :func:`stack_members` / :func:`member` to
join one-member models into one or take one member out.
"""

from __future__ import annotations

import copy
import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import (check_bool, check_dim, check_int, check_numel, check_real, check_seeds,
                     check_token_ids)

__all__ = ["StackedModule", "StackedLinear", "StackedEmbedding", "StackedRNN", "stack_members",
           "member", "generators", "stacked_parameter", "uniform_init", "normal_init"]

RNN_CELLS = ("lstm", "gru")


# --------------------------------------------------------------------------- initialisation
def generators(seeds: Sequence[int]) -> list[torch.Generator]:
    """One ``torch.Generator`` per member, seeded with that member's seed (an int >= 0)."""
    return [torch.Generator().manual_seed(s) for s in check_seeds("seeds", seeds)]


def check_generators(gens) -> list[torch.Generator]:
    """``gens`` as a list: a non-empty list or tuple of ``torch.Generator``, one per member
    (:func:`generators` makes them from seeds). TypeError/ValueError naming ``gens``."""
    if not isinstance(gens, (list, tuple)):
        raise TypeError(f"gens must be a list of torch.Generator, one per member "
                        f"(attn_core.stacked.generators(seeds) makes them); got "
                        f"{type(gens).__name__} {gens!r:.60}")
    if not gens:
        raise ValueError("gens must hold one torch.Generator per member (at least one); got "
                         "an empty list")
    bad = [g for g in gens if not isinstance(g, torch.Generator)]
    if bad:
        raise TypeError(f"gens must hold torch.Generator objects, one per member "
                        f"(attn_core.stacked.generators(seeds) makes them); got "
                        f"{type(bad[0]).__name__} {bad[0]!r:.60}")
    return list(gens)


def check_stacked_input(name: str, x, weight: Tensor, dims: str) -> Tensor:
    """``x`` as a stacked layer's input: a tensor of ``weight``'s float dtype, ``len(dims)``
    dimensions (e.g. ``"SBTD"``; ``"S...D"``: at least two), its first the layer's members
    ``weight.shape[0]`` and its last the layer's input width ``weight.shape[-1]``. A wrong
    width reached torch's own errors -- or none at all: with one member the fused LSTM
    read a narrower input without a word."""
    S, d_in = weight.shape[0], weight.shape[-1]
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch tensor ({dims}); got {type(x).__name__}")
    if x.dtype != weight.dtype:
        raise TypeError(f"{name} must have the layer's dtype {weight.dtype}; got {x.dtype}")
    if ("..." in dims and x.dim() < 2) or ("..." not in dims and x.dim() != len(dims)):
        raise ValueError(f"{name} must have the shape ({', '.join(dims.replace('...', '*'))})"
                         f"; got {tuple(x.shape)}")
    if x.shape[0] != S or x.shape[-1] != d_in:
        raise ValueError(f"{name} must have {S} member(s) first and width {d_in} last (the "
                         f"layer's); got shape {tuple(x.shape)}")
    return x


def stacked_parameter(gens, shape, init) -> nn.Parameter:
    """Draw one tensor of ``shape`` per generator with ``init(tensor, gen)``; stack on dim 0."""
    gens = check_generators(gens)
    check_numel("a stacked parameter", (len(gens), *shape))
    out = []
    for g in gens:
        t = torch.empty(shape)
        init(t, g)
        out.append(t)
    return nn.Parameter(torch.stack(out))


def uniform_init(bound: float):
    """``init`` for :func:`stacked_parameter`: U(-bound, bound), ``bound`` finite, >= 0."""
    bound = check_real("bound", bound, 0.0)
    return lambda t, g: t.uniform_(-bound, bound, generator=g)


def normal_init(std: float):
    """``init`` for :func:`stacked_parameter`: N(0, std²), ``std`` finite, >= 0."""
    std = check_real("std", std, 0.0)
    return lambda t, g: t.normal_(0.0, std, generator=g)


# --------------------------------------------------------------------------- building blocks
class StackedModule(nn.Module):
    """Base class: a module holding ``n_members`` independent copies of its parameters."""

    n_members: int

    def loss(self, batch: dict[str, Tensor]) -> Tensor:  # pragma: no cover - interface
        """Per-member training loss, shape ``(S,)``."""
        raise NotImplementedError

    @torch.no_grad()
    def evaluate(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:  # pragma: no cover
        """Per-member evaluation metrics, each of shape ``(S,)``."""
        raise NotImplementedError

    def _check_batch(self, batch: dict[str, Tensor], keys: Sequence[str]) -> None:
        if not isinstance(batch, dict):
            raise TypeError(f"batch must be a dict of tensors; got {type(batch).__name__}")
        for k in keys:
            if k not in batch:
                raise ValueError(f"batch is missing {k!r}; it has {sorted(batch)}")
            if not isinstance(batch[k], Tensor):
                raise TypeError(f"batch[{k!r}] must be a torch tensor; got "
                                f"{type(batch[k]).__name__}")
            if batch[k].shape[0] != self.n_members:
                raise ValueError(
                    f"batch[{k!r}] has leading dimension {batch[k].shape[0]} but the model has "
                    f"{self.n_members} members; give one data batch per member"
                )


class StackedLinear(nn.Module):
    """``y = x Wᵀ + b`` for S stacked linear maps; x: (S, ..., in) -> (S, ..., out).

    Initialised like ``nn.Linear``: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
    """

    def __init__(self, gens, d_in: int, d_out: int, bias: bool = True):
        super().__init__()
        d_in, d_out = check_int("d_in", d_in), check_int("d_out", d_out)
        check_bool("bias", bias)
        bound = 1.0 / math.sqrt(d_in)
        self.weight = stacked_parameter(gens, (d_out, d_in), uniform_init(bound))
        self.bias = stacked_parameter(gens, (d_out,), uniform_init(bound)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        check_stacked_input("x", x, self.weight, "S...D")
        S = x.shape[0]
        flat = x.reshape(S, -1, x.shape[-1])
        if self.bias is None:
            y = torch.bmm(flat, self.weight.transpose(1, 2))
        else:
            y = torch.baddbmm(self.bias.unsqueeze(1), flat, self.weight.transpose(1, 2))
        return y.reshape(*x.shape[:-1], y.shape[-1])


class StackedEmbedding(nn.Module):
    """S stacked embedding tables (S, V, E), initialised N(0, std²) (``nn.Embedding``: std = 1)."""

    def __init__(self, gens, vocab: int, dim: int, std: float = 1.0):
        super().__init__()
        vocab, dim = check_dim("vocab", vocab), check_dim("dim", dim)
        self.weight = stacked_parameter(gens, (vocab, dim), normal_init(std))

    def forward(self, ids: Tensor) -> Tensor:
        S, V, E = self.weight.shape
        if ids.shape[0] != S:
            raise ValueError(f"ids has leading dimension {ids.shape[0]}, expected S={S}")
        # member i's ids are offset by i*V into one (S*V, E) table: an id >= V would silently
        # read member i+1's embedding, so the range is checked first.
        check_token_ids("token ids", ids, V)
        offset = (torch.arange(S, device=ids.device) * V).view(S, *([1] * (ids.dim() - 1)))
        return F.embedding(ids + offset, self.weight.reshape(S * V, E))


class StackedRNN(nn.Module):
    """A one-layer unidirectional LSTM or GRU for S stacked members, batch first.

    LSTM (gates i, f, g, o as in PyTorch)::

        i, f, g, o = σ(W_ii x + b_ii + W_hi h), σ(...), tanh(...), σ(...)
        c' = f ⊙ c + i ⊙ g,   h' = o ⊙ tanh(c')

    GRU (gates r, z, n)::

        r, z = σ(W_ir x + b_ir + W_hr h + b_hr), σ(...)
        n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),   h' = (1 - z) ⊙ n + z ⊙ h

    Weights are initialised like ``nn.LSTM`` / ``nn.GRU``: U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, gens, d_in: int, hidden: int, cell: str = "lstm"):
        super().__init__()
        if cell not in RNN_CELLS:
            raise ValueError(f"cell must be one of {RNN_CELLS}; got {cell!r}")
        d_in, hidden = check_dim("d_in", d_in), check_dim("hidden", hidden)
        self.cell, self.hidden = cell, hidden
        n_gates = 4 if cell == "lstm" else 3
        bound = 1.0 / math.sqrt(hidden)
        self.w_ih = stacked_parameter(gens, (n_gates * hidden, d_in), uniform_init(bound))
        self.w_hh = stacked_parameter(gens, (n_gates * hidden, hidden), uniform_init(bound))
        self.b_ih = stacked_parameter(gens, (n_gates * hidden,), uniform_init(bound))
        self.b_hh = stacked_parameter(gens, (n_gates * hidden,), uniform_init(bound))

    def forward(self, x: Tensor, state=None):
        """x: (S, B, T, d_in) -> outputs (S, B, T, H) and the final state.

        The state is ``(h, c)`` for an LSTM and ``h`` for a GRU, each of shape (S, B, H).
        """
        check_stacked_input("x", x, self.w_ih, "SBTD")
        S, B, T, _ = x.shape
        H = self.hidden
        if state is None:
            h0 = x.new_zeros(S, B, H)
            state = (h0, h0.clone()) if self.cell == "lstm" else h0
        if S == 1:
            return self._fused(x, state)
        return self._batched(x, state)

    def _fused(self, x: Tensor, state):
        params = [self.w_ih[0], self.w_hh[0], self.b_ih[0], self.b_hh[0]]
        if self.cell == "lstm":
            h0, c0 = state
            out, h, c = torch.lstm(x[0], (h0, c0), params, True, 1, 0.0, self.training, False, True)
            return out.unsqueeze(0), (h, c)
        out, h = torch.gru(x[0], state, params, True, 1, 0.0, self.training, False, True)
        return out.unsqueeze(0), h

    def _batched(self, x: Tensor, state):
        S, B, T, _ = x.shape
        H = self.hidden
        # Input projections for all time steps at once: (S, B*T, G) -> per-step views.
        xg = torch.baddbmm(
            self.b_ih.unsqueeze(1), x.reshape(S, B * T, -1), self.w_ih.transpose(1, 2)
        ).reshape(S, B, T, -1)
        w_hh_t = self.w_hh.transpose(1, 2)
        b_hh = self.b_hh.unsqueeze(1)
        outs = []
        if self.cell == "lstm":
            h, c = state
            for x_t in xg.unbind(2):  # unbind, not x[t]: cheaper backward
                gates = x_t + torch.baddbmm(b_hh, h, w_hh_t)
                i, f, g, o = gates.chunk(4, dim=-1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                outs.append(h)
            return torch.stack(outs, dim=2), (h, c)
        h = state
        for x_t in xg.unbind(2):
            hg = torch.baddbmm(b_hh, h, w_hh_t)
            xr, xz, xn = x_t.chunk(3, dim=-1)
            hr, hz, hn = hg.chunk(3, dim=-1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
            outs.append(h)
        return torch.stack(outs, dim=2), h



# --------------------------------------------------------------------------- stacking utilities
def stack_members(models: Sequence[StackedModule]) -> StackedModule:
    """Concatenate models of the same architecture along the member dimension.

    Used by the engine to hand back one S-member model when members trained apart (looped,
    or batched in one group per worker process), exactly as a single batched run does. Returns a deep copy; the inputs are not modified.
    """
    if not isinstance(models, (list, tuple)) or len(models) == 0:
        raise ValueError("models must be a non-empty sequence")
    shapes = [_member_shapes(_check_stacked(f"models[{j}]", m)) for j, m in enumerate(models)]
    for j, m in enumerate(models):
        if type(m) is not type(models[0]) or shapes[j] != shapes[0]:
            raise ValueError(f"models must share one architecture; models[{j}] "
                             f"({type(m).__name__}) differs from models[0] "
                             f"({type(models[0]).__name__}) in its tensors' names or shapes")
    settings = [_settings(m) for m in models]
    for j in range(1, len(models)):
        differ = sorted(k for k in settings[0].keys() | settings[j].keys()
                        if settings[0].get(k) != settings[j].get(k))
        if differ:
            k = differ[0]
            raise ValueError(f"models must share one configuration; models[{j}] differs from "
                             f"models[0] in {k} ({settings[j].get(k)!r} vs "
                             f"{settings[0].get(k)!r}){' and more' if len(differ) > 1 else ''}")
    out = copy.deepcopy(models[0])
    with torch.no_grad():
        for name, tensor in list(out.named_parameters()) + list(out.named_buffers()):
            parts = [dict(list(m.named_parameters()) + list(m.named_buffers()))[name] for m in models]
            new = torch.cat([p.detach() for p in parts], dim=0)
            _set_tensor(out, name, new, isinstance(tensor, nn.Parameter), tensor.requires_grad)
    out.seeds = [s for m in models for s in m.seeds]
    out.n_members = len(out.seeds)
    return out


_PER_MEMBER = {"seeds", "n_members", "training"}


def _settings(model: nn.Module) -> dict:
    """What a model is besides its tensors' names and shapes: every module's plain settings
    (``attention="uniform"``, ``cell``, ``causal``, ...; not its seeds) and which parameters
    train (``requires_grad``). Stacking a learned and a uniform member gave a "learned"
    model."""
    out = {}
    for path, mod in model.named_modules():
        for k, v in vars(mod).items():
            if k.startswith("_") or k in _PER_MEMBER:
                continue
            if isinstance(v, (bool, int, float, str, type(None))) or (
                    isinstance(v, tuple) and all(isinstance(x, (bool, int, float, str))
                                                 for x in v)):
                out[f"{path + '.' if path else ''}{k}"] = v
    for name, p in model.named_parameters():
        out[f"{name}.requires_grad"] = p.requires_grad
    return out


def member(model: StackedModule, i: int) -> StackedModule:
    """A copy of member ``i`` of a stacked model, as a one-member model."""
    _check_stacked("model", model)
    i = check_int("i", i, 0, model.n_members - 1)
    out = copy.deepcopy(model)
    with torch.no_grad():
        for name, tensor in list(out.named_parameters()) + list(out.named_buffers()):
            _set_tensor(out, name, tensor.detach()[i:i + 1].clone(),
                        isinstance(tensor, nn.Parameter), tensor.requires_grad)
    out.seeds = [model.seeds[i]]
    out.n_members = 1
    return out


def _check_stacked(name: str, model) -> StackedModule:
    if not isinstance(model, StackedModule):
        raise TypeError(f"{name} must be a StackedModule; got {type(model).__name__}")
    return model


def _member_shapes(model: StackedModule) -> dict[str, tuple[int, ...]]:
    """The shape of one member's share of every parameter and buffer of a stacked model."""
    return {k: tuple(t.shape[1:]) for k, t in
            list(model.named_parameters()) + list(model.named_buffers())}


def _set_tensor(module: nn.Module, dotted: str, value: Tensor, is_param: bool, grad: bool) -> None:
    *path, leaf = dotted.split(".")
    for p in path:
        module = getattr(module, p)
    if is_param:
        setattr(module, leaf, nn.Parameter(value, requires_grad=grad))
    else:
        module.register_buffer(leaf, value)

