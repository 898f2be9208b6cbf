"""The papers' models, each a stack of S independent members (see :mod:`attn_core.stacked`).

Each class docstring leads with its equations and source:

- :class:`AttentionClassifier` -- LSTM + single-vector attention binary classifier
  (Snell et al. blog; SZKS Eq. 5): ``a_l = qᵀh_l``, ``p = softmax(a)``,
  ``Pr[pos] = σ(Σ_l p_l W h_l)`` (chapters 1 and 3).
- :class:`Seq2Seq` -- LSTM/GRU encoder-decoder with Luong (2015) "general" attention
  ``score(s_t, h_l) = s_tᵀ W h_l`` and output ``softmax(W_o tanh(W_c [s_t; c_t]))``, with K heads
  (SZKS Eq. 16-17; chapters 3-5).
- :class:`BagOfWordsProxy` -- SZKS §2.3's bag-of-words proxy ``softmax((1/L) Σ_l θ_{x_l})``
  (chapters 3-4) and :class:`BagOfWordsLogistic` -- its |O| = 2 twin (SZKS A.10).
- :class:`TopicAttention` -- the Lu, Mao & Nayak (2021) topic model: ``s_w = qᵀκ_w``,
  ``v̄ = Σ_w ν_w softmax(s)_w`` followed by an FC / TC / TL classifier (chapter 2), and
  :class:`TopicAttentionCNN` -- the same attention over convolved word pairs (LMN App. A).

Token ids are range-checked per member before the stacked lookup (an id equal to ``vocab``
would otherwise read the next member's table).
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call

from .checks import (check_bool, check_bool_array, check_choice, check_dim, check_index_tensor,
                     check_indices, check_int, check_int_array, check_pair, check_real,
                     check_seeds, check_sequences, check_token_batches, check_token_ids)
from .config import SEED_SALTS
from .stacked import (RNN_CELLS, StackedEmbedding, StackedLinear, StackedModule, StackedRNN,
                      generators, normal_init, stacked_parameter, uniform_init)

__all__ = ["AttentionClassifier", "Seq2SeqObjective", "Seq2Seq", "TopicAttention",
           "TopicAttentionCNN", "BagOfWordsProxy", "BagOfWordsLogistic", "ATTENTION_MODES",
           "HEAD_REDUCTIONS", "CLASSIFIERS", "attention_weights", "POSITIONS", "NORMS",
           "sinusoidal_positions", "MultiHeadAttention", "FeedForward", "TransformerSeq2Seq",
           "StackedTransformer"]


#: ``"learned"``: α = softmax(scores); ``"uniform"``: α frozen at 1/L (SZKS §3.2's β^uf model).
ATTENTION_MODES = ("learned", "uniform")
#: How Seq2Seq combines its heads' contexts (see its docstring).
HEAD_REDUCTIONS = ("mean", "sum")


def attention_weights(scores: Tensor, mode: str, mask: Tensor | None = None) -> Tensor:
    """Attention over the last axis (source positions): ``softmax(scores)`` when ``mode`` is
    ``"learned"``, the uniform 1/L (scores ignored) when it is ``"uniform"``. ``mask`` (bool,
    broadcast against ``scores``; True where attention may go) leaves the other positions
    out: weight 0 there, the rest renormalised."""
    if mask is None:
        if mode == "uniform":
            return torch.full_like(scores, 1.0 / scores.shape[-1])
        return torch.softmax(scores, dim=-1)
    if mode == "uniform":
        scores = torch.zeros_like(scores)
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


#: The batch keys :meth:`Seq2Seq.forward` takes as masks (see :class:`~attn_core.data.CopyTask`).
FORWARD_MASKS = ("src_mask", "score_stop", "state_stop")


def forward_masks(batch: dict) -> dict[str, Tensor]:
    """The masks of ``batch`` that a model's forward takes (:data:`FORWARD_MASKS`), by name."""
    return {k: batch[k] for k in FORWARD_MASKS if k in batch}


def _batch_mask(batch: dict, key: str, shape: tuple) -> Tensor | None:
    """``batch[key]``, a bool mask of exactly ``shape``, or None when the batch has none."""
    return None if key not in batch else _check_batch_mask(key, batch[key], shape)


def _check_batch_mask(key: str, m, shape: tuple) -> Tensor:
    """``m``, the batch's ``key``: a bool tensor of exactly ``shape`` (unlike
    :func:`~attn_core.checks.check_bool_array`, nothing else is converted: a batch holds
    tensors)."""
    if not isinstance(m, Tensor) or m.dtype != torch.bool:
        raise TypeError(f"batch[{key!r}] must be a bool tensor; got "
                        f"{getattr(m, 'dtype', type(m).__name__)}")
    if tuple(m.shape) != tuple(shape):
        raise ValueError(f"batch[{key!r}] must have shape {tuple(shape)}; got "
                         f"{tuple(m.shape)}")
    return m


# --------------------------------------------------------------------------- input checks
#: How :func:`~attn_core.checks.check_index_tensor` words class labels.
_LABELS = ("class labels", "n_classes")


# --------------------------------------------------------------------------- chapter 1
class AttentionClassifier(StackedModule):
    """Attention LSTM binary classifier (Snell et al. blog; SZKS §2.4, Eq. 5).

    Tokens are embedded and encoded by a unidirectional LSTM into ``h_1..h_L``; then ::

        a_l = qᵀ h_l,   p = softmax(a),   r_l = wᵀ h_l  (output relevance, the slides' r_l)
        logit = Σ_l p_l r_l,   Pr[positive] = σ(logit)

    ``attention="uniform"`` freezes p at 1/L (the model used for β^uf in SZKS §3.2, §6.1).

    Batches: ``{"x": (S, B, L) long, "y": (S, B) float in {0, 1}}``.
    """

    def __init__(self, vocab: int, embed: int = 32, hidden: int = 32, attention: str = "learned",
                 seeds: Sequence[int] = (0,)):
        super().__init__()
        self.vocab = check_dim("vocab", vocab, 2)
        self.embed = check_dim("embed", embed)
        self.hidden = check_dim("hidden", hidden)
        check_choice("attention", attention, ATTENTION_MODES)
        self.attention = attention
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        gens = generators(self.seeds)
        self.emb = StackedEmbedding(gens, vocab, embed)
        self.rnn = StackedRNN(gens, embed, hidden, "lstm")
        bound = 1.0 / math.sqrt(hidden)
        self.alpha = stacked_parameter(gens, (hidden,), uniform_init(bound))
        self.w = stacked_parameter(gens, (hidden,), uniform_init(bound))
        if attention == "uniform":
            self.alpha.requires_grad_(False)

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """Return ``logit`` (S, B), attention ``p`` (S, B, L), relevance ``beta`` (S, B, L)."""
        check_sequences("x", x)
        check_token_ids("x", x, self.vocab)
        h, _ = self.rnn(self.emb(x))  # (S, B, L, H)
        a = torch.einsum("sblh,sh->sbl", h, self.alpha)
        p = attention_weights(a, self.attention)
        beta = torch.einsum("sblh,sh->sbl", h, self.w)
        return {"logit": (p * beta).sum(-1), "p": p, "beta": beta}

    def _check_labelled(self, batch) -> None:
        """The batch's keys, and its labels y (S, B): floats 0. or 1., one per sequence of x."""
        self._check_batch(batch, ("x", "y"))
        check_sequences("batch['x']", batch["x"])
        check_token_ids("batch['x']", batch["x"], self.vocab)
        check_indices("batch['y']", batch["y"], batch["x"].shape[:2], 2, *_LABELS, floating=True)

    def loss(self, batch):
        self._check_labelled(batch)
        out = self(batch["x"])
        return F.binary_cross_entropy_with_logits(out["logit"], batch["y"], reduction="none").mean(1)

    @torch.no_grad()
    def evaluate(self, batch):
        self._check_labelled(batch)
        out = self(batch["x"])
        loss = F.binary_cross_entropy_with_logits(out["logit"], batch["y"], reduction="none").mean(1)
        acc = ((out["logit"] > 0).float() == batch["y"]).float().mean(1)
        return {"loss": loss, "accuracy": acc}


# --------------------------------------------------------------------------- chapters 3-5
class Seq2SeqObjective:
    """The training objective and evaluation of a sequence-to-sequence model of the book:
    :meth:`loss` (each member's mean cross-entropy over its target tokens) and
    :meth:`evaluate` (loss, token accuracy and, with alignments, attention accuracy), for a
    :class:`~attn_core.stacked.StackedModule` whose ``forward(src, tgt_in, **masks)``
    returns ``logits`` (S, B, T, V) and ``alpha`` (S, K, B, T, L) and which has ``vocab``.
    :class:`Seq2Seq` and chapter 6's Transformer share it."""

    def _forward_batch(self, batch):
        """The forward pass of a batch, with its optional masks (see :class:`CopyTask`):
        ``src_mask``, ``score_stop`` and ``state_stop`` go to :meth:`forward`; returns its
        output and the weight of each target token in the loss: the ``loss_mask``, times
        the ``loss_weight`` (B, T) float where the batch has one (None without either)."""
        self._check_batch(batch, ("src", "tgt_in", "tgt"))
        check_indices("batch['tgt']", batch["tgt"], batch["tgt_in"].shape, self.vocab)
        out = self(batch["src"], batch["tgt_in"], **forward_masks(batch))
        mask = _batch_mask(batch, "loss_mask", batch["tgt"].shape)
        if "loss_weight" not in batch:
            return out, mask
        w = batch["loss_weight"]
        if not isinstance(w, Tensor) or not w.is_floating_point():
            raise TypeError(f"batch['loss_weight'] must be a float tensor; got "
                            f"{getattr(w, 'dtype', type(w).__name__)}")
        if tuple(w.shape) != tuple(batch["tgt"].shape):
            raise ValueError(f"batch['loss_weight'] must have shape "
                             f"{tuple(batch['tgt'].shape)}; got {tuple(w.shape)}")
        return out, (w if mask is None else w * mask)

    def _ce(self, logits, tgt, loss_mask):
        """Each member's mean cross-entropy over the target tokens (those of ``loss_mask``;
        a float ``loss_mask`` weights them: the weighted mean)."""
        # ids of any integer dtype, checked in range: int64 for cross_entropy, losslessly
        ce = F.cross_entropy(logits.flatten(0, 2), tgt.flatten().long(), reduction="none")
        ce = ce.view(self.n_members, -1)
        if loss_mask is None:
            return ce.mean(1)
        w = loss_mask.flatten(1).to(ce.dtype)
        return (ce * w).sum(1) / w.sum(1)

    def loss(self, batch):
        out, loss_mask = self._forward_batch(batch)
        return self._ce(out["logits"], batch["tgt"], loss_mask)

    @torch.no_grad()
    def evaluate(self, batch):
        out, loss_mask = self._forward_batch(batch)
        logits, tgt = out["logits"], batch["tgt"]
        metrics = {
            "loss": self._ce(logits, tgt, loss_mask),
            "token_acc": (logits.argmax(-1) == tgt).float().flatten(1).mean(1),
        }
        if "align" in batch:
            check_indices("batch['align']", batch["align"], tgt.shape, batch["src"].shape[2],
                          "source positions", "L")
            # attention accuracy: argmax of the head-averaged attention is the aligned position
            att = out["alpha"].mean(1).argmax(-1)  # (S, B, T)
            hit = (att == batch["align"]).float().flatten(1)
            where = _batch_mask(batch, "align_mask", tgt.shape)
            if where is None:
                metrics["attn_acc"] = hit.mean(1)
            else:   # only the steps that have a source position to attend to
                w = where.flatten(1).to(hit.dtype)
                metrics["attn_acc"] = (hit * w).sum(1) / w.sum(1)
        return metrics


class Seq2Seq(Seq2SeqObjective, StackedModule):
    """Encoder-decoder with Luong "general" attention and K heads (Luong et al. 2015; SZKS §2.1).

    Encoder and decoder are one-layer unidirectional LSTMs (or GRUs) sharing one embedding for
    source and target tokens. The decoder runs with teacher forcing on ``[BOS, y_1..y_{T-1}]``,
    starting from the encoder's final state. For each head k (SZKS Eq. 16-17)::

        score^k_{t,l} = s_tᵀ W_k h_l,   α^k_t = softmax_l(score^k_t),   c^k_t = Σ_l α^k_{t,l} h_l
        c_t = Σ_k P_k c^k_t      (head_reduce="sum", SZKS Eq. 17)
        c_t = (1/K) Σ_k P_k c^k_t      (head_reduce="mean", the authors' code; the default)
        p_t = softmax(W_o tanh(W_c [s_t; c_t] + b_c) + b_o)

    P_k is the identity unless ``head_proj=True``, which gives every head its own learned
    projection of its context. ``bias=True`` adds the biases of the authors' code: the score
    becomes ``(s_tᵀ W_k + a_k) h_l`` and, with projections, the head's context ``P_k c^k_t + b_k``.
    The authors' code (Sea-Snell/AttentionDynamics, ``SequenceCopying/``) is, for one head,
    ``head_proj=True, bias=True`` (its ``project_enc``) with a shared embedding, and for K
    heads GRUs with ``head_proj=True, bias=True, head_reduce="mean",
    shared_embedding=False``. With K = 1, no projection and no bias this is Luong's model.

    ``attention="uniform"`` freezes every α at 1/L (SZKS §3.2's β^uf model).

    Batches: ``{"src": (S, B, L), "tgt_in": (S, B, T), "tgt": (S, B, T)}`` long tensors and
    optionally ``"align": (S, B, T)``, the source position each target token copies (for the
    attention accuracy).
    """

    def __init__(self, vocab: int, embed: int = 64, hidden: int = 64, heads: int = 1,
                 cell: str = "lstm", attention: str = "learned", seeds: Sequence[int] = (0,),
                 head_seeds: Sequence[int | Sequence[int]] | None = None,
                 head_proj: bool = False, head_reduce: str = "mean", bias: bool = False,
                 shared_embedding: bool = True):
        super().__init__()
        self.vocab = check_dim("vocab", vocab, 2)
        self.embed = check_dim("embed", embed)
        self.hidden = check_dim("hidden", hidden)
        self.heads = check_dim("heads", heads)
        check_choice("cell", cell, RNN_CELLS)
        check_choice("attention", attention, ATTENTION_MODES)
        check_choice("head_reduce", head_reduce, HEAD_REDUCTIONS)
        check_bool("head_proj", head_proj)
        check_bool("bias", bias)
        check_bool("shared_embedding", shared_embedding)
        self.cell, self.attention, self.head_reduce = cell, attention, head_reduce
        self.shared_embedding = shared_embedding
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        gens = generators(self.seeds)
        self.emb = StackedEmbedding(gens, vocab, embed)
        self.encoder = StackedRNN(gens, embed, hidden, cell)
        self.decoder = StackedRNN(gens, embed, hidden, cell)
        self.combine = StackedLinear(gens, 2 * hidden, hidden)
        self.out = StackedLinear(gens, hidden, vocab)
        # Score matrices. Default: drawn from the member's own generator after the rest of the
        # model. With head_seeds (one entry per member) the heads come from their own seeds, so
        # one base model can carry different heads (SZKS §5.2): an int draws all K heads from one
        # generator; a list of K ints draws head k from seed k alone, so that head is exactly the
        # score matrix of the one-head model built with head_seeds=[that seed].
        bound = 1.0 / math.sqrt(hidden)
        if head_seeds is None:
            self.score = stacked_parameter(gens, (self.heads, hidden, hidden), uniform_init(bound))
        else:
            if isinstance(head_seeds, (int, str)) or len(head_seeds) != self.n_members:
                raise ValueError(f"head_seeds must have one entry per member ({self.n_members}); "
                                 f"got {head_seeds!r}")
            members = []
            for entry in head_seeds:
                if isinstance(entry, Sequence):
                    if len(entry) != self.heads:
                        raise ValueError(f"a head_seeds entry lists {len(entry)} seeds for "
                                         f"{self.heads} heads (heads must match)")
                    heads = [stacked_parameter(generators(check_seeds("head_seeds", [h])), (1, hidden, hidden),
                                    uniform_init(bound))[0, 0] for h in entry]
                    members.append(torch.stack(heads))
                else:
                    members.append(stacked_parameter(generators(check_seeds("head_seeds", [entry])),
                                          (self.heads, hidden, hidden), uniform_init(bound))[0])
            self.score = nn.Parameter(torch.stack([m.detach() for m in members]))
        # The decoder's own embedding (the authors' multi-head code), drawn after the rest of
        # the member's model, so the other tensors are those of the shared-embedding model.
        self.dec_emb = None if shared_embedding else StackedEmbedding(gens, vocab, embed)
        # Optional per-head context projections P_k and biases a_k, b_k: each drawn from its
        # head's seed plus its own salt (config.SEED_SALTS), so a head (W_k, a_k, P_k, b_k) is
        # reproducible on its own and its tensors are independent of each other.
        self.head_proj = self.score_bias = self.proj_bias = None
        if head_proj:
            self.head_proj = self._per_head(head_seeds, "head_projection", (hidden, hidden),
                                            bound)
        if bias:
            self.score_bias = self._per_head(head_seeds, "head_score_bias", (hidden,), bound)
            if head_proj:
                self.proj_bias = self._per_head(head_seeds, "head_projection_bias", (hidden,),
                                                bound)
        if attention == "uniform":
            self.score.requires_grad_(False)
            if self.score_bias is not None:
                self.score_bias.requires_grad_(False)

    def _per_head(self, head_seeds, salt: str, shape: tuple, bound: float) -> nn.Parameter:
        """One U(±bound) tensor of ``shape`` per head of every member: (S, K, *shape)."""
        salt = SEED_SALTS[salt]
        return nn.Parameter(torch.stack([
            torch.stack([stacked_parameter(generators([int(h) + salt]), shape,
                                           uniform_init(bound))[0]
                         for h in self._head_seed_list(head_seeds, m)])
            for m in range(self.n_members)]))

    def _head_seed_list(self, head_seeds, m: int) -> list:
        """The seed of every head of member m (from which its projection P_k is drawn)."""
        salt = SEED_SALTS["heads_per_member"]
        if head_seeds is None:
            return [self.seeds[m] * salt + k for k in range(self.heads)]
        entry = head_seeds[m]
        if isinstance(entry, Sequence):
            return list(entry)
        return [int(entry)] if self.heads == 1 else [int(entry) * salt + k for k in range(self.heads)]

    def forward(self, src: Tensor, tgt_in: Tensor, src_mask: Tensor | None = None,
                score_stop: Tensor | None = None,
                state_stop: Tensor | None = None) -> dict[str, Tensor]:
        """Return ``logits`` (S, B, T, V) and attention ``alpha`` (S, K, B, T, L).

        ``src_mask`` (S, B, L) bool: the source positions attention may go to (default all);
        (S, B, T, L): those of each decoder step.
        ``score_stop`` (S, B, T) bool: decoder steps whose attention scores pass no gradient;
        ``state_stop``: decoder steps whose state and context enter the output layers
        detached (values unchanged; chapter 7's end-step ablations)."""
        check_pair("src", src, "tgt_in", tgt_in, self.vocab)
        if isinstance(src_mask, Tensor) and src_mask.dim() == src.dim() + 1:  # a row a step
            src_mask = _check_batch_mask("src_mask", src_mask, (*tgt_in.shape, src.shape[-1]))
            step_mask = src_mask[:, None]
        elif src_mask is not None:
            src_mask = _check_batch_mask("src_mask", src_mask, src.shape)
            step_mask = src_mask[:, None, :, None, :]
        if score_stop is not None:
            score_stop = _check_batch_mask("score_stop", score_stop, tgt_in.shape)
        if state_stop is not None:
            state_stop = _check_batch_mask("state_stop", state_stop, tgt_in.shape)
        enc, dec = self._states(src, tgt_in)
        K = self.heads
        scores = self.scores(enc, dec)
        if score_stop is not None:
            scores = torch.where(score_stop[:, None, :, :, None], scores.detach(), scores)
        if src_mask is None:
            alpha = attention_weights(scores, self.attention)
        else:
            alpha = attention_weights(scores, self.attention, step_mask)
        if self.head_proj is None:  # Σ_k c^k_t
            ctx = torch.einsum("skbtl,sblh->sbth", alpha, enc)
        else:  # Σ_k P_k c^k_t
            ctx = torch.einsum("skbtl,sblh,skgh->sbtg", alpha, enc, self.head_proj)
        if self.proj_bias is not None:  # Σ_k (P_k c^k_t + b_k)
            ctx = ctx + self.proj_bias.sum(1)[:, None, None, :]
        if self.head_reduce == "mean":
            ctx = ctx / K
        if state_stop is not None:
            m = state_stop[..., None]
            dec, ctx = torch.where(m, dec.detach(), dec), torch.where(m, ctx.detach(), ctx)
        o = torch.tanh(self.combine(torch.cat([dec, ctx], dim=-1)))
        return {"logits": self.out(o), "alpha": alpha}

    def scores(self, enc: Tensor, dec: Tensor) -> Tensor:
        """Every head's attention scores ``s_tᵀ W_k h_l (+ a_k·h_l)`` (S, K, B, T, L) from
        encoder states (S, B, L, H) and decoder states (S, B, T, H)."""
        sw = torch.einsum("sbth,skhg->skbtg", dec, self.score)
        if self.score_bias is not None:  # (s_tᵀ W_k + a_k) h_l
            sw = sw + self.score_bias[:, :, None, None, :]
        return torch.einsum("skbtg,sblg->skbtl", sw, enc)

    def _states(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder states (S, B, L, H) and teacher-forced decoder states (S, B, T, H)."""
        enc, state = self.encoder(self.emb(src))
        dec, _ = self.decoder(self._decoder_inputs(tgt_in), state)
        return enc, dec

    def _decoder_inputs(self, tgt_in: Tensor) -> Tensor:
        """What the decoder reads at each step (S, B, T, E): the embedding of ``tgt_in``
        (a subclass may add to it, as chapter 7's step-index and end-mark models do)."""
        return (self.emb if self.dec_emb is None else self.dec_emb)(tgt_in)

    def position_contexts(self, enc: Tensor) -> Tensor:
        """The context c_t if every head attended only to source position l: (S, B, L, H)
        from encoder states (S, B, L, H) -- ``h_l``, or ``red_k (P_k h_l + b_k)``."""
        K = self.heads
        if self.head_proj is None:
            return enc * K if (self.head_reduce == "sum" and K > 1) else enc
        c = torch.einsum("sblh,skgh->sblg", enc, self.head_proj)
        if self.proj_bias is not None:
            c = c + self.proj_bias.sum(1)[:, None, None, :]
        return c / K if self.head_reduce == "mean" else c

    @torch.no_grad()
    def lexical_probe(self, src: Tensor, tgt_in: Tensor, tgt: Tensor) -> Tensor:
        """SZKS §2.2 lexical probe: ``β_{t,l} = softmax(W_o tanh(W_c [s_t; c_l]))_{y_t}``.

        The probability of the right output word y_t if the decoder at step t attended only to
        source position l: its context would then be ``c_l`` = :meth:`position_contexts` (h_l
        for one head without projection; the authors' code feeds ``project_enc(h_l)``).
        Returns (S, B, T, L).
        """
        check_pair("src", src, "tgt_in", tgt_in, self.vocab)
        check_indices("tgt", tgt, tgt_in.shape, self.vocab)
        enc, dec = self._states(src, tgt_in)
        enc = self.position_contexts(enc)
        S, B, L, H = enc.shape
        T = dec.shape[2]
        # W_c [s_t; h_l] + b_c = (W_s s_t + b_c) + W_h h_l with W_c = [W_s, W_h]: two small
        # products broadcast over the (t, l) pairs instead of one product per pair (the same
        # sum, ~6x faster at the book's sizes; equal to float rounding).
        w_s, w_h = self.combine.weight[:, :, :H], self.combine.weight[:, :, H:]
        s_part = torch.baddbmm(self.combine.bias.unsqueeze(1), dec.reshape(S, -1, H),
                               w_s.transpose(1, 2)).view(S, B, T, 1, H)
        h_part = torch.bmm(enc.reshape(S, -1, H), w_h.transpose(1, 2)).view(S, B, 1, L, H)
        # W_o tanh(z) + b_o with tanh(z) = 2 σ(2z) - 1, the factors folded into the small
        # tensors: (2 W_o) σ(2 s_part + 2 h_part) + (b_o - W_o 1). One pass of σ over the
        # (B, T, L, H) pairs instead of tanh, which this CPU build computes ~4x slower than σ;
        # the probe takes about half the time (equal to the tanh form to float rounding).
        u = (2 * s_part + 2 * h_part).sigmoid_().view(S, -1, H)
        w_o = self.out.weight
        b_o = -w_o.sum(-1) if self.out.bias is None else self.out.bias - w_o.sum(-1)
        logits = torch.baddbmm(b_o.unsqueeze(1), u, 2 * w_o.transpose(1, 2))
        logp = torch.log_softmax(logits.view(S, B, T, L, -1), dim=-1)
        idx = tgt.long().view(S, B, T, 1, 1).expand(S, B, T, L, 1)
        return logp.gather(-1, idx).squeeze(-1).exp()


class BagOfWordsProxy(StackedModule):
    """The bag-of-words proxy of SZKS §2.3 (Eq. 6-7): every output position predicts ::

        p_t = softmax((1/L) Σ_l θ_{x_l}),    θ_i = W e_i ∈ R^{|O|}

    and its lexical probe is ``β^px_{t,l} = softmax(θ_{x_l})_{y_t}``. With ``dim=None``, θ is one
    |I| × |O| matrix initialised at zero -- the full-rank case, equal to a bag-of-words logistic
    regression (SZKS A.10). With ``dim=d``, θ = W e is factorised with W and e drawn i.i.d. from
    N(0, I_d/d), the parametrisation of SZKS A.2 (whose d → ∞ limit gives the count table).

    Batches: ``{"src": (S, B, L), "tgt": (S, B, T)}``; the prediction ignores t.
    """

    def __init__(self, vocab_in: int, vocab_out: int, dim: int | None = None,
                 seeds: Sequence[int] = (0,)):
        super().__init__()
        self.vocab_in = check_dim("vocab_in", vocab_in)
        self.vocab_out = check_dim("vocab_out", vocab_out, 2)
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        self.dim = None if dim is None else check_dim("dim", dim)
        if dim is None:
            self.theta_full = nn.Parameter(torch.zeros(self.n_members, vocab_in, vocab_out))
        else:
            gens = generators(self.seeds)
            std = 1.0 / math.sqrt(dim)
            self.e = stacked_parameter(gens, (vocab_in, dim), normal_init(std))
            self.W = stacked_parameter(gens, (vocab_out, dim), normal_init(std))

    def theta(self) -> Tensor:
        """θ = W e: (S, |I|, |O|)."""
        if self.dim is None:
            return self.theta_full
        return torch.einsum("sid,sod->sio", self.e, self.W)

    def forward(self, src: Tensor) -> Tensor:
        """Logits (S, B, |O|) of the one prediction every output position shares."""
        S = self.n_members
        check_sequences("src", src)
        check_token_ids("src", src, self.vocab_in)
        th = self.theta()
        rows = torch.gather(th, 1, src.reshape(S, -1, 1).expand(-1, -1, self.vocab_out))
        return rows.view(*src.shape, self.vocab_out).mean(2)

    @torch.no_grad()
    def lexical_probe(self, src: Tensor, tgt: Tensor) -> Tensor:
        """β^px_{t,l} = softmax(θ_{x_l})_{y_t}: (S, B, T, L)."""
        check_pair("src", src, "tgt", tgt)
        S, B, L = src.shape
        check_token_ids("src", src, self.vocab_in)
        check_token_ids("tgt", tgt, self.vocab_out)
        logp = torch.log_softmax(self.theta(), dim=-1)  # (S, I, O)
        rows = torch.gather(logp, 1, src.reshape(S, -1, 1).expand(-1, -1, self.vocab_out))
        rows = rows.view(S, B, L, self.vocab_out)  # log softmax(θ_{x_l})
        T = tgt.shape[2]
        idx = tgt.view(S, B, 1, T).expand(S, B, L, T)
        return rows.gather(-1, idx).transpose(2, 3).exp()  # (S, B, T, L)

    def _ce(self, batch):
        check_pair("batch['src']", batch["src"], "batch['tgt']", batch["tgt"])
        check_token_ids("batch['tgt']", batch["tgt"], self.vocab_out)
        logits = self(batch["src"])  # (S, B, O)
        T = batch["tgt"].shape[2]
        lp = torch.log_softmax(logits, -1).unsqueeze(2).expand(-1, -1, T, -1)
        return -lp.gather(-1, batch["tgt"].long().unsqueeze(-1)).squeeze(-1).flatten(1).mean(1)

    def loss(self, batch):
        self._check_batch(batch, ("src", "tgt"))
        return self._ce(batch)

    @torch.no_grad()
    def evaluate(self, batch):
        self._check_batch(batch, ("src", "tgt"))
        return {"loss": self._ce(batch)}


# --------------------------------------------------------------------------- chapter 2
CLASSIFIERS = ("FC", "TC", "TL")


class _BagStructure:
    """The sparsity pattern of "sentence n holds word x[n, l]" for a flat batch of bags, in both
    orientations (CSR rows = sentences, and CSR rows = words), computed once per distinct batch."""

    def __init__(self, flat_x: Tensor, n_rows: int):
        n, L = flat_x.shape
        dev = flat_x.device
        self.shape = (n, L)
        self.n_rows = n_rows
        self.col = flat_x.reshape(-1)
        self.crow = torch.arange(0, n * L + 1, L, device=dev)
        self.perm = torch.argsort(self.col, stable=True)
        counts = torch.bincount(self.col, minlength=n_rows)
        self.crow_t = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        self.col_t = torch.arange(n, device=dev).repeat_interleave(L)[self.perm]


class _BagPool(torch.autograd.Function):
    """``out[n] = Σ_l p[n, l] · table[x[n, l]]`` with a hand-written backward.

    Forward is one sparse (CSR) × dense product; the backward gives the table gradient as the
    transposed sparse product and ``∂/∂p[n, l] = g[n] · table[x[n, l]]``. Equivalent to the plain
    gather-and-sum (tests compare the two) but several times faster on a CPU than autograd's
    gather/scatter for the paper-size task.
    """

    @staticmethod
    def forward(ctx, p: Tensor, table: Tensor, st: _BagStructure) -> Tensor:
        n, L = st.shape
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
            P = torch.sparse_csr_tensor(st.crow, st.col, p.reshape(-1), size=(n, st.n_rows))
            out = P @ table
        ctx.save_for_backward(p, table)
        ctx.st = st
        return out

    @staticmethod
    def backward(ctx, g: Tensor):
        p, table = ctx.saved_tensors
        st = ctx.st
        n, L = st.shape
        g = g.contiguous()
        grad_p = grad_table = None
        if ctx.needs_input_grad[0]:
            rows = table.index_select(0, st.col).view(n, L, -1)
            grad_p = torch.bmm(rows, g.unsqueeze(-1)).view(n, L)
        if ctx.needs_input_grad[1]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                PT = torch.sparse_csr_tensor(st.crow_t, st.col_t, p.reshape(-1)[st.perm],
                                             size=(st.n_rows, n))
                grad_table = PT @ g
        return grad_p, grad_table, None


def _check_mask(mask, shape) -> Tensor:
    """A bool mask of x's shape with at least one real word (True) in every bag: an all-padding
    bag would give every score -inf and NaN attention."""
    mask = check_bool_array("mask", mask, tuple(shape))
    empty = ~mask.any(-1)
    if empty.any():
        s, n = (int(i) for i in empty.nonzero()[0])
        raise ValueError(f"mask must mark at least one real word (True) in every bag; bag {n} of "
                         f"member {s} is all padding ({int(empty.sum())} such bags)")
    return mask


class _TopicClassifier(StackedModule):
    """Loss and evaluation of a topic classifier on ``{"x": (S, N, L), "y": (S, N)}`` (and an
    optional ``"mask"``): mean cross-entropy per member, and accuracy."""

    def _logits(self, batch) -> Tensor:
        return self(batch["x"])["logits"]

    def _ce(self, batch) -> tuple[Tensor, Tensor]:
        check_sequences("batch['x']", batch["x"], ("S", "N", "L"))
        check_indices("batch['y']", batch["y"], batch["x"].shape[:2], self.n_topics,
                       "class labels", "n_topics")
        logits = self._logits(batch)
        ce = F.cross_entropy(logits.flatten(0, 1), batch["y"].flatten().long(),
                             reduction="none")
        return ce.view(self.n_members, -1).mean(1), logits

    def loss(self, batch):
        self._check_batch(batch, ("x", "y"))
        return self._ce(batch)[0]

    @torch.no_grad()
    def evaluate(self, batch):
        self._check_batch(batch, ("x", "y"))
        loss, logits = self._ce(batch)
        return {"loss": loss, "accuracy": (logits.argmax(-1) == batch["y"]).float().mean(1)}


class TopicAttention(_TopicClassifier):
    """The topic-classification attention model of Lu, Mao & Nayak (2021), §3 / Eq. 1-3.

    Each word w has an embedding ν_w ∈ R^d and a key κ_w ∈ R^d. With the global query q the
    score is ``s_w = qᵀκ_w`` and a sentence χ is represented by (LMN §3)::

        ν̄(χ) = Σ_{w∈χ} ν_w exp(s_w) / Z(χ),      Z(χ) = Σ_{w'∈χ} exp(s_w')

    which one of three classifiers turns into topic logits (LMN §5):

    - ``"FC"`` (Attn-FC): ``Uᵀ ν̄`` with U (d × J) fixed, orthonormal columns (Theorem 2);
    - ``"TC"`` (Attn-TC): the same U, trainable;
    - ``"TL"`` (Attn-TL): ``U₂ᵀ ReLU(U₁ᵀ ν̄ + b₁) + b₂`` with U₁ ∈ R^{d×10}, U₂ ∈ R^{10×J}.

    Initialisation (LMN §4-5): keys zero (every score 0: the model starts as a word average);
    embeddings N(0, σ²/d) with ``embed_var`` = σ²/d; the query is fixed, a random direction of
    norm ``query_norm`` -- or, for LMN Appendix B, ``query_var`` = σ_q² draws its entries
    N(0, σ_q²) (one value, or one per member) and ``train_query=True`` trains it. ``freeze`` may hold ``"keys"`` (Attn-TC-KF:
    scores frozen) and/or ``"embeddings"`` (Attn-TC-EF) for the ablation of LMN §5.1.

    The quantities of LMN Eq. 3-10 are ``scores()`` (s) and ``sen_embeddings()`` (v = ‖q‖ν).

    Batches: ``{"x": (S, N, L) long, "y": (S, N) long}`` and optionally ``"mask"`` (S, N, L)
    bool, false at padding (the paper's score −∞ for the padding symbol). Full batch: N = all
    sentences. On the CPU the attention pooling uses a sparse kernel (see :class:`_BagPool`);
    ``fast_pool=False`` uses plain autograd (same numbers to float rounding).
    """

    def __init__(self, vocab: int, n_topics: int = 4, dim: int = 15, classifier: str = "FC",
                 embed_var: float = 1e-6, query_norm: float = 1.0, freeze: Sequence[str] = (),
                 seeds: Sequence[int] = (0,), tl_hidden: int = 10, query_var: float | None = None,
                 train_query: bool = False, fast_pool: bool = True):
        super().__init__()
        self.vocab = check_dim("vocab", vocab, 2)
        self.n_topics = check_dim("n_topics", n_topics, 2)
        self.dim = check_dim("dim", dim, self.n_topics)
        check_choice("classifier", classifier, CLASSIFIERS)
        check_real("embed_var (σ²/d)", embed_var, 0.0, low_open=True)
        check_real("query_norm", query_norm, 0.0, low_open=True)
        n_seeds = len(check_seeds("seeds", seeds))
        if query_var is not None:
            qvs = list(query_var) if isinstance(query_var, (list, tuple)) else [query_var] * n_seeds
            if len(qvs) != n_seeds or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    and v > 0 for v in qvs):
                raise ValueError("query_var (σ_q²) must be None, a finite number > 0, or one such "
                                 f"number per seed ({n_seeds}); got {query_var!r}")
        if isinstance(freeze, str) or not isinstance(freeze, (list, tuple, set, frozenset)):
            raise TypeError(f"freeze must be a tuple of names such as ('keys',); got "
                            f"{type(freeze).__name__} {freeze!r}")
        bad = set(freeze) - {"keys", "embeddings"}
        if bad:
            raise ValueError(f"freeze may hold 'keys' and/or 'embeddings'; got {sorted(bad)}")
        train_query = check_bool("train_query", train_query)
        self.classifier = classifier
        self.fast_pool = check_bool("fast_pool", fast_pool)
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        gens = generators(self.seeds)
        d = self.dim
        self.embedding = stacked_parameter(gens, (vocab, d), normal_init(math.sqrt(embed_var)))
        self.keys = nn.Parameter(torch.zeros(self.n_members, vocab, d))
        q = torch.stack([torch.randn(d, generator=g) for g in gens])
        if query_var is None:
            q = q / q.norm(dim=1, keepdim=True) * query_norm
        else:
            q = q * torch.tensor(qvs, dtype=q.dtype).sqrt().unsqueeze(1)
        if train_query:
            self.query = nn.Parameter(q)
        else:
            self.register_buffer("query", q)
        if classifier in ("FC", "TC"):
            u = torch.stack([torch.linalg.qr(torch.randn(d, self.n_topics, generator=g))[0]
                             for g in gens])
            if classifier == "FC":
                self.register_buffer("U", u)
            else:
                self.U = nn.Parameter(u)
        else:
            self.hidden_layer = StackedLinear(gens, d, check_int("tl_hidden", tl_hidden))
            self.output_layer = StackedLinear(gens, tl_hidden, self.n_topics)
        if "keys" in freeze:
            self.keys.requires_grad_(False)
        if "embeddings" in freeze:
            self.embedding.requires_grad_(False)
        self._structure: tuple[Tensor, _BagStructure] | None = None

    # ------------------------------------------------------------------ the paper's quantities
    def scores(self) -> Tensor:
        """s_w = qᵀκ_w for every word: (S, vocab)."""
        return (self.keys * self.query.unsqueeze(1)).sum(-1)

    def sen_embeddings(self) -> Tensor:
        """v_w = ‖q‖ ν_w for every word (LMN Eq. 3): (S, vocab, d)."""
        return self.embedding * self.query.norm(dim=-1).view(-1, 1, 1)

    def classify(self, v_bar: Tensor) -> Tensor:
        """Topic logits from sentence representations ν̄ (S, N, d) -> (S, N, J)."""
        if self.classifier == "TL":
            return self.output_layer(torch.relu(self.hidden_layer(v_bar)))
        return torch.bmm(v_bar, self.U)

    def _bag_structure(self, flat_x: Tensor) -> _BagStructure:
        cached = self._structure
        n_rows = self.n_members * self.vocab
        if cached is not None and cached[1].n_rows == n_rows and cached[0].shape == flat_x.shape \
                and cached[0].device == flat_x.device and torch.equal(cached[0], flat_x):
            return cached[1]
        st = _BagStructure(flat_x, n_rows)
        self._structure = (flat_x.clone(), st)
        return st

    def forward(self, x: Tensor, mask: Tensor | None = None) -> dict[str, Tensor]:
        """Return ``logits`` (S, N, J), attention ``p`` (S, N, L) and ``v_bar`` (S, N, d)."""
        S, V, d = self.n_members, self.vocab, self.dim
        check_sequences("x", x, ("S", "N", "L"))
        if x.shape[0] != S:
            raise ValueError(f"x must have shape (S={S}, N, L); got {tuple(x.shape)}")
        N, L = x.shape[1], x.shape[2]
        check_token_ids("x", x, V)
        if mask is not None:
            mask = _check_mask(mask, x.shape)
        flat = x + (torch.arange(S, device=x.device) * V).view(S, 1, 1)   # rows of (S·V) tables
        s_x = self.scores().reshape(-1)[flat]                              # (S, N, L)
        if mask is not None:
            s_x = s_x.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s_x, dim=-1)
        table = self.embedding.reshape(S * V, d)
        if self.fast_pool and x.device.type == "cpu":
            st = self._bag_structure(flat.reshape(S * N, L))
            v_bar = _BagPool.apply(p.reshape(S * N, L), table, st).view(S, N, d)
        else:
            v_bar = (p.unsqueeze(-1) * table[flat]).sum(-2)
        return {"logits": self.classify(v_bar), "p": p, "v_bar": v_bar}

    def _logits(self, batch) -> Tensor:
        return self(batch["x"], batch.get("mask"))["logits"]


def _orthogonal_init(t: Tensor, g: torch.Generator) -> None:
    """``init`` for :func:`stacked_parameter` of a (2, d, d) kernel: two independent random
    orthogonal matrices, each scaled by 1/√2 (so W₁W₁ᵀ + W₂W₂ᵀ = I)."""
    for k in range(t.shape[0]):
        q, r = torch.linalg.qr(torch.randn(t.shape[1], t.shape[2], generator=g))
        t[k] = q * torch.sign(torch.diagonal(r)).unsqueeze(0) / math.sqrt(2.0)


class TopicAttentionCNN(_TopicClassifier):
    """Attn-TC-CNN of Lu, Mao & Nayak (2021), Appendix A: Attn-TC whose attention reads word
    *pairs* built by two parallel convolutions (kernel d × 2, stride 1, d kernels).

    Word w has an embedding ν_w and a key κ_w (as in :class:`TopicAttention`). For the pair
    (w, w') of two consecutive words the convolutions give the pair embedding and pair key ::

        e_(w,w') = W₁ ν_w + W₂ ν_w',    k_(w,w') = G₁ κ_w + G₂ κ_w',    s_(w,w') = qᵀ k_(w,w')

    and a sentence of L words, i.e. L − 1 pairs, is represented by ē = Σ_pairs e softmax(s),
    classified by Uᵀē with U (d × J) trainable (Attn-TC). The convolutions have no bias: a key
    bias shifts every score of a sentence alike (no softmax changes), and an embedding bias
    adds the same vector to every ē, i.e. it is a classifier bias.

    Initialisation: keys zero (every pair score 0), embeddings N(0, ``embed_var``), a fixed
    query of norm ``query_norm``, U with orthonormal columns, and W₁, W₂, K₁, K₂ each a random
    orthogonal matrix divided by √2, so that W₁W₁ᵀ + W₂W₂ᵀ = I: a pair then starts at the scale
    of a single word of :class:`TopicAttention`. ``train_cnn=False`` freezes the
    convolutions. The SEN quantities of a pair are :meth:`pair_scores` and
    :meth:`pair_embeddings` (v = ‖q‖ e); :meth:`initial_pair_embeddings` gives their values at
    initialisation (LMN centre them, Fig. 8).

    Batches: ``{"x": (S, N, L) long, "y": (S, N) long}``, L >= 2.
    """

    def __init__(self, vocab: int, n_topics: int = 2, dim: int = 15, embed_var: float = 1e-6,
                 query_norm: float = 1.0, train_cnn: bool = True, seeds: Sequence[int] = (0,)):
        super().__init__()
        self.vocab = check_dim("vocab", vocab, 2)
        self.n_topics = check_dim("n_topics", n_topics, 2)
        self.dim = check_dim("dim", dim, self.n_topics)
        check_real("embed_var", embed_var, 0.0, low_open=True)
        check_real("query_norm", query_norm, 0.0, low_open=True)
        self.train_cnn = check_bool("train_cnn", train_cnn)
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        gens = generators(self.seeds)
        d = self.dim
        self.embedding = stacked_parameter(gens, (vocab, d), normal_init(math.sqrt(embed_var)))
        self.keys = nn.Parameter(torch.zeros(self.n_members, vocab, d))
        q = torch.stack([torch.randn(d, generator=g) for g in gens])
        self.register_buffer("query", q / q.norm(dim=1, keepdim=True) * query_norm)
        self.conv_e = stacked_parameter(gens, (2, d, d), _orthogonal_init)
        self.conv_k = stacked_parameter(gens, (2, d, d), _orthogonal_init)
        self.U = nn.Parameter(torch.stack(
            [torch.linalg.qr(torch.randn(d, self.n_topics, generator=g))[0] for g in gens]))
        self.conv_e.requires_grad_(self.train_cnn)
        self.conv_k.requires_grad_(self.train_cnn)
        with torch.no_grad():
            self.register_buffer("_e0", self._word_tables()[0].clone())

    def _word_tables(self) -> tuple[Tensor, Tensor]:
        """``(E, k)``: E (S, 2, V, d) with E[:, i] = ν W_iᵀ (word w's part of a pair's embedding
        in position i), k (S, 2, V) with k[:, i, w] = qᵀ G_i κ_w."""
        E = torch.einsum("svd,sied->sive", self.embedding, self.conv_e)
        kq = torch.einsum("sied,se->sid", self.conv_k, self.query)           # G_iᵀ q
        return E, torch.einsum("svd,sid->siv", self.keys, kq)

    def _check_pairs(self, pairs) -> Tensor:
        pairs = torch.as_tensor(check_int_array("pairs", pairs, 0, ndim=2)).long()
        if pairs.shape[1] != 2:
            raise ValueError(f"pairs must be a (P, 2) array of word ids; got shape "
                             f"{tuple(pairs.shape)}")
        if len(pairs) and int(pairs.max()) >= self.vocab:
            raise ValueError(f"pairs must hold word ids in [0, {self.vocab - 1}]; got "
                             f"{int(pairs.max())}")
        return pairs

    @torch.no_grad()
    def pair_scores(self, pairs) -> Tensor:
        """s_(a,b) for every pair (a, b) of ``pairs`` (P, 2): (S, P)."""
        pairs = self._check_pairs(pairs)
        k = self._word_tables()[1]
        return k[:, 0, pairs[:, 0]] + k[:, 1, pairs[:, 1]]

    @torch.no_grad()
    def pair_embeddings(self, pairs) -> Tensor:
        """e_(a,b) for every pair of ``pairs`` (P, 2): (S, P, d)."""
        pairs = self._check_pairs(pairs)
        E = self._word_tables()[0]
        return E[:, 0, pairs[:, 0]] + E[:, 1, pairs[:, 1]]

    @torch.no_grad()
    def initial_pair_embeddings(self, pairs) -> Tensor:
        """e_(a,b) at initialisation: (S, P, d)."""
        pairs = self._check_pairs(pairs)
        return self._e0[:, 0, pairs[:, 0]] + self._e0[:, 1, pairs[:, 1]]

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """``logits`` (S, N, J), attention ``p`` over the L − 1 pairs (S, N, L − 1), ``e_bar``
        (S, N, d)."""
        S, V, d = self.n_members, self.vocab, self.dim
        check_sequences("x", x, ("S", "N", "L"))
        if x.shape[0] != S or x.shape[2] < 2:
            raise ValueError(f"x must have shape (S={S}, N, L >= 2); got {tuple(x.shape)}")
        check_token_ids("x", x, V)
        E, k = self._word_tables()
        N, L = x.shape[1], x.shape[2]
        flat = x + (torch.arange(S, device=x.device) * V).view(S, 1, 1)
        a, b = flat[..., :-1], flat[..., 1:]
        s = k[:, 0].reshape(-1)[a] + k[:, 1].reshape(-1)[b]                  # (S, N, L-1)
        p = torch.softmax(s, dim=-1)
        E1, E2 = E[:, 0].reshape(-1, d), E[:, 1].reshape(-1, d)
        if x.device.type == "cpu":     # the sparse pooling kernel of TopicAttention
            st_a, st_b = self._pair_structures(flat)
            pf = p.reshape(S * N, L - 1)
            e_bar = (_BagPool.apply(pf, E1, st_a) + _BagPool.apply(pf, E2, st_b)).view(S, N, d)
        else:
            e_bar = (p.unsqueeze(-1) * (E1[a] + E2[b])).sum(-2)
        return {"logits": torch.bmm(e_bar, self.U), "p": p, "e_bar": e_bar}

    def _pair_structures(self, flat: Tensor) -> tuple[_BagStructure, _BagStructure]:
        """The pooling structures of the first and the second words of every pair (cached for
        the last batch seen: full-batch training reuses them)."""
        cached = getattr(self, "_structures", None)
        if cached is not None and cached[0].shape == flat.shape and torch.equal(cached[0], flat):
            return cached[1]
        S, N, L = flat.shape
        n_rows = S * self.vocab
        sts = (_BagStructure(flat[..., :-1].reshape(S * N, L - 1), n_rows),
               _BagStructure(flat[..., 1:].reshape(S * N, L - 1), n_rows))
        self._structures = (flat.clone(), sts)
        return sts


# --------------------------------------------------------------------------- chapter 3 (SZKS A.10)
class BagOfWordsLogistic(StackedModule):
    """Bag-of-words logistic regression for binary labels (SZKS A.10, Eq. 52) ::

        Pr[y = 1 | x] = σ(wᵀ x̄),     x̄_i = (1/L) #{l : x_l = i}

    with one weight per input word, initialised at zero and no bias (like the full-rank
    :class:`BagOfWordsProxy`). A.10: the proxy with |O| = 2 is this model -- from θ = 0 its two
    columns stay opposite, w = θ_{·,1} − θ_{·,0}, and plain gradient descent on the proxy with
    rate η is gradient descent on this model with rate 2η. Its "β" at position l is
    ``σ((2y − 1) w_{x_l})`` (:meth:`lexical_probe`), the proxy's β^px.

    Batches: ``{"src": (S, B, L) long, "tgt": (S, B, 1) long in {0, 1}}``
    (see :class:`~attn_core.data.ClassificationAsTranslation`).
    """

    def __init__(self, vocab_in: int, seeds: Sequence[int] = (0,)):
        super().__init__()
        self.vocab_in = check_dim("vocab_in", vocab_in)
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        self.w = nn.Parameter(torch.zeros(self.n_members, vocab_in))

    def forward(self, src: Tensor) -> Tensor:
        """The logit wᵀx̄: (S, B)."""
        S = self.n_members
        check_sequences("src", src)
        check_token_ids("src", src, self.vocab_in)
        return torch.gather(self.w, 1, src.reshape(S, -1)).view(src.shape).mean(-1)

    @torch.no_grad()
    def lexical_probe(self, src: Tensor, tgt: Tensor) -> Tensor:
        """β^log_l = σ((2y − 1) w_{x_l}): (S, B, 1, L)."""
        S = self.n_members
        check_pair("src", src, "tgt", tgt)
        check_index_tensor("tgt", tgt, 2, *_LABELS)
        check_token_ids("src", src, self.vocab_in)
        wx = torch.gather(self.w, 1, src.reshape(S, -1)).view(src.shape)
        sign = 2.0 * tgt[..., :1].float() - 1.0                       # (S, B, 1)
        return torch.sigmoid(sign * wx).unsqueeze(2)

    def _bce(self, batch):
        y = batch["tgt"][..., 0].float()
        return F.binary_cross_entropy_with_logits(self(batch["src"]), y, reduction="none").mean(1)

    def _check_labelled(self, batch) -> None:
        """The batch's keys, and its labels tgt (S, B, 1): ints 0 or 1."""
        self._check_batch(batch, ("src", "tgt"))
        check_pair("batch['src']", batch["src"], "batch['tgt']", batch["tgt"])
        check_index_tensor("batch['tgt']", batch["tgt"], 2, *_LABELS)

    def loss(self, batch):
        self._check_labelled(batch)
        return self._bce(batch)

    @torch.no_grad()
    def evaluate(self, batch):
        self._check_labelled(batch)
        logit = self(batch["src"])
        y = batch["tgt"][..., 0]
        loss = F.binary_cross_entropy_with_logits(logit, y.float(), reduction="none").mean(1)
        return {"loss": loss, "accuracy": ((logit > 0).long() == y).float().mean(1)}


# --------------------------------------------------------------------------- chapter 6
# The one-layer encoder-decoder Transformer of chapter 6 (``attn_core.chapters.
# ch6_transformer`` shows it and runs it): the readable one-member model, and the engine's
# stacked one that runs it on each member's parameters.
#: How positions reach the model (see the module docstring).
POSITIONS = ("learned", "sinusoidal", "none", "qk", "qk-cross", "qk-self", "relative")
#: The variants whose learned positions enter queries and keys only.
_QK = ("qk", "qk-cross", "qk-self")
#: Where each sub-layer's LayerNorm sits: "pre" (before the sub-layer, inside the residual
#: branch; a final LayerNorm on each side) or "post" (after the residual sum, Vaswani et al.).
NORMS = ("pre", "post")


def sinusoidal_positions(n: int, d: int, device=None) -> Tensor:
    """Vaswani et al.'s table (n, d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    n, d = check_dim("n", n), check_dim("d", d)
    if device is not None:
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"device must be None or a torch device ('cpu', 'cuda', ...); "
                             f"got {device!r} ({e})") from None
    pos = torch.arange(n, dtype=torch.float32, device=device)[:, None]
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32, device=device)
                     * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return pe


# ------------------------------------------------------------------ the model, readable
def _check_bias(bias, K: int, T: int, L: int) -> None:
    """An attention bias: None, or a float tensor that broadcasts to (K, T, L)."""
    if bias is None:
        return
    if not isinstance(bias, Tensor) or not bias.is_floating_point():
        raise TypeError(f"bias must be None or a float tensor (K, T, L) = ({K}, {T}, {L}); "
                        f"got {type(bias).__name__}")
    try:
        if torch.broadcast_shapes(bias.shape, (K, T, L)) != (K, T, L):
            raise RuntimeError
    except RuntimeError:
        raise ValueError(f"bias must broadcast to (K, T, L) = ({K}, {T}, {L}); got shape "
                         f"{tuple(bias.shape)}") from None


def _check_attention(d: int, x_q, x_k, x_v, causal, uniform) -> None:
    """:class:`MultiHeadAttention`'s inputs: widths, batches and lengths that fit, named
    (they reached torch's own errors, and a causal mask over unequal lengths was applied as
    if they were one sequence)."""
    check_bool("causal", causal)
    check_bool("uniform", uniform)
    for name, x in (("x_q", x_q), ("x_k", x_k), ("x_v", x_v)):
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise TypeError(f"{name} must be a float tensor (B, length, {d}); got "
                            f"{type(x).__name__} {getattr(x, 'dtype', '')}")
        if x.dim() != 3 or x.shape[-1] != d or x.shape[0] != x_q.shape[0]:
            raise ValueError(f"{name} must have shape (B, length, {d}) with x_q's B "
                             f"({x_q.shape[0] if x_q.dim() else '?'}); got {tuple(x.shape)}")
    if x_k.shape[1] != x_v.shape[1]:
        raise ValueError(f"x_k and x_v must have one length (the positions attended); got "
                         f"{x_k.shape[1]} and {x_v.shape[1]}")
    if x_k.shape[1] == 0 or x_q.shape[1] == 0:
        raise ValueError(f"x_q, x_k and x_v must hold at least one position each; got lengths "
                         f"{x_q.shape[1]}, {x_k.shape[1]}")
    if causal and x_q.shape[1] != x_k.shape[1]:
        raise ValueError(f"causal=True masks a sequence's later steps from its earlier ones: "
                         f"x_q and x_k must have one length; got {x_q.shape[1]} and "
                         f"{x_k.shape[1]}")
    if causal and uniform:
        raise ValueError("causal and uniform cannot both be True: uniform attention (1/L "
                         "over every position) ignores a mask")


class MultiHeadAttention(nn.Module):
    """K heads of scaled dot-product attention, then the output map W_O::

        α^k = softmax(Q_k K_kᵀ / √d_k + bias_k),  head_k = α^k V_k,
        out = W_O [head_1; ...; head_K]

    with Q = x_q W_Q, K = x_k W_K, V = x_v W_V (each followed by a bias)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        d, heads = check_dim("d", d), check_dim("heads", heads)
        if d % heads:
            raise ValueError(f"d_model ({d}) must be a multiple of heads ({heads})")
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x_q, x_k, x_v, bias=None, causal=False, uniform=False):
        """x_q (B, T, d), x_k and x_v (B, L, d) -> out (B, T, d), α (B, K, T, L)."""
        _check_attention(self.q.in_features, x_q, x_k, x_v, causal, uniform)
        B, T, d = x_q.shape
        L, K = x_k.shape[1], self.heads
        _check_bias(bias, K, T, L)
        q = self.q(x_q).view(B, T, K, d // K).transpose(1, 2)  # (B, K, T, d_k)
        k = self.k(x_k).view(B, L, K, d // K).transpose(1, 2)  # (B, K, L, d_k)
        v = self.v(x_v).view(B, L, K, d // K).transpose(1, 2)  # (B, K, L, d_k)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // K)    # (B, K, T, L)
        if bias is not None:
            scores = scores + bias                              # (K, T, L)
        if causal:  # step t sees steps <= t only
            future = torch.ones(T, L, dtype=torch.bool, device=x_q.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        if uniform:  # α frozen at 1/L (SZKS §3.2's β^uf model; never with causal)
            alpha = torch.full_like(scores, 1.0 / L)
        else:
            alpha = torch.softmax(scores, dim=-1)               # over positions l
        heads = (alpha @ v).transpose(1, 2).reshape(B, T, d)    # [head_1; ...; head_K]
        return self.o(heads), alpha


class FeedForward(nn.Module):
    """W_2 ReLU(W_1 x + b_1) + b_2."""

    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))


class TransformerSeq2Seq(nn.Module):
    """One encoder layer and one decoder layer; the chapter's model, one member.

    Encoder:  h = x + SelfAttn(LN(x));   h = h + FFN(LN(h));   H = LN(h)
    Decoder:  y = z + CausalSelfAttn(LN(z));
              y = y + CrossAttn(LN(y), H);        <- α, the attention the chapter measures
              y = y + FFN(LN(y));   logits = W_out LN(y)
    with x, z the embeddings of the source and of ``[BOS, y_1..y_{T-1}]`` (plus positions for
    "learned"/"sinusoidal"). ``norm="post"`` moves each LayerNorm after its residual sum
    (y = LN(y + SubLayer(y))) and drops the final ones. ``attention="uniform"`` freezes the
    cross-attention at 1/L. Parameters start as PyTorch's defaults; the engine draws them
    from each member's own seed (:class:`StackedTransformer`).
    """

    def __init__(self, vocab: int, d_model: int = 64, heads: int = 4, d_ff: int = 128,
                 positions: str = "learned", norm: str = "pre", attention: str = "learned",
                 max_len: int = 64, pos_std: float = 1.0, shared_positions: bool = True,
                 emb_std: float = 1.0):
        super().__init__()
        self.vocab = check_dim("vocab", vocab, 2)
        # forward checks its token ids, unless a StackedTransformer (vmap) runs it
        self.check_inputs = True
        # the word embeddings' initial scale (PyTorch's nn.Embedding: N(0, 1))
        self.emb_std = check_real("emb_std", emb_std, 0.0)
        # the learned positions' initial scale, against the token embeddings' N(0, 1)
        self.pos_std = check_real("pos_std", pos_std, 0.0)
        # one table of learned positions for both sides, or the decoder its own
        self.shared_positions = check_bool("shared_positions", shared_positions)
        d = self.d_model = check_dim("d_model", d_model)
        self.heads = check_dim("heads", heads)
        check_dim("d_ff", d_ff)
        self.max_len = check_dim("max_len", max_len)
        self.positions = check_choice("positions", positions, POSITIONS)
        self.norm = check_choice("norm", norm, NORMS)
        self.attention = check_choice("attention", attention, ATTENTION_MODES)
        self.emb = nn.Embedding(vocab, d)          # shared by source and target words
        if positions in ("learned",) + _QK:
            self.pos = nn.Parameter(torch.randn(max_len, d))
        if positions == "relative":   # a bias per attention, head and offset t - l
            self.rel = nn.Parameter(torch.zeros(3, heads, 2 * max_len - 1))
        self.enc_attn = MultiHeadAttention(d, heads)
        self.enc_ffn = FeedForward(d, d_ff)
        self.dec_attn = MultiHeadAttention(d, heads)
        self.cross = MultiHeadAttention(d, heads)
        self.dec_ffn = FeedForward(d, d_ff)
        # LayerNorms: encoder 2 + final, decoder 3 + final ("post": the finals are unused)
        self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(7))
        self.out = nn.Linear(d, vocab)
        if positions in ("learned",) + _QK and not shared_positions:
            # registered last: drawn after everything else, so the rest of a member is the
            # shared-positions model of the same seed
            self.pos_dec = nn.Parameter(torch.randn(max_len, d))

    # -------------------------------------------------------------------- positions
    def _absolute(self, n: int, device, decoder: bool = False) -> Tensor | None:
        """The position vectors added to positions 0..n-1 (None for "none"/"relative")."""
        if n > self.max_len:
            raise ValueError(f"sequences of length {n} exceed max_len={self.max_len}")
        if self.positions in ("learned",) + _QK:
            table = self.pos if self.shared_positions or not decoder else self.pos_dec
            return table[:n]
        if self.positions == "sinusoidal":
            return sinusoidal_positions(n, self.d_model, device)
        return None

    def _bias(self, which: int, T: int, L: int) -> Tensor | None:
        """Attention ``which``'s relative-position bias (K, T, L): rel[which, k, t - l]."""
        if self.positions != "relative":
            return None
        offset = torch.arange(T, device=self.rel.device)[:, None] - torch.arange(
            L, device=self.rel.device)[None, :]
        return self.rel[which][:, offset + self.max_len - 1]

    def _block(self, i: int, x: Tensor, sublayer) -> Tensor:
        """One residual sub-layer with LayerNorm i: pre-norm x + f(LN(x)), or post-norm
        LN(x + f(x)). ``sublayer(normed) -> (out, extra)``; returns (new x, extra)."""
        if self.norm == "pre":
            out, extra = sublayer(self.ln[i](x))
            return x + out, extra
        out, extra = sublayer(x)
        return self.ln[i](x + out), extra

    # ----------------------------------------------------------------- the two sides
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor | None]:
        """src (B, L) -> encoder output H (B, L, d) and the position vectors used for the
        keys of the cross-attention ("qk", "qk-cross"; else None)."""
        L = src.shape[1]
        x, p = self.emb(src), self._absolute(L, src.device)
        if p is not None and self.positions not in _QK:
            x = x + p

        def attend(n):
            qk_in = n + p if self.positions in ("qk", "qk-self") else n
            return self.enc_attn(qk_in, qk_in, n, bias=self._bias(0, L, L))

        h, _ = self._block(0, x, attend)
        h, _ = self._block(1, h, lambda n: (self.enc_ffn(n), None))
        return (self.ln[2](h) if self.norm == "pre" else h), (
            p if self.positions in ("qk", "qk-cross") else None)

    def decode_to_cross(self, tgt_in: Tensor) -> tuple[Tensor, Tensor | None]:
        """tgt_in (B, T) -> the decoder's residual stream just before the cross-attention
        (B, T, d) and its position vectors for "qk", "qk-cross" (else None)."""
        T = tgt_in.shape[1]
        z, p = self.emb(tgt_in), self._absolute(T, tgt_in.device, decoder=True)
        if p is not None and self.positions not in _QK:
            z = z + p

        def attend(n):
            qk_in = n + p if self.positions in ("qk", "qk-self") else n
            return self.dec_attn(qk_in, qk_in, n, bias=self._bias(1, T, T), causal=True)

        y, _ = self._block(3, z, attend)
        return y, (p if self.positions in ("qk", "qk-cross") else None)

    def cross_attend(self, y: Tensor, enc: Tensor, p_dec, p_enc):
        """The cross-attention sub-layer: (new y (B, T, d), α (B, K, T, L))."""
        T, L = y.shape[1], enc.shape[1]

        def attend(n):
            q_in = n + p_dec if p_dec is not None else n
            k_in = enc + p_enc if p_enc is not None else enc
            return self.cross(q_in, k_in, enc, bias=self._bias(2, T, L),
                              uniform=self.attention == "uniform")

        return self._block(4, y, attend)

    def finish(self, y: Tensor) -> Tensor:
        """The decoder after the cross-attention: FFN sub-layer, final LN, logits."""
        y, _ = self._block(5, y, lambda n: (self.dec_ffn(n), None))
        return self.out(self.ln[6](y) if self.norm == "pre" else y)

    def forward(self, src: Tensor, tgt_in: Tensor) -> dict[str, Tensor]:
        """src (B, L), tgt_in (B, T) token ids -> logits (B, T, V), alpha (B, K, T, L)."""
        if self.check_inputs:      # ids in [0, V) (the stacked model checks all members)
            check_token_batches(src, tgt_in, self.vocab)
        enc, p_enc = self.encode(src)
        y, p_dec = self.decode_to_cross(tgt_in)
        y, alpha = self.cross_attend(y, enc, p_dec, p_enc)
        return {"logits": self.finish(y), "alpha": alpha}

    @torch.no_grad()
    def lexical_probe(self, src: Tensor, tgt_in: Tensor, tgt: Tensor) -> Tensor:
        """β_{t,l}: the probability of the right word y_t if every head of the
        cross-attention attended only to source position l (SZKS §2.2's probe, for this
        model: the cross-attention's output becomes W_O [W_V H_l; ...]). (B, T, L)."""
        if self.check_inputs:
            check_token_batches(src, tgt_in, self.vocab)
            check_indices("tgt", tgt, tgt_in.shape, self.vocab)
        enc, p_enc = self.encode(src)
        y, p_dec = self.decode_to_cross(tgt_in)
        B, T, d = y.shape
        L = enc.shape[1]
        attn = self.cross
        # with α one-hot at l every head reads V_l: the output is W_O V_l + b_O
        read = attn.o(attn.v(enc))                               # (B, L, d)
        if self.norm == "pre":
            y_l = y[:, :, None, :] + read[:, None, :, :]         # (B, T, L, d)
        else:
            y_l = self.ln[4](y[:, :, None, :] + read[:, None, :, :])
        logits = self.finish(y_l.reshape(B, T * L, d)).view(B, T, L, -1)
        logp = torch.log_softmax(logits, dim=-1)
        idx = tgt[:, :, None, None].expand(B, T, L, 1)
        return logp.gather(-1, idx).squeeze(-1).exp()


# --------------------------------------------------------------- the engine's model
class StackedTransformer(Seq2SeqObjective, StackedModule):
    """S independent :class:`TransformerSeq2Seq` members for the engine.

    Every parameter is stacked (S, ...) under its module path (dots written ``__``). Member
    m's parameters are PyTorch's default initialisation of :class:`TransformerSeq2Seq`,
    drawn parameter by parameter in registration order from
    ``torch.Generator().manual_seed(seeds[m])`` (:func:`_draw`), so a member is
    reproducible on its own and does not depend on the other members or the global seed.

    Batches as :class:`~attn_core.models.Seq2Seq`: ``src`` (S, B, L), ``tgt_in``/``tgt``
    (S, B, T), optionally ``align``; ``forward`` returns ``logits`` (S, B, T, V) and the
    cross-attention ``alpha`` (S, K, B, T, L); ``loss``/``evaluate`` are Seq2Seq's
    (:class:`~attn_core.models.Seq2SeqObjective`).
    """

    def __init__(self, vocab: int, d_model: int = 64, heads: int = 4, d_ff: int = 128,
                 positions: str = "learned", norm: str = "pre", attention: str = "learned",
                 max_len: int = 64, pos_std: float = 1.0, shared_positions: bool = True,
                 emb_std: float = 1.0, seeds: Sequence[int] = (0,)):
        super().__init__()
        self.seeds = check_seeds("seeds", seeds)
        self.n_members = len(self.seeds)
        kwargs = dict(vocab=vocab, d_model=d_model, heads=heads, d_ff=d_ff,
                      positions=positions, norm=norm, attention=attention, max_len=max_len,
                      pos_std=pos_std, shared_positions=shared_positions, emb_std=emb_std)
        base = TransformerSeq2Seq(**kwargs)
        base.check_inputs = False    # checked here for all members at once (no .item in vmap)
        self.vocab, self.heads, self.attention = base.vocab, base.heads, base.attention
        # the readable module, not registered: its parameters are replaced by each member's
        object.__setattr__(self, "_base", base)
        self._names = [n for n, _ in base.named_parameters()]
        members = [_draw(base, g) for g in generators(self.seeds)]
        self.params = nn.ParameterDict({
            n.replace(".", "__"): nn.Parameter(torch.stack([m[n] for m in members]))
            for n in self._names})
        if attention == "uniform":  # the cross-attention's queries and keys do nothing
            for n in self._names:
                if n.startswith(("cross.q.", "cross.k.")):
                    self.params[n.replace(".", "__")].requires_grad_(False)

    def _member_params(self) -> dict[str, Tensor]:
        return {n: self.params[n.replace(".", "__")] for n in self._names}

    def _call(self, module: nn.Module, prefix: str, *args: Tensor):
        """``module(*args)`` for every member on its own parameters (named ``prefix`` +
        the readable model's names) and inputs (each arg (S, ...)), stacked on dim 0."""
        params = {prefix + n: t for n, t in self._member_params().items()}

        def one(p, *xs):
            return functional_call(module, p, xs, strict=True)

        if self.n_members == 1:
            # squeeze, not t[0]: a view whose backward copies nothing
            out = one({n: t.squeeze(0) for n, t in params.items()},
                      *(a.squeeze(0) for a in args))
            return ({k: v.unsqueeze(0) for k, v in out.items()} if isinstance(out, dict)
                    else out.unsqueeze(0))
        return torch.vmap(one)(params, *args)

    def forward(self, src: Tensor, tgt_in: Tensor) -> dict[str, Tensor]:
        """``logits`` (S, B, T, V) and the cross-attention ``alpha`` (S, K, B, T, L)."""
        _check_inputs(src, tgt_in, self.n_members, self.vocab)
        out = self._call(self._base, "", src, tgt_in)
        return {"logits": out["logits"], "alpha": out["alpha"].transpose(1, 2)}

    @torch.no_grad()
    def lexical_probe(self, src: Tensor, tgt_in: Tensor, tgt: Tensor) -> Tensor:
        """Every member's :meth:`TransformerSeq2Seq.lexical_probe`: (S, B, T, L)."""
        _check_inputs(src, tgt_in, self.n_members, self.vocab)
        check_indices("tgt", tgt, tgt_in.shape, self.vocab)
        return self._call(_Probe(self._base), "model.", src, tgt_in, tgt)

    def member_module(self, m: int = 0) -> TransformerSeq2Seq:
        """Member ``m`` as a plain :class:`TransformerSeq2Seq` with its weights (a copy)."""
        m = check_int("m", m, 0, self.n_members - 1)
        out = copy.deepcopy(self._base)
        out.check_inputs = True
        out.load_state_dict({n: t.detach()[m].clone() for n, t in
                             self._member_params().items()})
        return out


class _Probe(nn.Module):
    """``model.lexical_probe`` as a module's forward (for :func:`functional_call`)."""

    def __init__(self, model: TransformerSeq2Seq):
        super().__init__()
        self.model = model

    def forward(self, src, tgt_in, tgt):
        return self.model.lexical_probe(src, tgt_in, tgt)


def _draw(base: nn.Module, g: torch.Generator) -> dict[str, Tensor]:
    """One member's parameters: PyTorch's default initialisation of each of ``base``'s
    parameters, drawn in the order of ``named_modules`` from ``g`` (the decoder's own
    positions, if any, last): Linear weight and bias U(±1/√fan_in), Embedding
    N(0, emb_std²) (PyTorch's N(0, 1) by default),
    learned positions N(0, pos_std²), LayerNorm 1 and 0, the relative-position biases 0."""
    params = [(f"{mod_name}.{p_name}" if mod_name else p_name, mod, p_name, p)
              for mod_name, mod in base.named_modules()
              for p_name, p in mod.named_parameters(recurse=False)]
    params.sort(key=lambda item: item[0] == "pos_dec")  # stable: only pos_dec moves
    out = {}
    for name, mod, p_name, p in params:
        t = torch.empty_like(p)
        if isinstance(mod, nn.Linear):
            bound = 1.0 / math.sqrt(mod.in_features)
            t.uniform_(-bound, bound, generator=g)
        elif isinstance(mod, nn.LayerNorm):
            t.fill_(1.0 if p_name == "weight" else 0.0)
        elif isinstance(mod, nn.Embedding):
            t.normal_(0.0, base.emb_std, generator=g)
        elif p_name in ("pos", "pos_dec"):
            t.normal_(0.0, base.pos_std, generator=g)
        else:  # rel
            t.zero_()
        out[name] = t
    return out


def _check_inputs(src, tgt_in, n_members: int, vocab: int) -> None:
    """Seq2Seq's check of the two batches ((S, B, L) and (S, B, T), non-empty, the same S and
    B), then one batch per member and ids in [0, vocab): the readable model's plain
    embedding would otherwise fail inside the per-member call."""
    check_pair("src", src, "tgt_in", tgt_in)
    for name, t in (("src", src), ("tgt_in", tgt_in)):
        if t.shape[0] != n_members:
            raise ValueError(f"{name} has leading dimension {t.shape[0]} but the model has "
                             f"{n_members} members")
        check_token_ids(name, t, vocab)
