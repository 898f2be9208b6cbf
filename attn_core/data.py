"""Data generators for every chapter.

A *task* draws one member's batch from a ``torch.Generator``::

    batch = task.sample(generator, batch_size)   # dict of tensors, no member dimension

The training engine keeps one generator per member (seeded by that member's data seed) and stacks
the members' batches, so a batched run and a loop of single runs see exactly the same data.

Tasks:

- :class:`KeywordTask` -- SZKS §6.1: length-L sequences over V tokens, positive iff the keyword
  appears (exactly once), classes balanced.
- :class:`CopyTask` -- SZKS §3.3 / §6.2: copy a sequence (or apply a fixed permutation to it),
  inputs drawn as permutations, distinct tokens from a larger vocabulary, i.i.d. tokens, or a
  mixture of permutations of two disjoint sets.
- :class:`TopicTask` -- LMN §3: J topics, each sentence one topic word plus m non-topic words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

__all__ = ["KeywordTask", "CopyTask", "TopicTask", "COPY_DISTRIBUTIONS"]


def _check_int(name: str, value, low: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int >= {low}; got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}; got {value}")
    return value


def _check_gen(generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator; got {type(generator).__name__}")


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
        _check_int("length", self.length, 2)
        _check_int("vocab", self.vocab, 2)
        if not isinstance(self.keyword, int) or not 0 <= self.keyword < self.vocab:
            raise ValueError(f"keyword must be an int in [0, {self.vocab - 1}]; got {self.keyword!r}")

    @property
    def model_vocab(self) -> int:
        return self.vocab

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        _check_gen(generator)
        B, L = _check_int("batch_size", batch_size), self.length
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


@dataclass(frozen=True)
class CopyTask:
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

    Batch: ``src`` (B, L), ``tgt_in`` = [BOS, tgt[:-1]] (B, L), ``tgt`` (B, L) and ``align``
    (B, L): the source position each target token comes from.
    """

    length: int = 20
    vocab: int | None = None
    distribution: str = "permutation"
    target_permutation: tuple[int, ...] | None = None
    _align: Tensor = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        L = _check_int("length", self.length, 1)
        if self.distribution not in COPY_DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of {COPY_DISTRIBUTIONS}; got {self.distribution!r}"
            )
        default = {"permutation": L, "distinct": L, "iid": L, "mixture": 2 * L}[self.distribution]
        V = default if self.vocab is None else _check_int("vocab", self.vocab, 1)
        if self.distribution == "permutation" and V != L:
            raise ValueError(f"vocab must equal length ({L}) for 'permutation'; got {V}. "
                             "Use distribution='distinct' for L items out of V > L.")
        if self.distribution == "distinct" and V < L:
            raise ValueError(f"vocab must be >= length ({L}) for distinct sampling; got {V}")
        if self.distribution == "mixture" and V != 2 * L:
            raise ValueError(f"vocab must be 2*length ({2 * L}) for 'mixture'; got {V}")
        object.__setattr__(self, "vocab", V)
        if self.target_permutation is not None:
            perm = tuple(int(i) for i in self.target_permutation)
            if sorted(perm) != list(range(L)):
                raise ValueError(f"target_permutation must be a permutation of range({L})")
            object.__setattr__(self, "target_permutation", perm)
            align = torch.tensor(perm)
        else:
            align = torch.arange(L)
        object.__setattr__(self, "_align", align)

    @property
    def bos(self) -> int:
        """The decoder's start symbol."""
        return self.vocab

    @property
    def model_vocab(self) -> int:
        """Vocabulary size the model needs: the V data tokens plus the start symbol."""
        return self.vocab + 1

    def sample(self, generator: torch.Generator, batch_size: int) -> dict[str, Tensor]:
        _check_gen(generator)
        B, L, V = _check_int("batch_size", batch_size), self.length, self.vocab
        if self.distribution in ("permutation", "distinct"):
            src = _random_permutations(B, V, generator)[:, :L]
        elif self.distribution == "iid":
            src = torch.randint(0, V, (B, L), generator=generator)
        else:  # mixture
            second = torch.rand(B, 1, generator=generator) < 0.5
            src = _random_permutations(B, L, generator) + L * second.long()
        tgt = src[:, self._align]
        tgt_in = torch.cat([torch.full((B, 1), self.bos, dtype=torch.long), tgt[:, :-1]], dim=1)
        return {"src": src, "tgt_in": tgt_in, "tgt": tgt, "align": self._align.expand(B, L).clone()}


# --------------------------------------------------------------------------- chapter 2
@dataclass(frozen=True)
class TopicTask:
    """The topic classification task of Lu, Mao & Nayak (2021), §3 and §5.1.

    ``n_topics`` = J topics with ``words_per_topic`` topic words each; a sentence is one topic
    word (its topic is the label) plus ``m`` non-topic words drawn uniformly from a dictionary of
    ``n_nontopic`` = M words. Word ids: topic words ``0 .. J*words_per_topic - 1``, then the M
    non-topic words. The data set (``n_train`` + ``n_test`` sentences) is drawn once from
    ``seed``; :meth:`sample` returns the whole training set (full-batch gradient descent).
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
        _check_int("n_topics", self.n_topics, 2)
        _check_int("words_per_topic", self.words_per_topic, 1)
        _check_int("m", self.m, 1)
        _check_int("n_nontopic", self.n_nontopic, 1)
        _check_int("n_train", self.n_train, 1)
        _check_int("n_test", self.n_test, 1)
        g = torch.Generator().manual_seed(_check_int("seed", self.seed, 0))
        n, J, K = self.n_train + self.n_test, self.n_topics, self.words_per_topic
        y = torch.randint(0, J, (n,), generator=g)
        topic_word = y * K + torch.randint(0, K, (n,), generator=g)
        x = J * K + torch.randint(0, self.n_nontopic, (n, self.m + 1), generator=g)
        pos = torch.randint(0, self.m + 1, (n,), generator=g)
        x[torch.arange(n), pos] = topic_word
        tr = slice(0, self.n_train)
        te = slice(self.n_train, n)
        object.__setattr__(self, "_data", {
            "train": {"x": x[tr], "y": y[tr]}, "test": {"x": x[te], "y": y[te]}})

    @property
    def model_vocab(self) -> int:
        return self.n_topics * self.words_per_topic + self.n_nontopic

    @property
    def topic_words(self) -> Tensor:
        return torch.arange(self.n_topics * self.words_per_topic)

    def sample(self, generator: torch.Generator | None = None, batch_size: int | None = None):
        """The full training set (the generator and batch size are not used: full batch)."""
        return {k: v.clone() for k, v in self._data["train"].items()}

    def test_set(self) -> dict[str, Tensor]:
        return {k: v.clone() for k, v in self._data["test"].items()}
