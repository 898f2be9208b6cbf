"""Data generators for every chapter.

A *task* draws one member's batch from a ``torch.Generator``::

    batch = task.sample(generator, batch_size)   # dict of tensors, no member dimension

The training engine keeps one generator per member (seeded by that member's data seed) and stacks
the members' batches, so a batched run and a loop of single runs see exactly the same data.
A full-batch task that holds one data set drawn from a seed (chapter 2's) has
``for_seed(seed)``: the engine then trains each member on the data set of its own data seed.

Tasks:

- :class:`KeywordTask` -- SZKS §6.1: length-L sequences over V tokens, positive iff the keyword
  appears (exactly once), classes balanced.
- :class:`CopyTask` -- SZKS §3.3 / §6.2: copy a sequence (or apply a fixed permutation to it),
  inputs drawn as permutations, distinct tokens from a larger vocabulary, i.i.d. tokens, or a
  mixture of permutations of two disjoint sets.
- :class:`TopicTask` -- LMN §3: J topics, each sentence one topic word plus m non-topic words.
- :class:`PurityGradedTask` -- a synthetic stand-in for LMN's SST-2 "best" vs "powerful"
  competition (a frequent impure word against rare pure ones).
- :class:`MarkovPairTask` -- LMN Appendix A: two Markov-chain topics with topic word pairs.
- :func:`read_sst2_tsv`, :class:`BagTask`, :func:`sst2_task` -- GLUE SST-2 as padded bags of words.
- :class:`ParallelCorpusTask`, :data:`TOY_CORPUS`, :func:`encode_corpus` -- chapter 3's parallel
  corpora: synthetic with a hidden dictionary, and the slides' "Dieser Film ist großartig".
- :class:`ClassificationAsTranslation` -- a classification task as T = 1 translation (SZKS §2.4).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from .checks import (check_bool, check_choice, check_dim, check_generator, check_int,
                     check_int_array, check_real, check_token_ids, is_int)

__all__ = ["KeywordTask", "CopyTask", "EndToken", "TopicTask", "COPY_DISTRIBUTIONS",
           "EOS_SIDES", "topic_sentences", "PurityGradedTask", "MarkovPairTask",
           "read_sst2_tsv", "BagTask", "sst2_task", "find_sst2", "SST2_URL", "TOY_CORPUS",
           "encode_corpus", "ParallelCorpusTask", "ClassificationAsTranslation", "copy_vocab"]


def _check_gen(generator) -> None:
    check_generator("generator", generator)


def _random_permutations(n_rows: int, n: int, generator: torch.Generator) -> Tensor:
    """``n_rows`` independent uniform permutations of ``range(n)``: (n_rows, n) long."""
    return torch.rand(n_rows, n, generator=generator).argsort(dim=1)


# --------------------------------------------------------------------------- chapter 1
@dataclass(frozen=True)
class KeywordTask:
    """Keyword detection (SZKS §6.1; the blog's gated classifier in sequence form).

    Each input is ``length`` tokens from ``{0..vocab-1}``; it is positive iff the keyword (token
    ``keyword``, the paper's "1") appears, and then exactly once. Classes are balanced. Sampling
    the label first, then a uniform position for the keyword and uniform non-keyword tokens
    elsewhere, gives exactly the distribution of the paper's rejection sampler (uniform sequences
    conditioned on the label and on "at most one keyword").

    Batch: ``{"x": (B, L) long, "y": (B,) float, "pos": (B,) long}`` where ``pos`` is the keyword's
    position (-1 for negatives).
    """

    length: int = 40
    vocab: int = 40
    keyword: int = 0

    def __post_init__(self):
        check_dim("length", self.length, 2)
        check_dim("vocab", self.vocab, 2)
        if not is_int(self.keyword):
            raise TypeError(f"keyword must be an int in [0, {self.vocab - 1}]; got "
                            f"{type(self.keyword).__name__} {self.keyword!r}")
        if not 0 <= self.keyword < self.vocab:
            raise ValueError(f"keyword must be an int in [0, {self.vocab - 1}]; got {self.keyword!r}")

    @property
    def model_vocab(self) -> int:
        return self.vocab

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        _check_gen(generator)
        B, L = check_dim("batch_size", batch_size), self.length
        y = (torch.rand(B, generator=generator) < 0.5).float()
        # non-keyword tokens: uniform over the vocab without the keyword
        x = torch.randint(0, self.vocab - 1, (B, L), generator=generator)
        x = x + (x >= self.keyword).long()
        pos = torch.randint(0, L, (B,), generator=generator)
        rows = torch.nonzero(y > 0).squeeze(1)
        x[rows, pos[rows]] = self.keyword
        pos = torch.where(y > 0, pos, torch.full_like(pos, -1))
        return {"x": x, "y": y, "pos": pos}


# --------------------------------------------------------------------------- chapters 3-5
COPY_DISTRIBUTIONS = ("permutation", "distinct", "iid", "mixture")
#: Where :class:`CopyTask`'s end token goes (``eos_side``).
EOS_SIDES = ("both", "source", "target")


def copy_vocab(length: int, distribution: str, vocab: int | None, name: str = "vocab") -> int:
    """The vocabulary V of a :class:`CopyTask`: ``vocab``, or the distribution's default when
    None; a V the distribution cannot draw L = ``length`` items from is refused (the message
    calls it ``name``)."""
    L = length
    default = {"permutation": L, "distinct": L, "iid": L, "mixture": 2 * L}[distribution]
    V = default if vocab is None else check_dim(name, vocab, 1)
    if distribution == "permutation" and V != L:
        raise ValueError(f"{name} must equal length ({L}) for 'permutation'; got {V}. "
                         "Use distribution='distinct' for L items out of V > L.")
    if distribution == "distinct" and V < L:
        raise ValueError(f"{name} must be >= length ({L}) for distinct sampling; got {V}")
    if distribution == "mixture" and V != 2 * L:
        raise ValueError(f"{name} must be 2*length ({2 * L}) for 'mixture'; got {V}")
    return V


@dataclass(frozen=True, kw_only=True)
class EndToken:
    """Where a copy task's end token is and what it may do (chapter 7): the keyword-only
    options of :class:`CopyTask`, also those of chapter 7's config. See :class:`CopyTask`."""

    eos_side: str = "both"
    start: bool = False
    mask_end: bool = False
    end_loss: bool = True
    end_score_grad: bool = True
    end_state_grad: bool = True
    mask_start: bool = False
    min_length: int | None = None

    def end_token_options(self) -> dict:
        """These options by name (to build a :class:`CopyTask` with them)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(EndToken)}


@dataclass(frozen=True)
class CopyTask(EndToken):
    """Sequence copying (SZKS §3.3, Fig. 2; §6.2 for a fixed permutation function).

    Input distributions (``distribution``), each of length ``length`` = L:

    - ``"permutation"``: a uniform permutation of the L items ``{0..L-1}`` (V = L; the authors'
      code needs its no-repetition flag for this -- its default samples *with* repetition);
    - ``"distinct"``: L distinct items drawn from ``vocab`` = V >= L, in random order (the
      "40 of 60" control when V = 1.5 L); with V = L this is ``"permutation"``;
    - ``"iid"``: each position uniform over V items, independently (repetitions allowed);
    - ``"mixture"``: with probability 1/2 a permutation of ``{0..L-1}``, else of ``{L..2L-1}``
      (V = 2L; SZKS Fig. 2 middle).

    The target is the input itself (``target_permutation=None``) or ``x[π]`` for a fixed
    permutation π of the positions (SZKS §6.2). Token ``vocab`` is the decoder's start symbol.
    With ``eos=True`` (the authors' code) token ``vocab`` ends the source and the target and
    ``vocab + 1`` is the start symbol: sequences have L + 1 tokens, the last one aligned to
    the source's end.

    Batch: ``src`` (B, L'), ``tgt_in`` = [BOS, tgt[:-1]] (B, L'), ``tgt`` (B, L') and
    ``align`` (B, L'): the source position each target token comes from (L' = L, or L + 1
    with ``eos``).

    The end token taken apart (chapter 7; each option at its default leaves the batch and its
    numbers exactly as above):

    - ``eos_side``: with ``eos``, where the end token is: ``"both"`` (the authors' code),
      ``"source"`` only (the target is the L copied tokens) or ``"target"`` only (the decoder
      must say where the copy ends; the source is the L tokens). A target end token has no
      source position: the batch then carries ``align_mask`` (B, T), False at that step
      (also with ``mask_end``), and attention accuracy counts only the copied tokens.
    - ``start``: a start token at the front of the source (its own id), shifting every
      source position by one.
    - ``mask_end``: the decoder may not attend to the source's end token: the batch carries
      ``src_mask`` (B, L'), False there.
    - ``end_loss=False``: the end step's loss is left out: ``loss_mask`` (B, T), False at
      the target's end token.
    - ``end_score_grad=False``: at the target's end step the attention scores pass no
      gradient (the step still trains everything else): ``score_stop`` (B, T), True there.
    - ``end_state_grad=False``: the end step's loss trains only the output layers: its
      decoder state and context enter them detached (``state_stop`` (B, T), True there), so
      no gradient of it reaches the attention, the encoder or the decoder.
    - ``mask_start``: the decoder may not attend to the source's start token (``src_mask``).
    - ``min_length``: every example its own length, uniform in ``[min_length, length]``
      (with the end token on both sides, or on neither): a permutation of the ℓ words
      ``0 .. ℓ-1`` (``"permutation"``: every word of an example co-occurs with every other
      equally often, as at one length), else the first ℓ words of the distribution's draw;
      the source padded on the left (its last word, or its end token,
      stays last, where the encoder hands over to the decoder), the target on the right,
      with a padding token the batch masks out of the attention (``src_mask``), the loss
      (``loss_mask``) and attention accuracy (``align_mask``).

    Token ids: the V data tokens ``0 .. V-1``, then the end token (``eos``), the source's
    start token (``start``), the padding token (``min_length``) and the decoder's start
    symbol, in that order.
    """

    length: int = 20
    vocab: int | None = None
    distribution: str = "permutation"
    target_permutation: tuple[int, ...] | None = None
    eos: bool = False
    _align: Tensor = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        L = check_dim("length", self.length, 1)
        check_choice("distribution", self.distribution, COPY_DISTRIBUTIONS)
        for name in ("eos", "start", "mask_end", "end_loss", "end_score_grad",
                     "end_state_grad", "mask_start"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False; got {getattr(self, name)!r}")
        check_choice("eos_side", self.eos_side, EOS_SIDES)
        if not self.eos and self.eos_side != "both":
            raise ValueError(f"eos_side={self.eos_side!r} needs eos=True (without an end "
                             f"token there is no side to put it on)")
        if self.mask_end and not self.eos_in_source:
            raise ValueError("mask_end=True needs an end token in the source (eos=True, "
                             f"eos_side 'both' or 'source'); got eos={self.eos}, "
                             f"eos_side={self.eos_side!r}")
        if self.min_length is not None:
            check_dim("min_length", self.min_length, 1)
            if self.min_length > L:
                raise ValueError(f"min_length must be in [1, length={L}]; got "
                                 f"{self.min_length}")
            if self.eos_side != "both" or self.start:
                raise ValueError("min_length (sequences of varying length) needs the end "
                                 "token on both sides or on neither, and no start token; "
                                 f"got eos={self.eos}, eos_side={self.eos_side!r}, "
                                 f"start={self.start}")
            if self.target_permutation is not None:
                raise ValueError("min_length does not combine with target_permutation "
                                 "(a fixed permutation of L positions)")
        if self.mask_start and not self.start:
            raise ValueError("mask_start=True needs a start token (start=True)")
        for name in ("end_loss", "end_score_grad", "end_state_grad"):
            if not getattr(self, name) and not self.eos_in_target:
                raise ValueError(f"{name}=False needs an end token in the target (eos=True, "
                                 f"eos_side 'both' or 'target'); got eos={self.eos}, "
                                 f"eos_side={self.eos_side!r}")
        object.__setattr__(self, "vocab", copy_vocab(L, self.distribution, self.vocab))
        if self.target_permutation is not None:
            tp = self.target_permutation
            if not isinstance(tp, (list, tuple, range)):
                raise TypeError(f"target_permutation must be a tuple of ints, a permutation of "
                                f"range({L}); got {type(tp).__name__} {tp!r}")
            perm = tuple(check_int_array("target_permutation", tp, 0, L - 1, ndim=1).tolist())
            if sorted(perm) != list(range(L)):
                raise ValueError(f"target_permutation must be a permutation of range({L})")
            object.__setattr__(self, "target_permutation", perm)
            align = torch.tensor(perm)
        else:
            align = torch.arange(L)
        if self.start:
            align = align + 1
        if self.eos_in_target:   # the target's end: the source's end token, or none (0)
            end = L + int(self.start) if self.eos_in_source else 0
            align = torch.cat([align, torch.tensor([end])])
        object.__setattr__(self, "_align", align)

    @property
    def eos_in_source(self) -> bool:
        """Whether the source ends with the end token."""
        return self.eos and self.eos_side in ("both", "source")

    @property
    def eos_in_target(self) -> bool:
        """Whether the target ends with the end token."""
        return self.eos and self.eos_side in ("both", "target")

    @property
    def bos(self) -> int:
        """The decoder's start symbol."""
        return self.vocab + int(self.eos) + int(self.start) + int(self.min_length is not None)

    @property
    def pad_token(self) -> int | None:
        """The padding token (``min_length``), else None."""
        return self.bos - 1 if self.min_length is not None else None

    @property
    def eos_token(self) -> int | None:
        """The end-of-sequence token (``eos=True``), else None."""
        return self.vocab if self.eos else None

    @property
    def start_token(self) -> int | None:
        """The source's start token (``start=True``), else None."""
        return self.vocab + int(self.eos) if self.start else None

    @property
    def model_vocab(self) -> int:
        """Vocabulary size the model needs: the V data tokens, the start symbol and (with
        ``eos``, ``start``) the end symbol and the source's start token."""
        return self.bos + 1

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        _check_gen(generator)
        B, L, V = check_dim("batch_size", batch_size), self.length, self.vocab
        if self.distribution in ("permutation", "distinct"):
            src = _random_permutations(B, V, generator)[:, :L]
        elif self.distribution == "iid":
            src = torch.randint(0, V, (B, L), generator=generator)
        else:  # mixture
            second = torch.rand(B, 1, generator=generator) < 0.5
            src = _random_permutations(B, L, generator) + L * second.long()
        if self.start:
            src = torch.cat([torch.full((B, 1), self.start_token, dtype=torch.long), src], 1)
        if self.eos_in_source:
            src = torch.cat([src, torch.full((B, 1), self.vocab, dtype=torch.long)], dim=1)
        tgt = src[:, self._align]
        if self.eos_in_target and not self.eos_in_source:
            tgt[:, -1] = self.vocab           # the end token, from no source position
        tgt_in = torch.cat([torch.full((B, 1), self.bos, dtype=torch.long), tgt[:, :-1]], dim=1)
        align = self._align.expand(B, len(self._align)).clone()
        batch = {"src": src, "tgt_in": tgt_in, "tgt": tgt, "align": align}
        if self.min_length is not None:
            return self._varying(batch, generator)
        return self._masks(batch)

    def _masks(self, batch: dict, real: Tensor | None = None) -> dict[str, Tensor]:
        """``batch`` with the masks its options ask for (see the class docstring), read
        from the tokens: the end steps are where the target holds the end token, the
        masked source positions where the source holds the end, start or padding token.
        ``real`` (B, T): the target steps that are not padding (None: every step)."""
        src, tgt = batch["src"], batch["tgt"]
        ends = (tgt == self.vocab if self.eos_in_target
                else torch.zeros_like(tgt, dtype=torch.bool))
        keep = None if real is None else src != self.pad_token
        for masked, token in ((self.mask_end, self.eos_token), (self.mask_start,
                                                                 self.start_token)):
            if masked:
                keep = (src != token) if keep is None else keep & (src != token)
        # a target end token with no source position to attend to
        nowhere = self.eos_in_target and (not self.eos_in_source or self.mask_end)
        masks = {"align_mask": (real, nowhere), "src_mask": (keep, False),
                 "loss_mask": (real, not self.end_loss)}
        for key, (base, drop_ends) in masks.items():
            if drop_ends:
                base = ~ends if base is None else base & ~ends
            if base is not None:
                batch[key] = base
        for key, stop in (("score_stop", not self.end_score_grad),
                          ("state_stop", not self.end_state_grad)):
            if stop:
                batch[key] = ends
        return batch

    def _varying(self, full: dict, generator: torch.Generator) -> dict[str, Tensor]:
        """:meth:`sample`'s batch of full length cut to lengths ℓ ~ U[min_length, length],
        one per example: source ``[pad .. pad, x_1 .. x_ℓ, end]``, target
        ``[x_1 .. x_ℓ, end, pad .. pad]``, with the masks."""
        B, L, pad, end = full["src"].shape[0], self.length, self.pad_token, self.vocab
        Lp = L + int(self.eos)                                 # with the end token, L + 1
        ell = torch.randint(self.min_length, L + 1, (B, 1), generator=generator)
        pos = torch.arange(Lp).expand(B, Lp)
        shift = L - ell                                        # pads in front of the source
        words = full["src"][:, :L]
        if self.distribution == "permutation":   # a permutation of the ℓ words 0 .. ℓ-1
            keys = torch.rand(B, L, generator=generator)
            words = keys.masked_fill(pos[:, :L] >= ell, 2.0).argsort(dim=1)
        src = torch.full((B, Lp), pad, dtype=torch.long)
        if self.eos:
            src[:, L] = end
        keep = (pos[:, :L] >= shift)                           # source slots holding words
        src[:, :L][keep] = words[pos[:, :L] < L - shift]       # x_1 .. x_ℓ, in order
        tgt = torch.full((B, Lp), pad, dtype=torch.long)
        tgt[pos < ell] = words[pos[:, :L] < ell]
        if self.eos:
            tgt[pos == ell] = end
        tgt_in = torch.cat([torch.full((B, 1), self.bos, dtype=torch.long), tgt[:, :-1]], 1)
        real = pos <= ell if self.eos else pos < ell           # the ℓ words (and the end)
        align = torch.where(real, pos + shift, torch.zeros_like(pos))
        return self._masks({"src": src, "tgt_in": tgt_in, "tgt": tgt, "align": align}, real)


# --------------------------------------------------------------------------- chapter 2
def topic_sentences(topic_sets, dictionary, m: int, n: int, generator: torch.Generator):
    """Draw ``n`` sentences of the topic task of Lu, Mao & Nayak (2021), §3.

    Each sentence: (1) a topic y uniform over the J = ``len(topic_sets)`` topics, (2) one word
    uniform over the topic word set 𝕋_y, placed at a uniform position among (3) ``m`` non-topic
    words drawn uniformly (with replacement) from ``dictionary`` = Θ. LMN require the sets 𝕋_j
    to be mutually exclusive and Θ to hold no topic word.

    Returns ``x`` (n, m+1) long word ids, ``y`` (n,) long topics, ``pos`` (n,) the topic word's
    position.
    """
    _check_gen(generator)
    m, n = check_dim("m", m, 1), check_dim("n", n, 1)
    if isinstance(topic_sets, (str, bytes, dict)) or not hasattr(topic_sets, "__len__"):
        raise TypeError("topic_sets must be a sequence of word-id sequences, one per topic; got "
                        f"{type(topic_sets).__name__}")
    sets = [check_int_array(f"topic_sets[{j}]", s, 0, ndim=1, allow_empty=True).tolist()
            for j, s in enumerate(topic_sets)]
    if len(sets) < 2:
        raise ValueError(f"topic_sets must hold J >= 2 topics; got {len(sets)}")
    if any(len(s) == 0 for s in sets):
        raise ValueError("every topic set in topic_sets must hold at least one word")
    flat = [w for s in sets for w in s]
    if len(set(flat)) != len(flat):
        raise ValueError("topic_sets must be mutually exclusive (a word in two topics, or twice)")
    if isinstance(dictionary, (str, bytes)):
        raise TypeError(f"dictionary must be a sequence of word ids; got {type(dictionary).__name__}")
    if not isinstance(dictionary, (list, tuple, np.ndarray, Tensor)) and hasattr(dictionary, "__iter__"):
        dictionary = list(dictionary)   # a range or another iterable of ids
    dictionary = torch.from_numpy(check_int_array("dictionary", dictionary, 0, ndim=1,
                                                  allow_empty=True))
    if dictionary.numel() < 1:
        raise ValueError("dictionary (the non-topic words Θ) must hold at least one word")
    overlap = set(flat) & set(dictionary.tolist())
    if overlap:
        raise ValueError(f"topic words overlap the dictionary (Θ must hold no topic word): "
                         f"{sorted(overlap)[:5]}")
    J, K = len(sets), max(len(s) for s in sets)
    table = torch.full((J, K), -1, dtype=torch.long)
    for j, s in enumerate(sets):
        table[j, :len(s)] = torch.tensor(s)
    sizes = torch.tensor([len(s) for s in sets])
    y = torch.randint(0, J, (n,), generator=generator)
    pick = (torch.rand(n, generator=generator) * sizes[y]).long().clamp(max=K - 1)
    topic_word = table[y, pick]
    x = dictionary[torch.randint(0, dictionary.numel(), (n, m + 1), generator=generator)]
    pos = torch.randint(0, m + 1, (n,), generator=generator)
    x[torch.arange(n), pos] = topic_word
    return {"x": x, "y": y, "pos": pos}


class _SeededDataSet:
    """A task whose whole data set is drawn once from its ``seed`` field into ``_data =
    {"train": {...}, "test": {...}}`` (full-batch gradient descent)."""

    def sample(self, generator: torch.Generator | None = None, batch_size: int | None = None):
        """The full training set (the generator and batch size are not used: full batch)."""
        return {k: v.clone() for k, v in self._data["train"].items()}

    def test_set(self) -> dict[str, Tensor]:
        """The held-out set."""
        return {k: v.clone() for k, v in self._data["test"].items()}

    def for_seed(self, seed: int):
        """The same task with its data set drawn from ``seed`` (itself if ``seed`` is its seed;
        the training engine gives each member the data set of its own data seed: real
        replicates)."""
        seed = check_int("seed", seed, 0)
        return self if seed == self.seed else dataclasses.replace(self, seed=seed)


@dataclass(frozen=True)
class TopicTask(_SeededDataSet):
    """The topic classification task of Lu, Mao & Nayak (2021), §3 and §5.1.

    ``n_topics`` = J topics with ``words_per_topic`` topic words each; a sentence is one topic
    word (its topic is the label) plus ``m`` non-topic words drawn uniformly from a dictionary of
    ``n_nontopic`` = M words (see :func:`topic_sentences`). Word ids: topic words
    ``0 .. J*words_per_topic - 1`` (topic j owns ``j*K .. j*K+K-1``), then the M non-topic words.
    The data set (``n_train`` + ``n_test`` sentences) is drawn once from ``seed``; :meth:`sample`
    returns the whole training set (full-batch gradient descent). LMN §5.1: J = 4, K = 2, m = 20,
    M = 5,000, 800 / 200 sentences.
    """

    n_topics: int = 4
    words_per_topic: int = 2
    m: int = 20
    n_nontopic: int = 5000
    n_train: int = 800
    n_test: int = 200
    seed: int = 0
    _data: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        check_dim("n_topics", self.n_topics, 2)
        check_dim("words_per_topic", self.words_per_topic, 1)
        check_dim("m", self.m, 1)
        check_dim("n_nontopic", self.n_nontopic, 1)
        check_dim("n_train", self.n_train, 1)
        check_dim("n_test", self.n_test, 1)
        g = torch.Generator().manual_seed(check_int("seed", self.seed, 0))
        J, K = self.n_topics, self.words_per_topic
        sets = [list(range(j * K, (j + 1) * K)) for j in range(J)]
        d = topic_sentences(sets, range(J * K, J * K + self.n_nontopic), self.m,
                            self.n_train + self.n_test, g)
        tr, te = slice(0, self.n_train), slice(self.n_train, None)
        object.__setattr__(self, "_data", {
            "train": {"x": d["x"][tr], "y": d["y"][tr]}, "test": {"x": d["x"][te], "y": d["y"][te]}})

    @property
    def model_vocab(self) -> int:
        return self.n_topics * self.words_per_topic + self.n_nontopic

    @property
    def topic_words(self) -> Tensor:
        """Ids of the topic words, topic by topic: (J * words_per_topic,)."""
        return torch.arange(self.n_topics * self.words_per_topic)

    def topic_of(self, word: int) -> int:
        """The topic a topic word belongs to."""
        n = self.n_topics * self.words_per_topic
        if not is_int(word):
            raise TypeError(f"word must be a topic word id, an int in [0, {n - 1}]; got "
                            f"{type(word).__name__} {word!r}")
        if not 0 <= word < n:
            raise ValueError(f"word must be a topic word id in [0, {n - 1}]; got {word}")
        return int(word) // self.words_per_topic


@dataclass(frozen=True)
class PurityGradedTask(_SeededDataSet):
    """A synthetic stand-in for LMN's SST-2 purity experiment (§5.2, Fig. 5-7): a frequent
    word of low topic purity against rare pure words that only sometimes share its sentences.

    Two classes (1 = positive). Words ``2 .. 2 + 2K - 1`` are the *rare pure* words, K =
    ``rare_per_class`` per class (class c owns ``2 + cK .. 2 + cK + K - 1``), each in exactly
    ``rare_count`` training sentences, all of its class (LMN's "powerful": 36 sentences, all
    positive, purity 1). Every training sentence holds exactly one rare word, so there are
    ``n_train = 2 K rare_count`` sentences and the task can be fit to loss 0. Word 0 (F⁺, LMN's
    "best") is planted in ``frequent_counts[0]`` class-1 and ``frequent_counts[1]`` class-0
    sentences (LMN: 103 and 25 of 128, purity |103 − 25| / 128 = 0.61); word 1 (F⁻) mirrors it
    (103 class-0 and 25 class-1 sentences, disjoint from F⁺'s). With the defaults a rare word
    shares about a third of its sentences with an F word and is alone in the rest. The other
    words of a sentence (``m + 1`` in all) are drawn uniformly from a dictionary of
    ``n_nontopic`` words.

    :meth:`sample` returns the whole training set; :meth:`test_set` holds ``n_test`` sentences
    drawn the same way (a class at random, one of its rare words, F⁺ or F⁻ with the training
    frequencies); :meth:`for_seed` redraws everything from another seed.
    """

    frequent_counts: tuple[int, int] = (103, 25)
    rare_count: int = 36
    rare_per_class: int = 11
    m: int = 20
    n_nontopic: int = 5000
    n_test: int = 200
    seed: int = 0
    _data: dict = field(init=False, repr=False, compare=False)

    F_POS = 0
    F_NEG = 1

    def __post_init__(self):
        fc = self.frequent_counts
        if isinstance(fc, (str, bytes)) or not (isinstance(fc, (tuple, list)) and len(fc) == 2):
            raise TypeError("frequent_counts must be a pair (sentences of its own class, of the "
                            f"other class) of ints; got {fc!r}")
        n_own = check_dim("frequent_counts[0]", fc[0], 1)
        n_other = check_dim("frequent_counts[1]", fc[1], 0)
        R = check_dim("rare_count", self.rare_count, 1)
        K = check_dim("rare_per_class", self.rare_per_class, 1)
        if n_own + n_other > K * R:
            raise ValueError(f"frequent_counts ({n_own} + {n_other}) must fit into one class's "
                             f"rare_per_class * rare_count = {K * R} sentences (each class "
                             "holds that many F⁺ and F⁻ sentences)")
        m = check_dim("m", self.m, 2)
        V = check_dim("n_nontopic", self.n_nontopic, 1)
        n_test = check_dim("n_test", self.n_test, 1)
        g = torch.Generator().manual_seed(check_int("seed", self.seed, 0))
        n_c = K * R
        y = torch.arange(2).repeat_interleave(n_c)                        # class 0, then 1
        rare = 2 + y * K + torch.arange(K).repeat_interleave(R).repeat(2)
        f = torch.full((2 * n_c,), -1, dtype=torch.long)
        for c in (0, 1):
            rows = c * n_c + torch.randperm(n_c, generator=g)
            own, other = (self.F_POS, self.F_NEG) if c == 1 else (self.F_NEG, self.F_POS)
            f[rows[:n_own]] = own
            f[rows[n_own:n_own + n_other]] = other
        x = self._fill(rare, f, m, V, g)
        order = torch.randperm(2 * n_c, generator=g)
        yt = torch.randint(0, 2, (n_test,), generator=g)
        rt = 2 + yt * K + torch.randint(0, K, (n_test,), generator=g)
        u = torch.rand(n_test, generator=g) * n_c
        own_t = torch.where(yt == 1, self.F_POS, self.F_NEG)
        ft = torch.where(u < n_own, own_t, torch.where(u < n_own + n_other, 1 - own_t, -1))
        xt = self._fill(rt, ft, m, V, g)
        object.__setattr__(self, "_data", {"train": {"x": x[order], "y": y[order]},
                                           "test": {"x": xt, "y": yt}})

    def _fill(self, rare, f, m, V, g):
        """Sentences of m + 1 dictionary words with the rare word and (where f >= 0) the
        frequent word planted at two distinct random positions."""
        n = len(rare)
        x = 2 + 2 * self.rare_per_class + torch.randint(0, V, (n, m + 1), generator=g)
        slots = torch.rand(n, m + 1, generator=g).argsort(dim=1)[:, :2]
        rows = torch.arange(n)
        x[rows, slots[:, 0]] = rare
        has = f >= 0
        x[rows[has], slots[has, 1]] = f[has]
        return x

    @property
    def model_vocab(self) -> int:
        return 2 + 2 * self.rare_per_class + self.n_nontopic

    @property
    def n_train(self) -> int:
        return 2 * self.rare_per_class * self.rare_count

    @property
    def frequent_words(self) -> Tensor:
        """F⁺ and F⁻: ``tensor([0, 1])``."""
        return torch.tensor([self.F_POS, self.F_NEG])

    @property
    def rare_words(self) -> Tensor:
        """The rare pure words, class 0's first: (2K,)."""
        return torch.arange(2, 2 + 2 * self.rare_per_class)


@dataclass(frozen=True)
class MarkovPairTask(_SeededDataSet):
    """LMN Appendix A: two topics whose sentences are Markov chains, and topic *word pairs*.

    Each topic y owns ``pairs_per_topic`` ordered pairs (s, e) of words from a dictionary of
    ``n_words``; all these words are distinct (LMN: "the word pairs do not contain repeating
    words"; distinct words keep the pairs apart). Topic y's chain MC_y moves from any word to
    a uniformly random word (itself included), except from a leader s of one of y's pairs,
    which moves to its follower e. A sentence: a topic y uniformly, one of its pairs (s, e)
    uniformly, start at s and run MC_y for ``length - 1`` steps (so the sentence opens with
    its topic pair). LMN: 200 words, 2 pairs per topic, length 10, 4,000 / 1,000 sentences.

    :meth:`sample` returns the whole training set ``{"x": (n_train, length), "y": (n_train,)}``;
    :meth:`test_set` the held-out one; :meth:`for_seed` redraws pairs and data from ``seed``.
    """

    n_words: int = 200
    pairs_per_topic: int = 2
    length: int = 10
    n_train: int = 4000
    n_test: int = 1000
    seed: int = 0
    _data: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        V = check_dim("n_words", self.n_words, 1)
        P = check_dim("pairs_per_topic", self.pairs_per_topic, 1)
        if V < 4 * P:
            raise ValueError(f"n_words must be >= 4 * pairs_per_topic = {4 * P} (the topic pairs "
                             f"use distinct words); got {V}")
        L = check_dim("length", self.length, 2)
        n = check_dim("n_train", self.n_train, 1) + check_dim("n_test", self.n_test, 1)
        g = torch.Generator().manual_seed(check_int("seed", self.seed, 0))
        pairs = torch.randperm(V, generator=g)[:4 * P].view(2 * P, 2)     # topic by topic
        follow = torch.full((2, V), -1, dtype=torch.long)                 # MC_y's fixed moves
        for y in (0, 1):
            follow[y, pairs[y * P:(y + 1) * P, 0]] = pairs[y * P:(y + 1) * P, 1]
        y = torch.randint(0, 2, (n,), generator=g)
        k = torch.randint(0, P, (n,), generator=g)
        x = torch.empty(n, L, dtype=torch.long)
        x[:, 0] = pairs[y * P + k, 0]
        for pos in range(1, L):
            nxt = follow[y, x[:, pos - 1]]
            free = torch.randint(0, V, (n,), generator=g)
            x[:, pos] = torch.where(nxt >= 0, nxt, free)
        tr = slice(0, self.n_train)
        te = slice(self.n_train, None)
        object.__setattr__(self, "_data", {
            "pairs": pairs, "train": {"x": x[tr], "y": y[tr]}, "test": {"x": x[te], "y": y[te]}})

    @property
    def model_vocab(self) -> int:
        return self.n_words

    @property
    def topic_pairs(self) -> Tensor:
        """The ordered topic pairs (s, e), topic 0's first: (2 * pairs_per_topic, 2)."""
        return self._data["pairs"].clone()


def read_sst2_tsv(path) -> tuple[list[list[str]], list[int]]:
    """Read a GLUE SST-2 file (``train.tsv`` / ``dev.tsv``): a header line ``sentence<TAB>label``
    and one ``text<TAB>0|1`` per line. Returns the lower-cased whitespace tokens of every sentence
    and the labels (1 = positive)."""
    from pathlib import Path

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (str or os.PathLike); got "
                        f"{type(path).__name__} {path!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no SST-2 file at {path}")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].strip().split("\t") != ["sentence", "label"]:
        raise ValueError(f"{path} is not a GLUE SST-2 TSV (header must be 'sentence<TAB>label')")
    tokens, labels = [], []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.rsplit("\t", 1)
        if len(parts) != 2 or parts[1].strip() not in ("0", "1"):
            raise ValueError(f"{path}:{i}: expected 'sentence<TAB>0|1'; got {line[:60]!r}")
        words = parts[0].lower().split()
        if words:
            tokens.append(words)
            labels.append(int(parts[1]))
    if not tokens:
        raise ValueError(f"{path} holds no sentences")
    return tokens, labels


@dataclass(frozen=True)
class BagTask:
    """A fixed data set of variable-length bags of words for :class:`~attn_core.models.TopicAttention`
    (e.g. SST-2): padded ``x`` (N, L_max), ``mask`` (N, L_max) true at real words, ``y`` (N,).

    Build one with :meth:`from_tokens`; word id 0 is the padding symbol ``<pad>`` (its score is
    masked to −∞, as in LMN §5.2) and ``words[i]`` is word i.
    """

    words: tuple[str, ...]
    train: dict
    test: dict | None = None

    def __post_init__(self):
        words = self.words
        if isinstance(words, (str, bytes)) or not isinstance(words, (list, tuple)):
            raise TypeError(f"words must be a tuple of strings; got {type(words).__name__}")
        if len(words) < 2 or not all(isinstance(w, str) for w in words):
            raise ValueError("words must hold at least two strings (word 0 is the padding "
                             f"symbol); got {len(words)} entries")
        object.__setattr__(self, "words", tuple(words))
        _check_bag_set("train", self.train, len(words))
        if self.test is not None:
            _check_bag_set("test", self.test, len(words))

    @classmethod
    def from_tokens(cls, train_tokens, train_labels, test_tokens=None, test_labels=None,
                    min_count: int = 1) -> "BagTask":
        """Encode tokenised sentences (lists of word strings) with their class labels (ints >= 0).

        Words seen fewer than ``min_count`` times in training become ``<unk>`` (id 1). Every
        sentence needs at least one word: an all-padding bag has no attention distribution
        (every score is masked) and would give a NaN loss."""
        from collections import Counter

        check_int("min_count", min_count, 1)
        train_tokens = _check_bags("train_tokens", train_tokens)
        train_labels = _check_labels("train_labels", train_labels, len(train_tokens))
        if (test_tokens is None) != (test_labels is None):
            raise ValueError("test_tokens and test_labels must be given together (or neither)")
        if test_tokens is not None:
            test_tokens = _check_bags("test_tokens", test_tokens)
            test_labels = _check_labels("test_labels", test_labels, len(test_tokens))
        counts = Counter(w for s in train_tokens for w in s)
        words = ("<pad>", "<unk>") + tuple(sorted(w for w, c in counts.items() if c >= min_count))
        index = {w: i for i, w in enumerate(words)}

        def encode(tokens, labels):
            L = max(len(s) for s in tokens)
            x = torch.zeros(len(tokens), L, dtype=torch.long)
            for n, s in enumerate(tokens):
                x[n, :len(s)] = torch.tensor([index.get(w, 1) for w in s])
            mask = torch.arange(L).unsqueeze(0) < torch.tensor([len(s) for s in tokens]).unsqueeze(1)
            return {"x": x, "mask": mask, "y": torch.from_numpy(labels)}

        test = None if test_tokens is None else encode(test_tokens, test_labels)
        return cls(words, encode(train_tokens, train_labels), test)

    @property
    def model_vocab(self) -> int:
        return len(self.words)

    def sample(self, generator: torch.Generator | None = None, batch_size: int | None = None):
        """The full training set (full batch)."""
        return {k: v.clone() for k, v in self.train.items()}

    def test_set(self) -> dict[str, Tensor]:
        if self.test is None:
            raise ValueError("this BagTask has no test set")
        return {k: v.clone() for k, v in self.test.items()}


def _check_bags(name: str, tokens) -> list:
    """A non-empty list of sentences, each a non-empty list/tuple of word strings."""
    if isinstance(tokens, (str, bytes, dict)) or not isinstance(tokens, (list, tuple)):
        raise TypeError(f"{name} must be a list of sentences (lists of word strings); got "
                        f"{type(tokens).__name__}")
    if not tokens:
        raise ValueError(f"{name} must hold at least one sentence; got none")
    for n, sent in enumerate(tokens):
        if isinstance(sent, (str, bytes)) or not isinstance(sent, (list, tuple)):
            raise TypeError(f"{name}[{n}] must be a list of word strings (tokenise it first); "
                            f"got {type(sent).__name__} {sent!r:.40}")
        if not sent:
            raise ValueError(f"{name}[{n}] is an empty sentence: a bag needs at least one word "
                             "(an all-padding bag has no attention distribution and gives a NaN "
                             "loss)")
        bad = [w for w in sent if not isinstance(w, str)]
        if bad:
            raise TypeError(f"{name}[{n}] must hold word strings; got {type(bad[0]).__name__} "
                            f"{bad[0]!r}")
    return list(tokens)


def _check_labels(name: str, labels, n: int) -> np.ndarray:
    """Class labels: ints >= 0, one per sentence."""
    y = check_int_array(name, labels, 0, ndim=1)
    if len(y) != n:
        raise ValueError(f"{name} must have one label per sentence ({n}); got {len(y)}")
    return y


def _check_bag_set(name: str, d, vocab: int) -> None:
    """A BagTask split: ``x`` (N, L) ids in [0, vocab), ``mask`` (N, L) bool with at least one
    real word per row, ``y`` (N,) labels >= 0."""
    if not isinstance(d, dict) or not all(k in d for k in ("x", "mask", "y")):
        raise TypeError(f"{name} must be a dict with tensors 'x', 'mask' and 'y'; got "
                        f"{type(d).__name__} {sorted(d) if isinstance(d, dict) else ''}")
    x, mask, y = d["x"], d["mask"], d["y"]
    if not all(isinstance(t, Tensor) for t in (x, mask, y)):
        raise TypeError(f"{name}['x'], ['mask'] and ['y'] must be torch tensors")
    if x.dim() != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{name}['x'] must be a non-empty (N, L) tensor; got shape {tuple(x.shape)}")
    check_token_ids(f"{name}['x']", x, vocab)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name}['mask'] must be a bool tensor (True at real words); got "
                        f"{mask.dtype}")
    if mask.shape != x.shape:
        raise ValueError(f"{name}['mask'] must have x's shape {tuple(x.shape)}; got "
                         f"{tuple(mask.shape)}")
    empty = torch.nonzero(~mask.any(1)).flatten()
    if len(empty):
        raise ValueError(f"{name}['mask'] row {int(empty[0])} is all padding ({len(empty)} such "
                         "rows): a bag needs at least one word (an empty bag gives a NaN loss)")
    if y.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name}['y'] must be an integer tensor of class labels; got {y.dtype}")
    if y.shape != (x.shape[0],):
        raise ValueError(f"{name}['y'] must have shape (N,) = ({x.shape[0]},); got "
                         f"{tuple(y.shape)}")
    if int(y.min()) < 0:
        raise ValueError(f"{name}['y'] must hold class labels >= 0; got {int(y.min())}")


#: Where :func:`find_sst2` looks for GLUE's ``SST-2/`` folder (``train.tsv``, ``dev.tsv``).
SST2_URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"


def find_sst2(download: bool = False, timeout: float = 30.0):
    """The GLUE SST-2 folder if it is available, else None.

    Looks in ``$ATTN_SST2``, then ``<cache>/SST-2`` (see :mod:`attn_core.cache`). With
    ``download=True`` (the notebook does this only in full mode) it tries to fetch and unpack
    :data:`SST2_URL` into the cache first; any network error gives None.
    """
    import os
    import zipfile
    from pathlib import Path

    from .cache import cache_dir

    check_bool("download", download)
    timeout = check_real("timeout", timeout, 0.0, low_open=True)
    candidates = []
    if os.environ.get("ATTN_SST2"):
        candidates.append(Path(os.environ["ATTN_SST2"]).expanduser())
    root = cache_dir() or Path.home() / ".cache" / "attn_core"
    candidates.append(root / "SST-2")
    for c in candidates:
        if (c / "train.tsv").is_file() and (c / "dev.tsv").is_file():
            return c
    if not download:
        return None
    try:
        import urllib.request

        root.mkdir(parents=True, exist_ok=True)
        zpath = root / "SST-2.zip"
        with urllib.request.urlopen(SST2_URL, timeout=timeout) as r:
            zpath.write_bytes(r.read())
        with zipfile.ZipFile(zpath) as z:
            z.extractall(root)
    except Exception as err:  # no network, blocked host, bad archive: report and go on
        print(f"SST-2 could not be fetched from {SST2_URL}: {type(err).__name__}: {err}")
        return None
    c = root / "SST-2"
    return c if (c / "train.tsv").is_file() else None


def sst2_task(directory, min_count: int = 1) -> BagTask:
    """SST-2 from a GLUE ``SST-2/`` folder: ``train.tsv`` for training and ``dev.tsv`` (GLUE's
    test labels are hidden) as the test set. Raises FileNotFoundError when the files are absent."""
    from pathlib import Path

    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a folder path (str or os.PathLike); got "
                        f"{type(directory).__name__} {directory!r}")
    check_int("min_count", min_count, 1)
    directory = Path(directory)
    tr_tok, tr_y = read_sst2_tsv(directory / "train.tsv")
    te_tok, te_y = read_sst2_tsv(directory / "dev.tsv")
    return BagTask.from_tokens(tr_tok, tr_y, te_tok, te_y, min_count=min_count)


# --------------------------------------------------------------------------- chapter 3
#: The toy German → English corpus of chapter 3: the slides' two sentences ("Dieser Film ist
#: großartig" / "This movie is great", "... schlecht" / "... bad"; SZKS Fig. 1 reads them
#: German → English, the slides English → German) first, then four more built from the same
#: words, so that every word has a unique translation.
TOY_CORPUS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("Dieser", "Film", "ist", "großartig"), ("This", "movie", "is", "great")),
    (("Dieser", "Film", "ist", "schlecht"), ("This", "movie", "is", "bad")),
    (("Dieser", "Hund", "ist", "großartig"), ("This", "dog", "is", "great")),
    (("Der", "Hund", "ist", "schlecht"), ("The", "dog", "is", "bad")),
    (("Der", "Film", "ist", "lang"), ("The", "movie", "is", "long")),
    (("Der", "Hund", "schläft"), ("The", "dog", "sleeps")),
)


def encode_corpus(pairs) -> dict:
    """Turn a parallel corpus of word lists into token ids.

    ``pairs``: a non-empty sequence of ``(source_words, target_words)`` pairs, each side a
    non-empty sequence of strings. Word ids are given in order of first appearance, separately
    for each side. Returns ``{"src": [id lists], "tgt": [id lists], "src_words": tuple,
    "tgt_words": tuple}``.
    """
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__len__"):
        raise TypeError("pairs must be a sequence of (source_words, target_words) pairs")
    if len(pairs) == 0:
        raise ValueError("pairs is empty: the corpus needs at least one sentence pair")
    vocab = ({}, {})
    out = ([], [])
    for m, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"pairs[{m}] must be a (source_words, target_words) pair")
        for side, words in enumerate(pair):
            if isinstance(words, (str, bytes)):
                raise TypeError(f"pairs[{m}] side {side} must be a list of words, not a string")
            if len(words) == 0:
                raise ValueError(f"pairs[{m}] has an empty side")
            if not all(isinstance(w, str) for w in words):
                raise TypeError(f"pairs[{m}] side {side} must hold strings")
            out[side].append([vocab[side].setdefault(w, len(vocab[side])) for w in words])
    return {"src": out[0], "tgt": out[1], "src_words": tuple(vocab[0]),
            "tgt_words": tuple(vocab[1])}


@dataclass(frozen=True)
class ParallelCorpusTask:
    """A synthetic parallel corpus with a hidden word-to-word dictionary (known ground truth).

    ``vocab`` = V source words ``0..V-1`` translate one to one into V target words through a
    random bijection ``dictionary`` (target word ``dictionary[i]`` for source word i). A sentence
    is ``length`` = L source words, with word frequencies ∝ rank^-``zipf`` (0: uniform) and, if
    ``distinct``, no word twice in a sentence; its translation is the word-by-word image, where
    each adjacent pair of positions (0,1), (2,3), ... is swapped with probability ``reorder``
    (local reordering, e.g. adjective-noun order). ``n_pairs`` = M pairs are drawn once from
    ``seed``: that fixed corpus is what :meth:`sample` draws minibatches from (with replacement)
    and what count tables and IBM Model 1 see (:meth:`corpus`).

    **Vocabulary overlap.** With ``distinct`` sentences and uniform frequencies, a random sentence
    holds a fraction ``overlap`` = L / V of the vocabulary, which is also the expected fraction of
    one sentence's words that another sentence shares. At overlap 1 every sentence is a
    permutation of the same L words: the count table is flat (chapter 4). Build a corpus by
    overlap with :meth:`from_overlap`.

    Model token ids (one vocabulary for a shared-embedding seq2seq): source word i -> i, target
    word o -> V + o, start symbol 2V; ``model_vocab`` = 2V + 1. Batches: ``src``, ``tgt_in``,
    ``tgt`` (B, L) and ``align`` (B, L), the source position each target word translates.
    """

    vocab: int = 30
    length: int = 10
    n_pairs: int = 2000
    zipf: float = 1.0
    distinct: bool = True
    reorder: float = 0.0
    seed: int = 0
    _data: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        V = check_dim("vocab", self.vocab, 2)
        L = check_dim("length", self.length, 1)
        check_dim("n_pairs", self.n_pairs, 1)
        check_int("seed", self.seed, 0)
        for name in ("zipf", "reorder"):
            val = getattr(self, name)
            if isinstance(val, bool) or not isinstance(val, (int, float)):
                raise TypeError(f"{name} must be a number; got {type(val).__name__}")
        if not (self.zipf >= 0 and self.zipf < float("inf")):
            raise ValueError(f"zipf must be a finite number >= 0; got {self.zipf}")
        if not 0 <= self.reorder <= 1:
            raise ValueError(f"reorder must be a probability in [0, 1]; got {self.reorder}")
        if not isinstance(self.distinct, bool):
            raise TypeError(f"distinct must be a bool; got {type(self.distinct).__name__}")
        if self.distinct and V < L:
            raise ValueError(f"vocab ({V}) must be >= length ({L}) for distinct words per sentence")
        g = torch.Generator().manual_seed(self.seed)
        dictionary = torch.randperm(V, generator=g)
        weights = torch.arange(1, V + 1, dtype=torch.float64) ** (-float(self.zipf))
        object.__setattr__(self, "_data", {"dictionary": dictionary, "weights": weights / weights.sum()})
        src, tgt, align = self._draw(self.n_pairs, g)
        self._data.update(src=src, tgt=tgt, align=align)

    @classmethod
    def from_overlap(cls, overlap: float, length: int = 10, **kwargs) -> "ParallelCorpusTask":
        """A corpus of distinct-word sentences with uniform word frequencies whose vocabulary is
        V = round(L / overlap): ``overlap`` in (0, 1] is the fraction of the vocabulary in each
        sentence (1: every sentence is a permutation of the same words)."""
        if isinstance(overlap, bool) or not isinstance(overlap, (int, float)):
            raise TypeError(f"overlap must be a number in (0, 1]; got {type(overlap).__name__}")
        if not 0 < overlap <= 1:
            raise ValueError(f"overlap must be in (0, 1]; got {overlap}")
        L = check_dim("length", length, 1)
        V = max(L, int(round(L / overlap)), 2)
        return cls(vocab=V, length=L, zipf=kwargs.pop("zipf", 0.0),
                   distinct=kwargs.pop("distinct", True), **kwargs)

    def _draw(self, n: int, g: torch.Generator):
        V, L = self.vocab, self.length
        w = self._data["weights"]
        if self.distinct:
            # weighted sampling without replacement (Gumbel top-L), then a random order
            gumbel = -torch.log(-torch.log(torch.rand(n, V, generator=g, dtype=torch.float64)))
            src = (w.log().unsqueeze(0) + gumbel).topk(L, dim=1).indices
            src = src.gather(1, torch.rand(n, L, generator=g).argsort(1))
        else:
            src = torch.multinomial(w.expand(n, V), L, replacement=True, generator=g)
        align = torch.arange(L).expand(n, L).clone()
        if self.reorder > 0 and L > 1:
            swap = torch.rand(n, L // 2, generator=g) < self.reorder
            even = torch.arange(0, 2 * (L // 2), 2)
            a = align.clone()
            a[:, even] = torch.where(swap, align[:, even + 1], align[:, even])
            a[:, even + 1] = torch.where(swap, align[:, even], align[:, even + 1])
            align = a
        tgt = self._data["dictionary"][src.gather(1, align)]
        return src.long(), tgt.long(), align

    # ---------------------------------------------------------------- ground truth and views
    @property
    def dictionary(self) -> Tensor:
        """The hidden dictionary: ``dictionary[i]`` is the translation of source word i: (V,)."""
        return self._data["dictionary"].clone()

    @property
    def overlap(self) -> float:
        """L / V: the fraction of the vocabulary in one sentence (see the class docstring)."""
        return self.length / self.vocab

    @property
    def bos(self) -> int:
        return 2 * self.vocab

    @property
    def model_vocab(self) -> int:
        return 2 * self.vocab + 1

    def corpus(self) -> dict[str, Tensor]:
        """The fixed corpus in *word* ids (both sides 0..V-1): ``src``, ``tgt``, ``align`` (M, L)."""
        return {k: self._data[k].clone() for k in ("src", "tgt", "align")}

    def to_batch(self, src: Tensor, tgt: Tensor, align: Tensor) -> dict[str, Tensor]:
        """Word ids -> the seq2seq batch (model ids, ``tgt_in`` = [BOS, tgt[:-1]]).

        ``src``, ``tgt`` (B, L) word ids in [0, vocab) and ``align`` (B, L) source positions."""
        L = self.length
        for name, t, hi in (("src", src, self.vocab), ("tgt", tgt, self.vocab), ("align", align, L)):
            check_token_ids(name, t, hi)
            if t.dim() != 2 or t.shape[1] != L:
                raise ValueError(f"{name} must be a (B, L={L}) tensor; got shape {tuple(t.shape)}")
        if not src.shape == tgt.shape == align.shape:
            raise ValueError(f"src, tgt and align must have the same shape; got "
                             f"{tuple(src.shape)}, {tuple(tgt.shape)}, {tuple(align.shape)}")
        t = tgt.long() + self.vocab
        t_in = torch.cat([torch.full((t.shape[0], 1), self.bos, dtype=torch.long), t[:, :-1]], 1)
        return {"src": src.clone(), "tgt_in": t_in, "tgt": t, "align": align.clone()}

    def held_out(self, n: int, seed: int = 1) -> dict[str, Tensor]:
        """``n`` fresh pairs from the same distribution (drawn from ``seed``), as a model batch."""
        n = check_dim("n", n, 1)
        g = torch.Generator().manual_seed(check_int("seed", seed, 0) + 7_919 * (self.seed + 1))
        return self.to_batch(*self._draw(n, g))

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        _check_gen(generator)
        B = check_dim("batch_size", batch_size)
        idx = torch.randint(0, self.n_pairs, (B,), generator=generator)
        return self.to_batch(self._data["src"][idx], self._data["tgt"][idx], self._data["align"][idx])


@dataclass(frozen=True)
class ClassificationAsTranslation:
    """A binary classification task seen as translation with T = 1 and |O| = 2 (SZKS §2.4):
    each batch of the wrapped task (``x``, ``y``) also carries ``src`` = x and ``tgt`` = y as a
    (B, 1) long tensor, so the bag-of-words proxy and logistic regression can train on it."""

    task: object

    def __post_init__(self):
        if not hasattr(self.task, "sample"):
            raise TypeError(f"task must have a sample(generator, batch_size) method; got {self.task!r}")

    @property
    def model_vocab(self) -> int:
        return self.task.model_vocab

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        b = self.task.sample(generator, batch_size)
        if "x" not in b or "y" not in b:
            raise ValueError("the wrapped task's batches must hold 'x' and 'y'")
        return {**b, "src": b["x"], "tgt": b["y"].long().unsqueeze(-1)}
