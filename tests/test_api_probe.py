"""A systematic probe of the public API: bad input gets a clear error, raised by attn_core.

Every case calls one public function or class with one bad argument -- a wrong type, a bool
where a number goes, a non-integral float (or an integral one, 2.0) where an int goes, NaN or
inf, an empty sequence, a negative or zero size, an out-of-range id, an unknown string -- and
asserts three things:

- a ``ValueError`` or ``TypeError`` is raised (not accepted silently, not clipped, cast or
  truncated, and not a ``RuntimeError``/``IndexError``/``AttributeError`` from deep inside);
- its message matches a fragment that names the argument (``match``);
- the last frame of its traceback is in ``attn_core``: the package raised it, not torch or
  numpy somewhere below.

Cases marked ``xfail(strict=True)`` are known defects of modules whose owner has still to fix
them (the reason says what goes wrong); strict, so that a fix makes them fail until the marker
is removed.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attn_core import cache, claims, config, data, metrics, models, plotting, stacked  # noqa: E402
from attn_core import theory, training  # noqa: E402
from attn_core.chapters import ch1_gated, ch2_sen, ch3_ibm1, ch4_copy, ch5_multihead  # noqa: E402

NAN, INF = float("nan"), float("inf")


# ------------------------------------------------------------------------------- helpers
def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def check_rejected(call, match: str) -> None:
    """``call()`` raises ValueError/TypeError matching ``match``, from a frame in attn_core."""
    with pytest.raises((ValueError, TypeError), match=match) as excinfo:
        call()
    last = Path(str(excinfo.traceback[-1].path))
    assert "attn_core" in last.parts, (
        f"raised from inside {last} (line {excinfo.traceback[-1].lineno + 1}), not by attn_core: "
        f"{excinfo.type.__name__}: {excinfo.value}")


def case(id_: str, call, match: str, xfail: str | None = None):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(call, match, id=id_, marks=marks)


def with_env(fn, **env):
    """``fn`` called with the environment variables ``env`` set (and restored afterwards)."""

    def call():
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            return fn()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    return call


def ids(*shape, high: int = 3, value: int | None = None) -> torch.Tensor:
    """A long tensor of token ids in [0, high) -- with its last entry set to ``value`` if given."""
    t = torch.randint(0, high, shape, generator=gen())
    if value is not None:
        t.view(-1)[-1] = value
    return t


# tiny objects the cases share (built once; every case builds what it mutates itself)
KW = data.KeywordTask(length=3, vocab=4)
COPY = data.CopyTask(length=3)
CORPUS = data.ParallelCorpusTask(vocab=6, length=3, n_pairs=10, seed=0)
BAGS = data.BagTask.from_tokens([["a", "b"], ["c"], ["a", "c", "d"]], [0, 1, 0])
TOPIC = data.TopicTask(n_topics=2, words_per_topic=1, m=2, n_nontopic=5, n_train=6, n_test=2)
CLASSIFIER = models.AttentionClassifier(vocab=4, embed=2, hidden=2)
S2S = models.Seq2Seq(vocab=5, embed=2, hidden=2)
TOPIC_MODEL = models.TopicAttention(vocab=7, n_topics=2, dim=2)
CNN_MODEL = models.TopicAttentionCNN(vocab=7, n_topics=2, dim=2)
PROXY = models.BagOfWordsProxy(vocab_in=4, vocab_out=3)
LOGISTIC = models.BagOfWordsLogistic(vocab_in=4)
TWO = models.AttentionClassifier(vocab=4, embed=2, hidden=2, seeds=[0, 1])
MODEL_FN = functools.partial(models.AttentionClassifier, vocab=4, embed=2, hidden=2)
TRAINER = training.Trainer(steps=1, batch_size=2, progress=False, workers=1)
HISTORY = training.History(
    seeds=np.array([0]), data_seeds=np.array([0]), train_loss=np.zeros((1, 2)),
    eval_steps=np.array([0, 2]), metrics={"token_acc": np.array([[0.5, 0.99]])},
    probes={"score": np.ones((1, 2, 1)), "norm": np.ones((1, 2, 1))},
    config={"steps": 2, "eval_every": 2})
GAMMAS = [[0.0, 0.0, 0.0], [0.0, -10.0, 5.0], [0.0, 5.0, -10.0]]
SRC, TGT = [[0, 1], [1, 2]], [[2, 0], [0, 1]]
POOLS = {"good": [1], "bad": [2, 3, 4], "random": range(100, 200)}


def _bag_task(mask_row1):
    x = torch.tensor([[2, 0], [3, 0]])
    mask = torch.tensor([[True, False], mask_row1])
    return data.BagTask(("<pad>", "<unk>", "a", "b"), {"x": x, "mask": mask,
                                                       "y": torch.tensor([0, 1])})


def _figure(value=None):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1])
    return fig


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# =============================================================================== data.py
DATA = [
    # KeywordTask
    case("KeywordTask-length-float", lambda: data.KeywordTask(length=2.0), "length must be an int"),
    case("KeywordTask-length-bool", lambda: data.KeywordTask(length=True), "length must be an int"),
    case("KeywordTask-length-1", lambda: data.KeywordTask(length=1), "length must be >= 2"),
    case("KeywordTask-vocab-1", lambda: data.KeywordTask(vocab=1), "vocab must be >= 2"),
    case("KeywordTask-vocab-str", lambda: data.KeywordTask(vocab="40"), "vocab must be an int"),
    case("KeywordTask-keyword-bool", lambda: data.KeywordTask(keyword=True), "keyword must be an int"),
    case("KeywordTask-keyword-float", lambda: data.KeywordTask(keyword=1.0), "keyword must be an int"),
    case("KeywordTask-keyword-negative", lambda: data.KeywordTask(keyword=-1), "keyword must be"),
    case("KeywordTask-keyword-vocab", lambda: data.KeywordTask(vocab=5, keyword=5), "keyword must be"),
    case("KeywordTask.sample-batch-0", lambda: KW.sample(gen(), 0), "batch_size must be >= 1"),
    case("KeywordTask.sample-batch-float", lambda: KW.sample(gen(), 2.5), "batch_size must be an int"),
    case("KeywordTask.sample-batch-bool", lambda: KW.sample(gen(), True), "batch_size must be an int"),
    case("KeywordTask.sample-generator", lambda: KW.sample(0, 4), "generator must be a torch.Generator"),
    # CopyTask
    case("CopyTask-length-0", lambda: data.CopyTask(length=0), "length must be >= 1"),
    case("CopyTask-length-float", lambda: data.CopyTask(length=1.5), "length must be an int"),
    case("CopyTask-vocab-bool", lambda: data.CopyTask(length=3, vocab=True, distribution="iid"),
         "vocab must be an int"),
    case("CopyTask-vocab-0", lambda: data.CopyTask(length=3, vocab=0, distribution="iid"),
         "vocab must be >= 1"),
    case("CopyTask-vocab-mismatch", lambda: data.CopyTask(length=3, vocab=4), "vocab must equal length"),
    case("CopyTask-distribution-unknown", lambda: data.CopyTask(distribution="shuffle"),
         "distribution must be one of"),
    case("CopyTask-distribution-None", lambda: data.CopyTask(distribution=None),
         "distribution must be one of"),
    case("CopyTask-permutation-float", lambda: data.CopyTask(length=3, target_permutation=(0, 1.7, 2)),
         "target_permutation"),
    case("CopyTask-permutation-integral-float",
         lambda: data.CopyTask(length=3, target_permutation=(0, 1, 2.0)), "target_permutation"),
    case("CopyTask-permutation-bool", lambda: data.CopyTask(length=3, target_permutation=(0, True, 2)),
         "target_permutation"),
    case("CopyTask-permutation-str", lambda: data.CopyTask(length=3, target_permutation="012"),
         "target_permutation"),
    case("CopyTask-permutation-short", lambda: data.CopyTask(length=3, target_permutation=(0, 1)),
         "target_permutation"),
    case("CopyTask-permutation-empty", lambda: data.CopyTask(length=3, target_permutation=()),
         "target_permutation"),
    case("CopyTask-permutation-out-of-range",
         lambda: data.CopyTask(length=3, target_permutation=(0, 1, 3)), "target_permutation"),
    case("CopyTask.sample-batch-negative", lambda: COPY.sample(gen(), -1), "batch_size must be >= 1"),
    case("CopyTask.sample-generator",
         lambda: COPY.sample(None, 2), "generator must be a torch.Generator"),
    # topic_sentences
    case("topic_sentences-word-float",
         lambda: data.topic_sentences([[0, 1.5], [2]], range(3, 9), 2, 4, gen()), r"topic_sets\[0\]"),
    case("topic_sentences-word-bool",
         lambda: data.topic_sentences([[0], [True]], range(3, 9), 2, 4, gen()), r"topic_sets\[1\]"),
    case("topic_sentences-word-str",
         lambda: data.topic_sentences([[0], "ab"], range(3, 9), 2, 4, gen()), r"topic_sets\[1\]"),
    case("topic_sentences-word-negative",
         lambda: data.topic_sentences([[0], [-1]], range(3, 9), 2, 4, gen()), r"topic_sets\[1\]"),
    case("topic_sentences-sets-int", lambda: data.topic_sentences(5, range(3, 9), 2, 4, gen()),
         "topic_sets must be a sequence"),
    case("topic_sentences-sets-flat", lambda: data.topic_sentences([0, 1], range(3, 9), 2, 4, gen()),
         r"topic_sets\[0\]"),
    case("topic_sentences-one-topic", lambda: data.topic_sentences([[0]], range(3, 9), 2, 4, gen()),
         "topic_sets must hold J >= 2"),
    case("topic_sentences-dictionary-float",
         lambda: data.topic_sentences([[0], [1]], [5.5, 6], 2, 4, gen()), "dictionary"),
    case("topic_sentences-dictionary-float-tensor",
         lambda: data.topic_sentences([[0], [1]], torch.tensor([5.0, 6.0]), 2, 4, gen()), "dictionary"),
    case("topic_sentences-dictionary-negative",
         lambda: data.topic_sentences([[0], [1]], [-1, 6], 2, 4, gen()), "dictionary"),
    case("topic_sentences-dictionary-empty",
         lambda: data.topic_sentences([[0], [1]], [], 2, 4, gen()), "dictionary"),
    case("topic_sentences-dictionary-str",
         lambda: data.topic_sentences([[0], [1]], "abc", 2, 4, gen()), "dictionary"),
    case("topic_sentences-m-float", lambda: data.topic_sentences([[0], [1]], range(3, 9), 2.0, 4, gen()),
         "m must be an int"),
    case("topic_sentences-n-0", lambda: data.topic_sentences([[0], [1]], range(3, 9), 2, 0, gen()),
         "n must be >= 1"),
    case("topic_sentences-generator", lambda: data.topic_sentences([[0], [1]], range(3, 9), 2, 4, 0),
         "generator must be a torch.Generator"),
    # TopicTask
    case("TopicTask-n_topics-1", lambda: data.TopicTask(n_topics=1), "n_topics must be >= 2"),
    case("TopicTask-n_topics-float", lambda: data.TopicTask(n_topics=2.0), "n_topics must be an int"),
    case("TopicTask-words_per_topic-0", lambda: data.TopicTask(words_per_topic=0), "words_per_topic"),
    case("TopicTask-m-bool", lambda: data.TopicTask(m=True), "m must be an int"),
    case("TopicTask-n_nontopic-0", lambda: data.TopicTask(n_nontopic=0), "n_nontopic must be >= 1"),
    case("TopicTask-n_train-0", lambda: data.TopicTask(n_train=0), "n_train must be >= 1"),
    case("TopicTask-n_test-float", lambda: data.TopicTask(n_test=1.5), "n_test must be an int"),
    case("TopicTask-seed-float", lambda: data.TopicTask(seed=1.5), "seed must be an int"),
    case("TopicTask-seed-0.9", lambda: data.TopicTask(seed=0.9), "seed must be an int"),
    case("TopicTask-seed-negative", lambda: data.TopicTask(seed=-1), "seed must be >= 0"),
    case("TopicTask-seed-bool", lambda: data.TopicTask(seed=True), "seed must be an int"),
    case("TopicTask.topic_of-float", lambda: TOPIC.topic_of(1.5), "word must be a topic word"),
    case("TopicTask.topic_of-bool", lambda: TOPIC.topic_of(True), "word must be a topic word"),
    case("TopicTask.topic_of-str", lambda: TOPIC.topic_of("0"), "word must be a topic word"),
    case("TopicTask.topic_of-negative", lambda: TOPIC.topic_of(-1), "word must be a topic word"),
    case("TopicTask.topic_of-not-topic", lambda: TOPIC.topic_of(2), "word must be a topic word"),
    # PurityGradedTask
    case("PurityGradedTask-counts-single", lambda: data.PurityGradedTask(frequent_counts=(103,)),
         "frequent_counts"),
    case("PurityGradedTask-counts-float",
         lambda: data.PurityGradedTask(frequent_counts=(103.0, 25)), r"frequent_counts\[0\]"),
    case("PurityGradedTask-counts-negative",
         lambda: data.PurityGradedTask(frequent_counts=(10, -1)), r"frequent_counts\[1\]"),
    case("PurityGradedTask-counts-too-many",
         lambda: data.PurityGradedTask(frequent_counts=(300, 200)), "frequent_counts"),
    case("PurityGradedTask-rare-0", lambda: data.PurityGradedTask(rare_count=0),
         "rare_count must be >= 1"),
    case("PurityGradedTask-rare-bool", lambda: data.PurityGradedTask(rare_count=True), "rare_count"),
    case("PurityGradedTask-rare_per_class-0", lambda: data.PurityGradedTask(rare_per_class=0),
         "rare_per_class"),
    case("PurityGradedTask-seed-float", lambda: data.PurityGradedTask(seed=0.9),
         "seed must be an int"),
    case("PurityGradedTask-m-1", lambda: data.PurityGradedTask(m=1), "m must be >= 2"),
    case("PurityGradedTask-n_nontopic-0", lambda: data.PurityGradedTask(n_nontopic=0), "n_nontopic"),
    case("PurityGradedTask.for_seed-negative",
         lambda: data.PurityGradedTask(n_nontopic=50).for_seed(-1), "seed must be >= 0"),
    # MarkovPairTask
    case("MarkovPairTask-n_words-small", lambda: data.MarkovPairTask(n_words=7), "n_words"),
    case("MarkovPairTask-pairs-0", lambda: data.MarkovPairTask(pairs_per_topic=0),
         "pairs_per_topic"),
    case("MarkovPairTask-length-1", lambda: data.MarkovPairTask(length=1), "length must be >= 2"),
    case("MarkovPairTask-n_train-float", lambda: data.MarkovPairTask(n_train=10.0), "n_train"),
    case("MarkovPairTask-seed-bool", lambda: data.MarkovPairTask(seed=True), "seed must be an int"),
    case("TopicTask.for_seed-float", lambda: TOPIC.for_seed(1.5), "seed must be an int"),
    # SST-2 reading and bags
    case("read_sst2_tsv-int", lambda: data.read_sst2_tsv(5), "path must be a file path"),
    case("read_sst2_tsv-None", lambda: data.read_sst2_tsv(None), "path must be a file path"),
    case("sst2_task-int", lambda: data.sst2_task(5), "directory must be a folder path"),
    case("sst2_task-min_count-0", lambda: data.sst2_task("no-such-folder", min_count=0), "min_count"),
    case("find_sst2-download-str",
         lambda: data.find_sst2(download="yes"), "download must be True or False"),
    case("find_sst2-timeout-negative", lambda: data.find_sst2(timeout=-1), "timeout"),
    case("find_sst2-timeout-nan", lambda: data.find_sst2(timeout=NAN), "timeout"),
    case("BagTask.from_tokens-empty", lambda: data.BagTask.from_tokens([], []), "train_tokens"),
    case("BagTask.from_tokens-length-mismatch", lambda: data.BagTask.from_tokens([["a"]], [0, 1]),
         "train_labels must have one label per sentence"),
    case("BagTask.from_tokens-empty-sentence", lambda: data.BagTask.from_tokens([["a"], []], [0, 1]),
         r"train_tokens\[1\] is an empty sentence"),
    case("BagTask.from_tokens-label-float", lambda: data.BagTask.from_tokens([["a"], ["b"]], [0.5, 1]),
         "train_labels"),
    case("BagTask.from_tokens-label-bool",
         lambda: data.BagTask.from_tokens([["a"], ["b"]], [True, False]),
         "train_labels"),
    case("BagTask.from_tokens-label-negative", lambda: data.BagTask.from_tokens([["a"], ["b"]], [-1, 1]),
         "train_labels"),
    case("BagTask.from_tokens-sentence-str", lambda: data.BagTask.from_tokens(["a b", "c"], [0, 1]),
         r"train_tokens\[0\] must be a list of word strings"),
    case("BagTask.from_tokens-word-int", lambda: data.BagTask.from_tokens([[1, 2]], [0]),
         r"train_tokens\[0\] must hold word strings"),
    case("BagTask.from_tokens-tokens-str",
         lambda: data.BagTask.from_tokens("ab", [0, 1]), "train_tokens"),
    case("BagTask.from_tokens-min_count-0", lambda: data.BagTask.from_tokens([["a"]], [0], min_count=0),
         "min_count"),
    case("BagTask.from_tokens-min_count-float",
         lambda: data.BagTask.from_tokens([["a"]], [0], min_count=1.5),
         "min_count"),
    case("BagTask.from_tokens-test-labels-missing",
         lambda: data.BagTask.from_tokens([["a"]], [0], test_tokens=[["a"]]), "test_labels"),
    case("BagTask.from_tokens-test-empty-sentence",
         lambda: data.BagTask.from_tokens([["a"]], [0], [[]], [0]), r"test_tokens\[0\] is an empty"),
    case("BagTask-all-padding-row", lambda: _bag_task(torch.tensor([False, False])),
         r"train\['mask'\] row 1 is all padding"),
    case("BagTask-int-mask", lambda: data.BagTask(("<pad>", "a"), {"x": torch.tensor([[1]]),
                                                                  "mask": torch.tensor([[1]]),
                                                                  "y": torch.tensor([0])}),
         r"train\['mask'\] must be a bool tensor"),
    case("BagTask-id-out-of-range", lambda: data.BagTask(("<pad>", "a"), {"x": torch.tensor([[2]]),
                                                                         "mask": torch.tensor([[True]]),
                                                                         "y": torch.tensor([0])}),
         r"train\['x'\]"),
    case("BagTask-words-str", lambda: data.BagTask("ab", BAGS.train), "words must be a tuple"),
    case("BagTask.test_set-none", lambda: data.BagTask(BAGS.words, BAGS.train).test_set(), "test set"),
    # encode_corpus
    case("encode_corpus-str", lambda: data.encode_corpus("ab"), "pairs must be a sequence"),
    case("encode_corpus-empty", lambda: data.encode_corpus([]), "pairs is empty"),
    case("encode_corpus-pair-str", lambda: data.encode_corpus([("a", "b")]), r"pairs\[0\] side 0"),
    case("encode_corpus-empty-side",
         lambda: data.encode_corpus([(["a"], [])]), r"pairs\[0\] has an empty side"),
    case("encode_corpus-word-int", lambda: data.encode_corpus([([1], ["a"])]), r"pairs\[0\] side 0"),
    case("encode_corpus-single", lambda: data.encode_corpus([(["a"],)]), r"pairs\[0\] must be a"),
    # ParallelCorpusTask
    case("ParallelCorpusTask-vocab-1", lambda: data.ParallelCorpusTask(vocab=1), "vocab must be >= 2"),
    case("ParallelCorpusTask-vocab-float",
         lambda: data.ParallelCorpusTask(vocab=2.0), "vocab must be an int"),
    case("ParallelCorpusTask-length-0",
         lambda: data.ParallelCorpusTask(length=0), "length must be >= 1"),
    case("ParallelCorpusTask-n_pairs-0",
         lambda: data.ParallelCorpusTask(n_pairs=0), "n_pairs must be >= 1"),
    case("ParallelCorpusTask-zipf-negative", lambda: data.ParallelCorpusTask(zipf=-1.0), "zipf"),
    case("ParallelCorpusTask-zipf-nan", lambda: data.ParallelCorpusTask(zipf=NAN), "zipf"),
    case("ParallelCorpusTask-zipf-inf", lambda: data.ParallelCorpusTask(zipf=INF), "zipf"),
    case("ParallelCorpusTask-zipf-bool", lambda: data.ParallelCorpusTask(zipf=True), "zipf"),
    case("ParallelCorpusTask-reorder-1.5", lambda: data.ParallelCorpusTask(reorder=1.5), "reorder"),
    case("ParallelCorpusTask-reorder-nan", lambda: data.ParallelCorpusTask(reorder=NAN), "reorder"),
    case("ParallelCorpusTask-distinct-int",
         lambda: data.ParallelCorpusTask(distinct=1), "distinct must be a bool"),
    case("ParallelCorpusTask-seed-float",
         lambda: data.ParallelCorpusTask(seed=1.5), "seed must be an int"),
    case("ParallelCorpusTask-seed-negative",
         lambda: data.ParallelCorpusTask(seed=-3), "seed must be >= 0"),
    case("ParallelCorpusTask-vocab-below-length", lambda: data.ParallelCorpusTask(vocab=5, length=10),
         r"vocab \(5\) must be >= length"),
    case("ParallelCorpusTask.from_overlap-0",
         lambda: data.ParallelCorpusTask.from_overlap(0.0), "overlap"),
    case("ParallelCorpusTask.from_overlap-1.5",
         lambda: data.ParallelCorpusTask.from_overlap(1.5), "overlap"),
    case("ParallelCorpusTask.from_overlap-nan",
         lambda: data.ParallelCorpusTask.from_overlap(NAN), "overlap"),
    case("ParallelCorpusTask.from_overlap-bool",
         lambda: data.ParallelCorpusTask.from_overlap(True), "overlap"),
    case("ParallelCorpusTask.from_overlap-length-0",
         lambda: data.ParallelCorpusTask.from_overlap(0.5, 0),
         "length must be >= 1"),
    case("ParallelCorpusTask.held_out-n-0", lambda: CORPUS.held_out(0), "n must be >= 1"),
    case("ParallelCorpusTask.held_out-n-float", lambda: CORPUS.held_out(1.5), "n must be an int"),
    case("ParallelCorpusTask.held_out-seed-negative",
         lambda: CORPUS.held_out(2, seed=-1), "seed must be >= 0"),
    case("ParallelCorpusTask.held_out-seed-float",
         lambda: CORPUS.held_out(2, seed=1.5), "seed must be an int"),
    case("ParallelCorpusTask.to_batch-float-src",
         lambda: CORPUS.to_batch(torch.zeros(1, 3), ids(1, 3), ids(1, 3)), "src must hold integer"),
    case("ParallelCorpusTask.to_batch-src-id-vocab",
         lambda: CORPUS.to_batch(ids(1, 3, value=6), ids(1, 3), ids(1, 3)), "src must hold token ids"),
    case("ParallelCorpusTask.to_batch-tgt-negative",
         lambda: CORPUS.to_batch(ids(1, 3), ids(1, 3, value=-1), ids(1, 3)), "tgt must hold token ids"),
    case("ParallelCorpusTask.to_batch-align-out-of-range",
         lambda: CORPUS.to_batch(ids(1, 3), ids(1, 3), ids(1, 3, value=3)), "align must hold"),
    case("ParallelCorpusTask.to_batch-shape",
         lambda: CORPUS.to_batch(ids(2, 3), ids(1, 3), ids(1, 3)), "same shape"),
    case("ParallelCorpusTask.to_batch-length", lambda: CORPUS.to_batch(ids(1, 2), ids(1, 2), ids(1, 2)),
         r"src must be a \(B, L=3\) tensor"),
    case("ParallelCorpusTask.sample-generator",
         lambda: CORPUS.sample(1, 2), "generator must be a torch.Generator"),
    case("ParallelCorpusTask.sample-batch-0",
         lambda: CORPUS.sample(gen(), 0), "batch_size must be >= 1"),
    # ClassificationAsTranslation
    case("ClassificationAsTranslation-int",
         lambda: data.ClassificationAsTranslation(5), "task must have a sample"),
    case("ClassificationAsTranslation.sample-no-xy",
         lambda: data.ClassificationAsTranslation(COPY).sample(gen(), 2), "'x' and 'y'"),
    case("ClassificationAsTranslation.sample-batch-0",
         lambda: data.ClassificationAsTranslation(KW).sample(gen(), 0), "batch_size must be >= 1"),
]


# =============================================================================== theory.py
THEORY = [
    case("gated_loss-str", lambda: theory.gated_loss("a", 0, 0.5), "beta0 must be an array of real"),
    case("gated_loss-nan", lambda: theory.gated_loss(0, 0, NAN), "p must hold finite"),
    case("gated_loss-bool", lambda: theory.gated_loss(0, [True, False], 0.5), "beta1"),
    case("gated_loss-broadcast", lambda: theory.gated_loss([0, 1], [0, 1, 2], 0.5), "broadcastable"),
    case("gated_flow-p-bool", lambda: theory.gated_flow(0, 0, True), "p must be a real number"),
    case("gated_flow-p-1", lambda: theory.gated_flow(0, 0, 1.0), r"p \(the attention"),
    case("gated_flow-p-nan", lambda: theory.gated_flow(0, 0, NAN), "p must be finite"),
    case("gated_flow-beta0-str", lambda: theory.gated_flow("0", 0, 0.5), "beta0 must be a real number"),
    case("gated_flow-beta1-inf", lambda: theory.gated_flow(0, INF, 0.5), "beta1 must be finite"),
    case("gated_flow-t_max-nan",
         lambda: theory.gated_flow(0, 0, 0.5, t_max=NAN), "t_max must be finite"),
    case("gated_flow-t_max-0", lambda: theory.gated_flow(0, 0, 0.5, t_max=0), "t_max must be > 0"),
    case("gated_flow-n_steps-float",
         lambda: theory.gated_flow(0, 0, 0.5, n_steps=2.0), "n_steps must be an int"),
    case("gated_flow-n_steps-bool",
         lambda: theory.gated_flow(0, 0, 0.5, n_steps=True), "n_steps must be an int"),
    case("gated_flow-n_steps-0",
         lambda: theory.gated_flow(0, 0, 0.5, n_steps=0), "n_steps must be >= 1"),
    case("gated_flow_closed_form-tau-nan", lambda: theory.gated_flow_closed_form(0, 0, 0.5, [0.0, NAN]),
         "tau must hold finite"),
    case("gated_flow_closed_form-tau-str", lambda: theory.gated_flow_closed_form(0, 0, 0.5, "x"),
         "tau must be an array"),
    case("gated_flow_closed_form-p-0",
         lambda: theory.gated_flow_closed_form(0, 0, 0.0, [0.0]), r"p \(the"),
    case("gated_ce_loss-a-nan", lambda: theory.gated_ce_loss(0, 0, NAN), "a must hold finite"),
    case("gated_ce_loss-beta0-str", lambda: theory.gated_ce_loss("x", 0, 0), "beta0"),
    case("gated_ce_flow-p-1", lambda: theory.gated_ce_flow(0, 0, 1.0), r"p \(the attention"),
    case("gated_ce_flow-t_max-0", lambda: theory.gated_ce_flow(0, 0, 0.5, t_max=0), "t_max must be > 0"),
    case("gated_ce_flow-n_steps-0",
         lambda: theory.gated_ce_flow(0, 0, 0.5, n_steps=0), "n_steps must be >= 1"),
    case("gated_ce_descent-lr-nan",
         lambda: theory.gated_ce_descent(0, 0, 0.5, NAN, 3), "lr must be finite"),
    case("gated_ce_descent-lr-bool",
         lambda: theory.gated_ce_descent(0, 0, 0.5, True, 3), "lr must be a real"),
    case("gated_ce_descent-lr-0", lambda: theory.gated_ce_descent(0, 0, 0.5, 0, 3), "lr must be > 0"),
    case("gated_ce_descent-steps-float", lambda: theory.gated_ce_descent(0, 0, 0.5, 0.1, 1.5),
         "^steps must be an int"),
    case("gated_ce_descent-steps-0",
         lambda: theory.gated_ce_descent(0, 0, 0.5, 0.1, 0), "^steps must be >= 1"),
    case("sen_curve-nan", lambda: theory.sen_curve(NAN, 20), "score must hold finite"),
    case("sen_curve-nan-in-array", lambda: theory.sen_curve([1.0, NAN], 20), "score must hold finite"),
    case("sen_curve-inf", lambda: theory.sen_curve(INF, 20), "score must hold finite"),
    case("sen_curve-str", lambda: theory.sen_curve("a", 20), "score must be an array"),
    case("sen_curve-negative", lambda: theory.sen_curve(-0.5, 20), "score must be >= 0"),
    case("sen_curve-m-float", lambda: theory.sen_curve(1.0, 2.0), "m must be an int"),
    case("sen_curve-m-bool", lambda: theory.sen_curve(1.0, True), "m must be an int"),
    case("sen_curve-m-0", lambda: theory.sen_curve(1.0, 0), r"m \(non-topic words per sentence\)"),
    case("sen_relative_gap-shape", lambda: theory.sen_relative_gap([1.0, 2.0], [1.0], 20), "same shape"),
    case("sen_relative_gap-m-0-no-points", lambda: theory.sen_relative_gap([1.0], [0.0], 0),
         r"m \(non-topic words"),
    case("sen_relative_gap-min_norm-nan",
         lambda: theory.sen_relative_gap([1.0], [1.0], 20, NAN), "min_norm"),
    case("sen_relative_gap-score-nan",
         lambda: theory.sen_relative_gap([NAN], [1.0], 20), "score must hold"),
    case("sen_relative_gap-norm-str", lambda: theory.sen_relative_gap([1.0], ["a"], 20), "norm must be"),
    case("count_table-source-float", lambda: theory.count_table([[0, 1.7]], [[0]]), r"sources\[0\]"),
    case("count_table-target-float", lambda: theory.count_table([[0]], [[0.5]]), r"targets\[0\]"),
    case("count_table-2d-float", lambda: theory.count_table(np.array([[0.0, 1.0]]), np.array([[0]])),
         "sources must be an array of ints"),
    case("count_table-source-bool", lambda: theory.count_table([[True, False]], [[0]]), r"sources\[0\]"),
    case("count_table-source-str", lambda: theory.count_table([["a"]], [[0]]), r"sources\[0\]"),
    case("count_table-source-int", lambda: theory.count_table(5, [[0]]), "sources must be a sequence"),
    case("count_table-n_in-float",
         lambda: theory.count_table(SRC, TGT, n_in=5.5), "n_in must be an int"),
    case("count_table-n_in-bool",
         lambda: theory.count_table([[0]], [[0]], n_in=True), "n_in must be an int"),
    case("count_table-n_out-negative",
         lambda: theory.count_table(SRC, TGT, n_out=-1), "n_out must be an int"),
    case("count_table-n_in-too-small", lambda: theory.count_table(SRC, TGT, n_in=2), r"n_in/n_out"),
    case("count_table-empty", lambda: theory.count_table([], []), "sources is empty"),
    case("count_table-unpaired", lambda: theory.count_table([[0]], [[0], [1]]), "pair up"),
    case("count_table-empty-side", lambda: theory.count_table([[0], []], [[0], [1]]), "empty side"),
    case("count_table-negative", lambda: theory.count_table([[0, -1]], [[0]]), r"sources\[0\].*>= 0"),
    case("count_table-strings", lambda: theory.count_table("ab", "ab"), "not strings"),
    case("ibm1_translation-negative",
         lambda: theory.ibm1_translation([[1.0, -1.0]]), "C must hold finite counts"),
    case("ibm1_translation-nan",
         lambda: theory.ibm1_translation([[NAN, 1.0]]), r"C \(the count table\) must hold no NaN"),
    case("ibm1_translation-1d",
         lambda: theory.ibm1_translation([1.0, 2.0]), "C must be a non-empty 2-D"),
    case("ibm1_translation-str", lambda: theory.ibm1_translation("ab"), r"C \(the count table\)"),
    case("ibm1_probe-source-float", lambda: theory.ibm1_probe(np.ones((3, 3)), [0, 1.5], [0]),
         "source must be an array of ints"),
    case("ibm1_probe-target-float", lambda: theory.ibm1_probe(np.ones((3, 3)), [0], [0.5]),
         "target must be an array of ints"),
    case("ibm1_probe-out-of-range",
         lambda: theory.ibm1_probe(np.ones((2, 2)), [0, 2], [0]), "out of range"),
    case("ibm1_probe-negative", lambda: theory.ibm1_probe(np.ones((2, 2)), [0], [-1]), "out of range"),
    case("ibm1_probe-trans-1d", lambda: theory.ibm1_probe(np.ones(3), [0], [0]), "trans must be a 2-D"),
    case("ibm1_probe-trans-nan",
         lambda: theory.ibm1_probe([[NAN, 1.0]], [0], [0]), "trans must hold finite"),
    case("ibm1_probe-empty", lambda: theory.ibm1_probe(np.ones((2, 2)), [], [0]), "at least one token"),
    case("ibm1_em-iterations-0",
         lambda: theory.ibm1_em(SRC, TGT, iterations=0), "iterations must be >= 1"),
    case("ibm1_em-iterations-float",
         lambda: theory.ibm1_em(SRC, TGT, iterations=2.0), "iterations must be an int"),
    case("ibm1_em-null-str", lambda: theory.ibm1_em(SRC, TGT, null="yes"), "null must be True or False"),
    case("ibm1_em-init-shape",
         lambda: theory.ibm1_em(SRC, TGT, init=np.ones((2, 2))), "init must have shape"),
    case("ibm1_em-init-nan",
         lambda: theory.ibm1_em(SRC, TGT, init=np.full((3, 3), NAN)), "init must hold"),
    case("ibm1_em-source-float", lambda: theory.ibm1_em([[0.5]], [[0]]), r"sources\[0\]"),
    case("ibm1_em-n_in-float", lambda: theory.ibm1_em(SRC, TGT, n_in=3.5), "n_in must be an int"),
    case("dictionary_recovery-float",
         lambda: theory.dictionary_recovery(np.eye(2), [0.5, 1]), "dictionary"),
    case("dictionary_recovery-empty",
         lambda: theory.dictionary_recovery(np.eye(2), []), "dictionary must not be empty"),
    case("dictionary_recovery-out-of-range", lambda: theory.dictionary_recovery(np.eye(2), [0, 5]),
         "dictionary must hold output word ids"),
    case("dictionary_recovery-trans-1d",
         lambda: theory.dictionary_recovery(np.ones(2), [0]), r"trans \("),
    case("dictionary_recovery-trans-nan",
         lambda: theory.dictionary_recovery([[NAN, 1.0]], [0]), "trans must hold"),
    case("proxy_init_velocity-dims-float",
         lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=[2.5]),
         "dims must be an array of ints"),
    case("proxy_init_velocity-dims-0",
         lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=[0]), "dims must be"),
    case("proxy_init_velocity-dims-empty", lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=[]),
         "dims must not be empty"),
    case("proxy_init_velocity-dims-int", lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=4),
         "dims must be a sequence"),
    case("proxy_init_velocity-seeds-float",
         lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=[2], seeds=[0.9]),
         r"seeds\[0\] must be an int"),
    case("proxy_init_velocity-seeds-empty",
         lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=[2], seeds=[]),
         "seeds must hold at least one"),
    case("proxy_init_velocity-seeds-negative",
         lambda: theory.proxy_init_velocity(SRC, TGT, 3, 3, dims=[2], seeds=[-1]), r"seeds\[0\]"),
    case("proxy_init_velocity-sources-float",
         lambda: theory.proxy_init_velocity([[0.5, 1.0]], [[0, 1]], 3, 3, dims=[2]),
         "sources must be an array"),
    case("proxy_init_velocity-sources-out-of-range",
         lambda: theory.proxy_init_velocity([[0, 3]], [[0, 1]], 3, 3, dims=[2]),
         "sources must be an array"),
    case("proxy_init_velocity-n_in-float",
         lambda: theory.proxy_init_velocity(SRC, TGT, 3.0, 3, dims=[2]),
         "n_in must be an int"),
    case("proxy_init_velocity-unpaired",
         lambda: theory.proxy_init_velocity([[0]], [[0], [1]], 3, 3, dims=[2]),
         "pair up"),
    case("attention_loss-target-out-of-range",
         lambda: theory.attention_loss([0.5, 0.5], [[0, 0], [0, 0]], 2),
         "target must be an output index"),
    case("attention_loss-target-float", lambda: theory.attention_loss([0.5, 0.5], [[0, 0], [0, 0]], 1.0),
         "target must be an output index"),
    case("attention_loss-alpha-length", lambda: theory.attention_loss([1.0], [[0, 0], [0, 0]], 0),
         "alpha must have one weight per row"),
    case("attention_loss-gammas-nan",
         lambda: theory.attention_loss([1.0], [[NAN, 0]], 0),
         "gammas must be finite|gammas must hold no NaN"),
    case("attention_loss-gamma_s-shape",
         lambda: theory.attention_loss([1.0], [[0, 0]], 0, gamma_s=[1.0]),
         "gamma_s must have one entry per output"),
    case("optimal_attention-tol-nan",
         lambda: theory.optimal_attention(GAMMAS, tol=NAN), "tol must be a finite"),
    case("optimal_attention-tol-negative",
         lambda: theory.optimal_attention(GAMMAS, tol=-1.0), "tol must be"),
    case("optimal_attention-target-bool",
         lambda: theory.optimal_attention(GAMMAS, target=True), "target must be"),
    case("optimal_attention-target-3",
         lambda: theory.optimal_attention(GAMMAS, target=3), "target must be"),
    case("optimal_attention-method",
         lambda: theory.optimal_attention(GAMMAS, method="sgd"), "method must be"),
    case("optimal_attention-lr-0", lambda: theory.optimal_attention(GAMMAS, lr=0), "lr must be > 0"),
    case("optimal_attention-lr-nan",
         lambda: theory.optimal_attention(GAMMAS, lr=NAN), "lr must be finite"),
    case("optimal_attention-steps-0",
         lambda: theory.optimal_attention(GAMMAS, steps=0), "^steps must be >= 1"),
    case("optimal_attention-steps-float", lambda: theory.optimal_attention(GAMMAS, steps=10.0),
         "^steps must be an int"),
    case("optimal_attention-gammas-1d",
         lambda: theory.optimal_attention([0.0, 1.0]), "gammas must be an L x"),
    case("optimal_attention-gammas-str",
         lambda: theory.optimal_attention("ab"), "gammas must be an array"),
    case("optimal_attention-gamma_s-shape", lambda: theory.optimal_attention(GAMMAS, gamma_s=[0.0]),
         "gamma_s must have one entry"),
    case("optimal_attention-gamma_s-nan", lambda: theory.optimal_attention(GAMMAS, gamma_s=[0, 0, NAN]),
         "gamma_s must hold finite"),
]


# =============================================================================== metrics.py
_U = np.array([[0.1, 0.5, 0.4]])
METRICS = [
    case("keyword_probe-missing-pos", lambda: metrics.keyword_probe(CLASSIFIER, {"x": ids(1, 2, 3)}),
         r"batch must hold \['x', 'pos'\]"),
    case("keyword_probe-not-dict", lambda: metrics.keyword_probe(CLASSIFIER, ids(1, 2, 3)),
         "batch must be a dict"),
    case("keyword_probe-id-vocab",
         lambda: metrics.keyword_probe(CLASSIFIER, {"x": ids(1, 2, 3, value=4), "pos": ids(1, 2)}),
         "token ids"),
    case("first_step-threshold-nan",
         lambda: metrics.first_step([0, 1], [0.1, 0.2], NAN), "threshold must be"),
    case("first_step-threshold-bool",
         lambda: metrics.first_step([0, 1], [0.1, 0.2], True), "threshold must be"),
    case("first_step-above-str", lambda: metrics.first_step([0, 1], [0.1, 0.2], 0.5, above="yes"),
         "above must be True or False"),
    case("first_step-lengths",
         lambda: metrics.first_step([0, 1, 2], [0.1, 0.2], 0.5), "values has 2 points"),
    case("first_step-steps-nan",
         lambda: metrics.first_step([0, NAN], [0.1, 0.2], 0.5), "steps must hold"),
    case("first_step-values-str", lambda: metrics.first_step([0, 1], ["a", "b"], 0.5), "values must be"),
    case("wilson_interval-n-bool", lambda: metrics.wilson_interval(1, True), "n must be an int"),
    case("wilson_interval-n-float", lambda: metrics.wilson_interval(1, 2.0), "n must be an int"),
    case("wilson_interval-n-0", lambda: metrics.wilson_interval(0, 0), "n must be an int >= 1"),
    case("wilson_interval-successes-float", lambda: metrics.wilson_interval(1.5, 3), "successes"),
    case("wilson_interval-successes-bool", lambda: metrics.wilson_interval(True, 3), "successes"),
    case("wilson_interval-successes-above-n", lambda: metrics.wilson_interval(4, 3), "successes"),
    case("wilson_interval-confidence-nan",
         lambda: metrics.wilson_interval(1, 3, confidence=NAN), "confidence"),
    case("wilson_interval-confidence-1",
         lambda: metrics.wilson_interval(1, 3, confidence=1.0), "confidence"),
    case("success_rate-empty", lambda: metrics.success_rate([]), "ok must be a non-empty"),
    case("success_rate-int", lambda: metrics.success_rate([1, 0]), "ok must be a non-empty 1-D bool"),
    case("topic_purity-int-mask",
         lambda: metrics.topic_purity(ids(2, 2), [0, 1], 3, mask=torch.ones(2, 2, dtype=torch.long)),
         "mask must be a bool mask"),
    case("topic_purity-mask-shape",
         lambda: metrics.topic_purity(ids(2, 2), [0, 1], 3, mask=torch.ones(2, 3, dtype=torch.bool)),
         r"mask must have shape \(2, 2\)"),
    case("topic_purity-vocab-bool",
         lambda: metrics.topic_purity(torch.zeros(2, 2, dtype=torch.long), [0, 1], True),
         "vocab must be an int"),
    case("topic_purity-vocab-float",
         lambda: metrics.topic_purity(ids(2, 2), [0, 1], 5.0), "vocab must be an int"),
    case("topic_purity-vocab-small",
         lambda: metrics.topic_purity(ids(2, 2, value=4), [0, 1], 3), "vocab must be"),
    case("topic_purity-x-float",
         lambda: metrics.topic_purity(torch.zeros(2, 2), [0, 1], 3), r"x \(word ids\)"),
    case("topic_purity-x-empty",
         lambda: metrics.topic_purity(torch.zeros(0, 2, dtype=torch.long), [], 3),
         r"x \(word ids\) must not be empty"),
    case("topic_purity-x-negative",
         lambda: metrics.topic_purity(ids(2, 2, value=-1), [0, 1], 3), r"x \(word ids\)"),
    case("topic_purity-y-three-classes",
         lambda: metrics.topic_purity(ids(2, 2), [0, 2], 3), "binary labels"),
    case("topic_purity-y-float",
         lambda: metrics.topic_purity(ids(2, 2), [0.0, 1.0], 3), r"y \(labels\)"),
    case("attended_words-id-vocab",
         lambda: metrics.attended_words(TOPIC_MODEL, ids(2, 3, value=7)), "x must hold"),
    case("attended_words-float",
         lambda: metrics.attended_words(TOPIC_MODEL, torch.zeros(2, 3)), "x must hold"),
    case("attended_words-1d",
         lambda: metrics.attended_words(TOPIC_MODEL, ids(3)), r"x must be an \(N, L\)"),
    case("attended_words-int-mask",
         lambda: metrics.attended_words(TOPIC_MODEL, ids(2, 3), torch.ones(2, 3, dtype=torch.long)),
         "mask must be a bool mask"),
    case("attended_words-mask-shape",
         lambda: metrics.attended_words(TOPIC_MODEL, ids(2, 3), torch.ones(2, 2, dtype=torch.bool)),
         "mask must have x's shape"),
    case("sen_probe-words-float", lambda: metrics.sen_probe([0.5]), "words must be an array of ints"),
    case("sen_probe-words-bool", lambda: metrics.sen_probe([True]), "words must be an array of ints"),
    case("sen_probe-words-empty", lambda: metrics.sen_probe([]), "words must not be empty"),
    case("sen_probe-words-negative", lambda: metrics.sen_probe([-1]), "words must be an array of ints"),
    case("sen_probe-nontopic-float", lambda: metrics.sen_probe([0], nontopic=[1.5]), "nontopic must be"),
    case("sen_probe-words-out-of-range",
         lambda: metrics.sen_probe([7])(TOPIC_MODEL, {"x": ids(1, 2, 3)}),
         r"words must hold word ids in \[0, 6\]"),
    case("eq8_rates-words-float",
         lambda: metrics.eq8_rates(TOPIC_MODEL, {"x": ids(1, 2, 3), "y": ids(1, 2, high=2)},
                                                            [1.5]), "words must be"),
    case("eq8_rates-words-out-of-range",
         lambda: metrics.eq8_rates(TOPIC_MODEL, {"x": ids(1, 2, 3), "y": ids(1, 2, high=2)}, [7]),
         "words must hold"),
    case("eq8_rates-missing-y",
         lambda: metrics.eq8_rates(TOPIC_MODEL, {"x": ids(1, 2, 3)}, [0]), "batch must hold"),
    case("t_interval-nan", lambda: metrics.t_interval([NAN, 1.0]), "values must hold finite"),
    case("t_interval-inf", lambda: metrics.t_interval([INF, 1.0]), "values must hold finite"),
    case("t_interval-str", lambda: metrics.t_interval(["a", "b"]), "values must be an array"),
    case("t_interval-empty", lambda: metrics.t_interval([]), "values must hold at least one run"),
    case("t_interval-scalar", lambda: metrics.t_interval(1.0), "values must hold at least one run"),
    case("t_interval-confidence-bool",
         lambda: metrics.t_interval([1.0, 2.0], confidence=True), "confidence"),
    case("t_interval-confidence-nan",
         lambda: metrics.t_interval([1.0, 2.0], confidence=NAN), "confidence"),
    case("t_interval-axis-float",
         lambda: metrics.t_interval([1.0, 2.0], axis=0.0), "axis must be an int"),
    case("t_interval-axis-out-of-range",
         lambda: metrics.t_interval([1.0, 2.0], axis=1), "axis must be an int"),
    case("classify_heads-good-bool",
         lambda: metrics.classify_heads(np.ones((2, 2)), good=True), "good must be"),
    case("classify_heads-bad-nan",
         lambda: metrics.classify_heads(np.ones((2, 2)), bad=NAN), "bad must be"),
    case("classify_heads-acc-nan",
         lambda: metrics.classify_heads([[NAN, 1.0]]), "final_acc must hold finite numbers"),
    case("classify_heads-1d",
         lambda: metrics.classify_heads(np.ones(3)), "final_acc must be a non-empty"),
    case("classify_heads-bad-above-good",
         lambda: metrics.classify_heads(np.ones((2, 2)), good=0.5, bad=0.6),
         "bad < good"),
    case("classify_heads-str", lambda: metrics.classify_heads([["a"]]), "final_acc must be an array"),
    case("first_to_diagonal-level-nan", lambda: metrics.first_to_diagonal(np.ones((2, 1)), [0, 1], NAN),
         "level must be"),
    case("first_to_diagonal-shape", lambda: metrics.first_to_diagonal(np.ones((3, 1)), [0, 1]),
         r"head_attn_acc must be \(E, K\)"),
    case("first_to_diagonal-steps-float", lambda: metrics.first_to_diagonal(np.ones((2, 1)), [0.5, 1.5]),
         "steps must be an array of ints"),
    case("wilson_rate_interval-rate-above-1",
         lambda: metrics.wilson_rate_interval(1.5, 10), r"rate must be in \[0, 1\]"),
    case("wilson_rate_interval-rate-nan",
         lambda: metrics.wilson_rate_interval(NAN, 10), "rate must be"),
    case("wilson_rate_interval-n-0", lambda: metrics.wilson_rate_interval(0.5, 0), "n must be"),
    case("rate_difference-not-a-triple",
         lambda: metrics.rate_difference((0.5, 0.2), (0.5, 0.2, 0.8)), r"a must be a \(rate, low"),
    case("rate_difference-unordered",
         lambda: metrics.rate_difference((0.5, 0.2, 0.8), (0.5, 0.6, 0.8)),
         "b must be .* 0 <= low <= rate <= high <= 1"),
    case("newcombe_interval-k-above-n",
         lambda: metrics.newcombe_interval(3, 2, 1, 4), r"k1 \(of n1\)"),
    case("fisher_exact-k2-float",
         lambda: metrics.fisher_exact(1, 4, 1.5, 4), r"k2 \(of n2\)"),
    case("fisher_exact-alternative",
         lambda: metrics.fisher_exact(1, 4, 1, 4, alternative="less"), "alternative must be"),
    case("verdict_repeat-n_tokens-bool",
         lambda: metrics.verdict_repeat(np.ones((2, 2)), n_tokens=True), "n_tokens"),
    case("verdict_repeat-n_tokens-float",
         lambda: metrics.verdict_repeat(np.ones((2, 2)), n_tokens=2.5), "n_tokens"),
    case("verdict_repeat-n_tokens-0",
         lambda: metrics.verdict_repeat(np.ones((2, 2)), n_tokens=0), "n_tokens"),
    case("verdict_repeat-one-seed",
         lambda: metrics.verdict_repeat(np.ones((2, 1))), "n_data_seeds >= 2"),
    case("verdict_repeat-good-nan",
         lambda: metrics.verdict_repeat(np.ones((2, 2)), good=NAN), "good must be"),
    case("agreement-k-0", lambda: metrics.agreement(_U, _U, k=0), r"k \(the top fraction\)"),
    case("agreement-k-bool", lambda: metrics.agreement(_U, _U, k=True), r"k \(the top fraction\)"),
    case("agreement-k-nan", lambda: metrics.agreement(_U, _U, k=NAN), r"k \(the top fraction\)"),
    case("agreement-shape",
         lambda: metrics.agreement(_U, _U[:, :2]), "u and v must have the same shape"),
    case("agreement-reduce-str",
         lambda: metrics.agreement(_U, _U, reduce="yes"), "reduce must be True or False"),
    case("agreement-u-str", lambda: metrics.agreement([["a", "b"]], [["c", "d"]]), "u must be an array"),
    case("agreement-u-nan", lambda: metrics.agreement([[NAN, 1.0]], [[0.0, 1.0]]), "u must hold no NaN"),
    case("agreement-empty",
         lambda: metrics.agreement(np.ones((2, 0)), np.ones((2, 0))), "last axis of positions"),
    case("agreement_by_member-shape",
         lambda: metrics.agreement_by_member(np.ones((2, 3)), np.ones((3, 3))),
         "v must have u's shape"),
    case("agreement_by_member-1d",
         lambda: metrics.agreement_by_member(np.ones(3), np.ones(3)), "u must be an"),
    case("agreement_baseline-length-0", lambda: metrics.agreement_baseline(0), "lengths must be >= 1"),
    case("agreement_baseline-k-nan",
         lambda: metrics.agreement_baseline(5, k=NAN), r"k \(the top fraction\)"),
    case("agreement_baseline-str", lambda: metrics.agreement_baseline("abc"), "v must be an array"),
    case("kendall_tau-shape",
         lambda: metrics.kendall_tau(_U, _U[:, :2]), "u and v must have the same shape"),
    case("kendall_tau-reduce-int",
         lambda: metrics.kendall_tau(_U, _U, reduce=1), "reduce must be True or False"),
    case("kendall_tau-nan", lambda: metrics.kendall_tau(_U, [[NAN, 1.0, 2.0]]), "v must hold no NaN"),
    case("leave_one_out-2d",
         lambda: metrics.leave_one_out(CLASSIFIER, ids(2, 3)), r"x must be an \(S, B, L\)"),
    case("leave_one_out-L-1",
         lambda: metrics.leave_one_out(CLASSIFIER, ids(1, 2, 1)), "x must have L >= 2"),
    case("leave_one_out-float", lambda: metrics.leave_one_out(CLASSIFIER, torch.zeros(1, 2, 3)),
         "x must hold integer token ids"),
    case("leave_one_out-id-vocab",
         lambda: metrics.leave_one_out(CLASSIFIER, ids(1, 2, 3, value=4)), "token ids"),
]


# =============================================================================== plotting.py
PLOTTING = [
    case("fig_to_png-None", lambda: plotting.fig_to_png(None), "fig must be a matplotlib Figure"),
    case("fig_to_png-axes",
         lambda: plotting.fig_to_png(_figure().axes[0]), "fig must be a matplotlib Figure"),
    case("fig_to_png-dpi-0", lambda: plotting.fig_to_png(_figure(), dpi=0), "dpi must be"),
    case("fig_to_png-dpi-bool", lambda: plotting.fig_to_png(_figure(), dpi=True), "dpi must be"),
    case("fig_to_png-dpi-nan", lambda: plotting.fig_to_png(_figure(), dpi=NAN), "dpi must be"),
    case("fig_to_png-dpi-str", lambda: plotting.fig_to_png(_figure(), dpi="100"), "dpi must be"),
    case("figure_slider-str",
         lambda: plotting.figure_slider("abc", _figure), "values must be a sequence"),
    case("figure_slider-empty",
         lambda: plotting.figure_slider([], _figure), "values must contain at least one"),
    case("figure_slider-int", lambda: plotting.figure_slider(5, _figure), "values must be a sequence"),
    case("figure_slider-draw-None", lambda: plotting.figure_slider([1], None), "draw must be callable"),
    case("figure_slider-draw-returns-axes",
         lambda: plotting.figure_slider([1], lambda v: _figure().axes[0]),
         r"draw\(1\) must return a matplotlib Figure"),
    case("figure_slider-labels-length", lambda: plotting.figure_slider([1, 2], _figure, labels=["a"]),
         "labels must have one entry per value"),
    case("figure_slider-labels-str", lambda: plotting.figure_slider([1, 2], _figure, labels="ab"),
         "labels must be a sequence of strings"),
    case("figure_slider-labels-int", lambda: plotting.figure_slider([1, 2], _figure, labels=[1, 2]),
         "labels must be strings"),
    case("figure_slider-labels-not-sequence", lambda: plotting.figure_slider([1, 2], _figure, labels=5),
         "labels must be a sequence"),
    case("figure_slider-labels-duplicate",
         lambda: plotting.figure_slider([1, 2], _figure, labels=["a", "a"]),
         "must be distinct"),
    case("figure_slider-description-int", lambda: plotting.figure_slider([1], _figure, description=5),
         "description must be a string"),
    case("figure_slider-readout-str", lambda: plotting.figure_slider([1], _figure, readout="yes"),
         "readout must be True or False"),
    case("heatmap-ax-None", lambda: plotting.heatmap(None, np.eye(2)), "ax must be a matplotlib Axes"),
    case("heatmap-1d",
         lambda: plotting.heatmap(_figure().axes[0], np.ones(3)), "matrix must be a non-empty 2-D"),
    case("heatmap-empty",
         lambda: plotting.heatmap(_figure().axes[0], np.ones((0, 2))), "matrix must be a non-empty"),
    case("heatmap-str",
         lambda: plotting.heatmap(_figure().axes[0], [["a", "b"]]),
         "matrix must be an array of numbers"),
    case("heatmap-ragged",
         lambda: plotting.heatmap(_figure().axes[0], [[1, 2], [3]]), "matrix must be a 2-D array"),
    case("heatmap-colorbar-str", lambda: plotting.heatmap(_figure().axes[0], np.eye(2), colorbar="yes"),
         "colorbar must be True or False"),
]


# =============================================================================== models.py
TOKEN_IDS = "token ids|src|x"
MODELS = [
    # AttentionClassifier
    case("AttentionClassifier-vocab-1",
         lambda: models.AttentionClassifier(vocab=1), "vocab must be an int >= 2"),
    case("AttentionClassifier-vocab-float",
         lambda: models.AttentionClassifier(vocab=4.5), "vocab must be an int"),
    case("AttentionClassifier-embed-0",
         lambda: models.AttentionClassifier(4, embed=0), "embed must be an int"),
    case("AttentionClassifier-hidden-bool",
         lambda: models.AttentionClassifier(4, hidden=True), "hidden must be"),
    case("AttentionClassifier-attention",
         lambda: models.AttentionClassifier(4, attention="soft"), "attention must be"),
    case("AttentionClassifier-seeds-empty",
         lambda: models.AttentionClassifier(4, seeds=[]), "seeds must hold"),
    case("AttentionClassifier-seeds-float",
         lambda: models.AttentionClassifier(4, seeds=[1.5]), r"seeds\[0\]"),
    case("AttentionClassifier-seeds-int",
         lambda: models.AttentionClassifier(4, seeds=5), "seeds must be a list"),
    case("AttentionClassifier-x-id-vocab", lambda: CLASSIFIER(ids(1, 2, 3, value=4)), TOKEN_IDS),
    case("AttentionClassifier-x-negative", lambda: CLASSIFIER(ids(1, 2, 3, value=-1)), TOKEN_IDS),
    case("AttentionClassifier-x-float", lambda: CLASSIFIER(torch.zeros(1, 2, 3)), TOKEN_IDS),
    case("AttentionClassifier-x-members", lambda: CLASSIFIER(ids(2, 2, 3)), "ids has leading dimension"),
    case("AttentionClassifier-x-2d", lambda: CLASSIFIER(ids(1, 3)), "x must"),
    case("AttentionClassifier-x-empty", lambda: CLASSIFIER(ids(1, 2, 0)), "x must"),
    case("AttentionClassifier.loss-missing-y",
         lambda: CLASSIFIER.loss({"x": ids(1, 2, 3)}), "batch is missing 'y'"),
    case("AttentionClassifier.loss-not-dict",
         lambda: CLASSIFIER.loss([ids(1, 2, 3)]), "batch must be a dict"),
    case("AttentionClassifier.loss-members",
         lambda: CLASSIFIER.loss({"x": ids(2, 2, 3), "y": torch.zeros(2, 2)}),
         r"batch\['x'\] has leading dimension"),
    case("AttentionClassifier.loss-y-not-binary",
         lambda: CLASSIFIER.loss({"x": ids(1, 2, 3), "y": torch.full((1, 2), 2.0)}), r"batch\['y'\]"),
    case("AttentionClassifier.evaluate-id-vocab",
         lambda: CLASSIFIER.evaluate({"x": ids(1, 2, 3, value=4), "y": torch.zeros(1, 2)}), TOKEN_IDS),
    # Seq2Seq
    case("Seq2Seq-vocab-1", lambda: models.Seq2Seq(vocab=1), "vocab must be an int >= 2"),
    case("Seq2Seq-heads-0", lambda: models.Seq2Seq(5, 2, 2, heads=0), "heads must be an int"),
    case("Seq2Seq-heads-float", lambda: models.Seq2Seq(5, 2, 2, heads=2.0), "heads must be an int"),
    case("Seq2Seq-cell", lambda: models.Seq2Seq(5, 2, 2, cell="rnn"), "cell must be one of"),
    case("Seq2Seq-attention-int",
         lambda: models.Seq2Seq(5, 2, 2, attention=1), "attention must be one of"),
    case("Seq2Seq-head_reduce",
         lambda: models.Seq2Seq(5, 2, 2, head_reduce="max"), "head_reduce must be one of"),
    case("Seq2Seq-head_proj-int",
         lambda: models.Seq2Seq(5, 2, 2, head_proj=1), "head_proj must be True or False"),
    case("Seq2Seq-head_seeds-count",
         lambda: models.Seq2Seq(5, 2, 2, head_seeds=[1, 2]), "head_seeds must have one"),
    case("Seq2Seq-head_seeds-float", lambda: models.Seq2Seq(5, 2, 2, head_seeds=[1.5]), "head_seeds"),
    case("Seq2Seq-head_seeds-bool", lambda: models.Seq2Seq(5, 2, 2, head_seeds=[True]), "head_seeds"),
    case("Seq2Seq-head_seeds-negative", lambda: models.Seq2Seq(5, 2, 2, head_seeds=[-1]), "head_seeds"),
    case("Seq2Seq-head_seeds-str", lambda: models.Seq2Seq(5, 2, 2, head_seeds="a"), "head_seeds"),
    case("Seq2Seq-head_seeds-heads",
         lambda: models.Seq2Seq(5, 2, 2, heads=2, head_seeds=[[1]]), "head_seeds"),
    case("Seq2Seq-seeds-bool", lambda: models.Seq2Seq(5, 2, 2, seeds=[True]), r"seeds\[0\]"),
    case("Seq2Seq-src-id-vocab", lambda: S2S(ids(1, 2, 3, value=5), ids(1, 2, 3)), TOKEN_IDS),
    case("Seq2Seq-tgt_in-id-vocab", lambda: S2S(ids(1, 2, 3), ids(1, 2, 3, value=5)), TOKEN_IDS),
    case("Seq2Seq-src-float", lambda: S2S(torch.zeros(1, 2, 3), ids(1, 2, 3)), TOKEN_IDS),
    case("Seq2Seq-src-empty", lambda: S2S(ids(1, 2, 0), ids(1, 2, 3)), "src"),
    case("Seq2Seq.loss-tgt-id-vocab",
         lambda: S2S.loss({"src": ids(1, 2, 3), "tgt_in": ids(1, 2, 3), "tgt": ids(1, 2, 3, value=5)}),
         r"batch\['tgt'\]"),
    case("Seq2Seq.loss-missing-tgt", lambda: S2S.loss({"src": ids(1, 2, 3), "tgt_in": ids(1, 2, 3)}),
         "batch is missing 'tgt'"),
    case("Seq2Seq.evaluate-align-out-of-range",
         lambda: S2S.evaluate({"src": ids(1, 2, 3), "tgt_in": ids(1, 2, 3), "tgt": ids(1, 2, 3),
                               "align": ids(1, 2, 3, value=7)}), "align"),
    case("Seq2Seq.lexical_probe-tgt-id-vocab",
         lambda: S2S.lexical_probe(ids(1, 2, 3), ids(1, 2, 3), ids(1, 2, 3, value=5)), "tgt"),
    # BagOfWordsProxy
    case("BagOfWordsProxy-vocab_in-0", lambda: models.BagOfWordsProxy(0, 3), "vocab_in must be an int"),
    case("BagOfWordsProxy-vocab_out-1",
         lambda: models.BagOfWordsProxy(3, 1), "vocab_out must be an int >= 2"),
    case("BagOfWordsProxy-dim-0", lambda: models.BagOfWordsProxy(3, 3, dim=0), "dim must be an int"),
    case("BagOfWordsProxy-dim-float",
         lambda: models.BagOfWordsProxy(3, 3, dim=2.5), "dim must be an int"),
    case("BagOfWordsProxy-src-id-vocab", lambda: PROXY(ids(1, 2, 3, value=4)), TOKEN_IDS),
    case("BagOfWordsProxy-src-float", lambda: PROXY(torch.zeros(1, 2, 3)), TOKEN_IDS),
    case("BagOfWordsProxy-src-2d", lambda: PROXY(ids(1, 3)), "src must"),
    case("BagOfWordsProxy.lexical_probe-tgt-id-vocab",
         lambda: PROXY.lexical_probe(ids(1, 2, 3), ids(1, 2, 2, value=3)), "tgt must hold token ids"),
    case("BagOfWordsProxy.loss-tgt-id-vocab",
         lambda: PROXY.loss({"src": ids(1, 2, 3), "tgt": ids(1, 2, 2, value=3)}),
         r"batch\['tgt'\]"),
    # BagOfWordsLogistic
    case("BagOfWordsLogistic-vocab_in-0",
         lambda: models.BagOfWordsLogistic(0), "vocab_in must be an int"),
    case("BagOfWordsLogistic-seeds-empty",
         lambda: models.BagOfWordsLogistic(3, seeds=()), "seeds must hold"),
    case("BagOfWordsLogistic-src-id-vocab", lambda: LOGISTIC(ids(1, 2, 3, value=4)), TOKEN_IDS),
    case("BagOfWordsLogistic.loss-tgt-2",
         lambda: LOGISTIC.loss({"src": ids(1, 2, 3), "tgt": torch.full((1, 2, 1), 2)}),
         r"batch\['tgt'\]|tgt"),
    # TopicAttention
    case("TopicAttention-vocab-1", lambda: models.TopicAttention(vocab=1), "vocab must be an int >= 2"),
    case("TopicAttention-n_topics-1",
         lambda: models.TopicAttention(7, n_topics=1), "n_topics must be an int"),
    case("TopicAttention-dim-small",
         lambda: models.TopicAttention(7, n_topics=4, dim=2), "dim must be an int"),
    case("TopicAttention-classifier",
         lambda: models.TopicAttention(7, 2, 2, classifier="XX"), "classifier must be"),
    case("TopicAttention-embed_var-0", lambda: models.TopicAttention(7, 2, 2, embed_var=0), "embed_var"),
    case("TopicAttention-embed_var-nan",
         lambda: models.TopicAttention(7, 2, 2, embed_var=NAN), "embed_var"),
    case("TopicAttention-query_norm-negative",
         lambda: models.TopicAttention(7, 2, 2, query_norm=-1), "query_norm"),
    case("TopicAttention-freeze-str",
         lambda: models.TopicAttention(7, 2, 2, freeze="keys"), "freeze must be"),
    case("TopicAttention-freeze-unknown",
         lambda: models.TopicAttention(7, 2, 2, freeze=("bias",)), "freeze may hold"),
    case("TopicAttention-freeze-int", lambda: models.TopicAttention(7, 2, 2, freeze=5), "freeze"),
    case("TopicAttention-query_var-nan",
         lambda: models.TopicAttention(7, 2, 2, query_var=NAN), "query_var"),
    case("TopicAttention-query_var-bool",
         lambda: models.TopicAttention(7, 2, 2, query_var=True), "query_var"),
    case("TopicAttention-query_var-count",
         lambda: models.TopicAttention(7, 2, 2, query_var=[1.0, 2.0]), "query_var"),
    case("TopicAttention-tl_hidden-0",
         lambda: models.TopicAttention(7, 2, 2, classifier="TL", tl_hidden=0),
         "tl_hidden must be"),
    case("TopicAttention-train_query-str",
         lambda: models.TopicAttention(7, 2, 2, train_query="yes"), "train_query"),
    case("TopicAttention-fast_pool-int",
         lambda: models.TopicAttention(7, 2, 2, fast_pool=1), "fast_pool"),
    case("TopicAttention-seeds-float",
         lambda: models.TopicAttention(7, 2, 2, seeds=[0.5]), r"seeds\[0\]"),
    case("TopicAttention-x-id-vocab", lambda: TOPIC_MODEL(ids(1, 2, 3, value=7)), TOKEN_IDS),
    case("TopicAttention-x-negative", lambda: TOPIC_MODEL(ids(1, 2, 3, value=-1)), TOKEN_IDS),
    case("TopicAttention-x-2d", lambda: TOPIC_MODEL(ids(2, 3)), "x must have shape"),
    case("TopicAttention-x-float", lambda: TOPIC_MODEL(torch.zeros(1, 2, 3)), TOKEN_IDS),
    case("TopicAttention-x-empty", lambda: TOPIC_MODEL(ids(1, 2, 0)), "x must"),
    case("TopicAttention-int-mask",
         lambda: TOPIC_MODEL(ids(1, 2, 3), torch.ones(1, 2, 3, dtype=torch.long)), "mask"),
    case("TopicAttention-all-padding-mask",
         lambda: TOPIC_MODEL(ids(1, 2, 3), torch.zeros(1, 2, 3, dtype=torch.bool)), "mask"),
    case("TopicAttention.loss-y-out-of-range",
         lambda: TOPIC_MODEL.loss({"x": ids(1, 2, 3), "y": torch.full((1, 2), 2)}),
         r"batch\['y'\]|y must"),
    case("TopicAttention.loss-missing-x",
         lambda: TOPIC_MODEL.loss({"y": ids(1, 2, high=2)}), "batch is missing 'x'"),
    # TopicAttentionCNN
    case("TopicAttentionCNN-vocab-1", lambda: models.TopicAttentionCNN(vocab=1), "vocab must be"),
    case("TopicAttentionCNN-dim-small", lambda: models.TopicAttentionCNN(7, n_topics=3, dim=2),
         "dim must be an int"),
    case("TopicAttentionCNN-embed_var-nan",
         lambda: models.TopicAttentionCNN(7, embed_var=NAN), "embed_var"),
    case("TopicAttentionCNN-train_cnn-int", lambda: models.TopicAttentionCNN(7, train_cnn=1),
         "train_cnn"),
    case("TopicAttentionCNN-x-length-1", lambda: CNN_MODEL(ids(1, 2, 1)), "x must have shape"),
    case("TopicAttentionCNN-x-id-vocab", lambda: CNN_MODEL(ids(1, 2, 3, value=7)), TOKEN_IDS),
    case("TopicAttentionCNN.pair_scores-shape", lambda: CNN_MODEL.pair_scores([[0, 1, 2]]),
         "pairs must be a"),
    case("TopicAttentionCNN.pair_embeddings-id", lambda: CNN_MODEL.pair_embeddings([[0, 7]]),
         "pairs must hold word ids"),
    case("TopicAttentionCNN.pair_scores-float", lambda: CNN_MODEL.pair_scores([[0.5, 1]]),
         "pairs"),
    case("TopicAttentionCNN.loss-y-out-of-range",
         lambda: CNN_MODEL.loss({"x": ids(1, 2, 3), "y": torch.full((1, 2), 2)}),
         r"batch\['y'\]|y must"),
]


# =============================================================================== stacked.py
STACKED = [
    case("member-out-of-range", lambda: stacked.member(CLASSIFIER, 5), "i must be an int in"),
    case("member-negative", lambda: stacked.member(CLASSIFIER, -1), "i must be an int in"),
    case("member-float", lambda: stacked.member(TWO, 0.5), "i must be"),
    case("member-bool", lambda: stacked.member(TWO, True), "i must be"),
    case("stack_members-empty", lambda: stacked.stack_members([]), "models must be a non-empty"),
    case("stack_members-not-models", lambda: stacked.stack_members([5]), "models"),
    case("stack_members-mismatch",
         lambda: stacked.stack_members([CLASSIFIER, models.AttentionClassifier(5, 2, 2)]),
         "models"),
    case("generators-float", lambda: stacked.generators([1.5]), "seeds"),
    case("generators-bool", lambda: stacked.generators([True]), "seeds"),
    case("StackedRNN-cell",
         lambda: stacked.StackedRNN(stacked.generators([0]), 2, 2, cell="rnn"), "cell must be one of"),
    case("StackedRNN-hidden-0", lambda: stacked.StackedRNN(stacked.generators([0]), 2, 0), "hidden"),
    case("StackedLinear-d_in-0", lambda: stacked.StackedLinear(stacked.generators([0]), 0, 2), "d_in"),
    case("StackedEmbedding-id-vocab",
         lambda: stacked.StackedEmbedding(stacked.generators([0, 1]), 3, 2)(ids(2, 2, value=3)),
         "token ids"),
    case("StackedEmbedding-members",
         lambda: stacked.StackedEmbedding(stacked.generators([0]), 3, 2)(ids(2, 2)),
         "ids has leading dimension"),
]


# =============================================================================== training.py
def _fit(**kwargs):
    args = dict(model_fn=MODEL_FN, task=KW, seeds=[0])
    args.update(kwargs)
    return TRAINER.fit(**args)


TRAINING = [
    case("Trainer-steps-0", lambda: training.Trainer(steps=0), "steps must be an int >= 1"),
    case("Trainer-steps-float", lambda: training.Trainer(steps=1.5), "steps must be an int"),
    case("Trainer-steps-integral-float", lambda: training.Trainer(steps=2.0), "steps must be an int"),
    case("Trainer-steps-bool", lambda: training.Trainer(steps=True), "steps must be an int"),
    case("Trainer-batch_size-0", lambda: training.Trainer(1, batch_size=0), "batch_size must be an int"),
    case("Trainer-optimizer",
         lambda: training.Trainer(1, optimizer="rmsprop"), "optimizer must be one of"),
    case("Trainer-lr-nan", lambda: training.Trainer(1, lr=NAN), "lr must be a finite"),
    case("Trainer-lr-0", lambda: training.Trainer(1, lr=0), "lr must be > 0"),
    case("Trainer-lr-bool", lambda: training.Trainer(1, lr=True), "lr must be a real number"),
    case("Trainer-eval_every-0", lambda: training.Trainer(1, eval_every=0), "eval_every must be an int"),
    case("Trainer-execution", lambda: training.Trainer(1, execution="gpu"), "execution must be one of"),
    case("Trainer-eval_batch_size-0", lambda: training.Trainer(1, eval_batch_size=0), "eval_batch_size"),
    case("Trainer-workers-0", lambda: training.Trainer(1, workers=0), "workers must be an int"),
    case("Trainer-workers-float", lambda: training.Trainer(1, workers=1.5), "workers must be an int"),
    case("Trainer-progress-str",
         lambda: training.Trainer(1, progress="yes"), "progress must be True or False"),
    case("Trainer-desc-int", lambda: training.Trainer(1, desc=5), "desc must be a string"),
    case("Trainer-device-unknown", lambda: training.Trainer(1, device="tpu"), "device"),
    case("Trainer.fit-seeds-empty", lambda: _fit(seeds=[]), "seeds must hold at least one"),
    case("Trainer.fit-seeds-float", lambda: _fit(seeds=[1.5]), "seeds must be an int"),
    case("Trainer.fit-seeds-negative", lambda: _fit(seeds=[-1]), "seeds must be an int"),
    case("Trainer.fit-seeds-int", lambda: _fit(seeds=5), "seeds must be a sequence"),
    case("Trainer.fit-seeds-bool", lambda: _fit(seeds=[True]), r"seeds\[0\] must be an int"),
    case("Trainer.fit-data_seeds-float", lambda: _fit(data_seeds=[0.9]), "data_seeds must be an int"),
    case("Trainer.fit-data_seeds-count",
         lambda: _fit(data_seeds=[0, 1]), "data_seeds must have one entry"),
    case("Trainer.fit-model_fn", lambda: _fit(model_fn=5), "model_fn must be callable"),
    case("Trainer.fit-task", lambda: _fit(task=5), "task must have a sample"),
    case("Trainer.fit-probes-int", lambda: _fit(probes=5), "probes must be a list"),
    case("Trainer.fit-probes-entry", lambda: _fit(probes=[5]), r"probes\[0\] must be callable"),
    case("Trainer.fit-member_kwargs-count",
         lambda: _fit(member_kwargs={"embed": [2, 3]}), r"member_kwargs\['embed'\]"),
    case("Trainer.fit-member_kwargs-not-list", lambda: _fit(member_kwargs={"embed": 5}), "member_kwargs"),
    case("train-steps-0", lambda: training.train(MODEL_FN, KW, [0], steps=0), "steps must be an int"),
    case("train-unknown-kwarg", lambda: training.train(MODEL_FN, KW, [0], steps=1, bogus=1), "bogus"),
    case("choose_execution-0", lambda: training.choose_execution(0), "n_members must be an int"),
    case("choose_execution-float", lambda: training.choose_execution(1.5), "n_members must be an int"),
    case("choose_execution-device", lambda: training.choose_execution(1, "tpu"), "device"),
]


# =============================================================================== config.py
CONFIG = [
    case("env_mode-unknown", with_env(config.env_mode, ATTN_MODE="fastest"), "ATTN_MODE must be one of"),
    case("get_mode-env-unknown",
         with_env(config.get_mode, ATTN_MODE="slow"), "ATTN_MODE must be one of"),
    case("env_threads-float",
         with_env(config.env_threads, ATTN_THREADS="2.0"), "ATTN_THREADS must be an int"),
    case("env_threads-0", with_env(config.env_threads, ATTN_THREADS="0"), "ATTN_THREADS must be an int"),
    case("env_threads-empty",
         with_env(config.env_threads, ATTN_THREADS=""), "ATTN_THREADS must be an int"),
    case("env_workers-negative",
         with_env(config.env_workers, ATTN_WORKERS="-1"), "ATTN_WORKERS must be an int"),
    case("env_workers-word",
         with_env(config.env_workers, ATTN_WORKERS="two"), "ATTN_WORKERS must be an int"),
    case("env_cache-none", with_env(config.env_cache, ATTN_CACHE="none"), "ATTN_CACHE must be"),
    case("env_cache-blank", with_env(config.env_cache, ATTN_CACHE="  "), "ATTN_CACHE must be"),
    case("env_cache-padded", with_env(config.env_cache, ATTN_CACHE=" /tmp/x"), "ATTN_CACHE must be"),
    case("get_mode-unknown", lambda: config.get_mode("slow"), "mode must be one of"),
    case("get_mode-int", lambda: config.get_mode(1), "mode must be a string"),
    case("Preset.get-unknown", lambda: config.Preset(1, 2).get("slow"), "mode must be one of"),
    case("describe-unknown", lambda: config.describe("slow"), "mode must be one of"),
    case("set_threads-0", lambda: config.set_threads(0), r"n \(threads\) must be an int"),
    case("set_threads-float", lambda: config.set_threads(1.5), r"n \(threads\) must be an int"),
    case("set_threads-bool", lambda: config.set_threads(True), r"n \(threads\) must be an int"),
    case("set_seed-float", lambda: config.set_seed(1.5), "seed must be an int"),
    case("set_seed-negative", lambda: config.set_seed(-1), "seed must be >= 0"),
    case("set_seed-bool", lambda: config.set_seed(True), "seed must be an int"),
    case("set_seed-str", lambda: config.set_seed("1"), "seed must be an int"),
    pytest.param(lambda: config.get_device("cuda"), "CUDA is not available", id="get_device-cuda-absent",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available")),
    case("get_device-unknown", lambda: config.get_device("tpu"), "device"),
]


# =============================================================================== cache.py
CACHE = [
    case("cache_key-path", lambda: cache.cache_key("a/b", {}), "name must be"),
    case("cache_key-dotdot", lambda: cache.cache_key("..", {}), "name must be"),
    case("cache_key-empty", lambda: cache.cache_key("", {}), "name must be"),
    case("cache_key-int", lambda: cache.cache_key(5, {}), "name must be a string"),
    case("cache_key-config-list", lambda: cache.cache_key("x", [1]), "config must be a dict"),
    case("cache_key-config-object", lambda: cache.cache_key("x", {"a": object()}), "config"),
    case("cache_key-config-nan", lambda: cache.cache_key("x", {"lr": NAN}), "config"),
    case("save_history-not-history", lambda: cache.save_history(5, "x"), "history must be a History"),
    case("save_history-meta", lambda: cache.save_history(HISTORY, "x", meta=5), "meta must be a dict"),
    case("cached_history-compute", with_env(lambda: cache.cached_history("x", {}, 5), ATTN_CACHE="off"),
         "compute must be callable"),
    case("cached_history-name",
         lambda: cache.cached_history("a/b", {}, lambda: HISTORY), "name must be"),
    case("cached_history-verbose",
         with_env(lambda: cache.cached_history("x", {}, lambda: HISTORY, verbose="yes"),
                                            ATTN_CACHE="off"), "verbose"),
]


# =============================================================================== claims.py
def _claims():
    return claims.Claims("probe")


def _duplicate():
    c = _claims()
    c.check("P1", "x", kind="identity", measured=1.0, op="<", threshold=2)
    c.check("P1", "x", kind="identity", measured=1.0, op="<", threshold=2)


CLAIMS = [
    case("Claims-title-empty", lambda: claims.Claims(""), "title must be a non-empty str"),
    case("Claims-title-int", lambda: claims.Claims(5), "title must be a non-empty str"),
    case("Claims.check-op",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="~", threshold=1), "op must be one of"),
    case("Claims.check-op-None", lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op=None, threshold=1),
         "op must be one of"),
    case("Claims.check-measured-str",
         lambda: _claims().check("P1", "s", kind="identity", measured="abc", op="<", threshold=1),
         "measured must be a real number"),
    case("Claims.check-measured-None",
         lambda: _claims().check("P1", "s", kind="identity", measured=None, op="<", threshold=1),
         "measured must be a real number"),
    case("Claims.check-measured-empty",
         lambda: _claims().check("P1", "s", kind="identity", measured=[], op="<", threshold=1),
         "measured must be a non-empty"),
    case("Claims.check-measured-ragged",
         lambda: _claims().check("P1", "s", kind="identity", measured=[[1], [1, 2]], op="<",
                                                                 threshold=1), "measured must be"),
    case("Claims.check-threshold-nan",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="<", threshold=NAN),
         "threshold for op '<' must be a finite"),
    case("Claims.check-threshold-inf",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op=">", threshold=INF),
         "threshold for op '>' must be a finite"),
    case("Claims.check-threshold-bool",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="<", threshold=True),
         "threshold for op '<' must be a finite"),
    case("Claims.check-threshold-str",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="<", threshold="1"),
         "threshold for op '<' must be a finite"),
    case("Claims.check-in-reversed",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="in", threshold=(2, 1)),
         "low <= high"),
    case("Claims.check-in-single",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="in", threshold=(1,)),
         "threshold for op 'in' must be a pair"),
    case("Claims.check-approx-negative-tol",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="≈", threshold=(0, -1)), "tol >= 0"),
    case("Claims.check-approx-nan",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="≈", threshold=(NAN, 1)),
         "threshold for op '≈' must be a pair"),
    case("Claims.check-paper-list",
         lambda: _claims().check("P1", "s", kind="identity", measured=1.0, op="<", threshold=2, paper=[1]),
         "paper must be None, a str or a real"),
    case("Claims.check-id-empty", lambda: _claims().check("", "s", kind="identity", measured=1.0, op="<", threshold=2),
         "id must be a non-empty str"),
    case("Claims.check-statement-int",
         lambda: _claims().check("P1", 5, kind="identity", measured=1.0, op="<", threshold=2),
         "statement must be a non-empty str"),
    case("Claims.check-duplicate", _duplicate, "duplicate claim"),
    case("Claims.holds-ok-int", lambda: _claims().holds("P1", "s", kind="identity", ok=1), "ok must be a bool"),
    case("Claims.holds-ok-array",
         lambda: _claims().holds("P1", "s", kind="identity", ok=np.array([True, False])), "ok must be a bool"),
    case("Claims.holds-measured-empty", lambda: _claims().holds("P1", "s", kind="identity", ok=True, measured=[]),
         "measured must be a non-empty"),
    case("format_number-str", lambda: claims.format_number("a"), "x must be"),
    case("format_number-None", lambda: claims.format_number(None), "x must be"),
]


# =============================================================================== chapters/*.py
def _bag_run(**kwargs):
    args = dict(dim=2, epochs=1, eval_every=1, progress=False)
    args.update(kwargs)
    return ch2_sen.run_bag_task(BAGS, **args)


CHAPTERS = [
    # ch1: KeywordConfig
    case("KeywordConfig-length-float",
         lambda: ch1_gated.KeywordConfig(length=2.0), r"KeywordConfig\.length must be an int"),
    case("KeywordConfig-steps-0",
         lambda: ch1_gated.KeywordConfig(steps=0), r"KeywordConfig\.steps must be an int >= 1"),
    case("KeywordConfig-lr-nan",
         lambda: ch1_gated.KeywordConfig(lr=NAN), r"KeywordConfig\.lr must be a finite"),
    case("KeywordConfig-lr-0",
         lambda: ch1_gated.KeywordConfig(lr=0.0), r"KeywordConfig\.lr must be > 0"),
    case("KeywordConfig-lr-bool",
         lambda: ch1_gated.KeywordConfig(lr=True), r"KeywordConfig\.lr must be a real"),
    case("KeywordConfig-attention",
         lambda: ch1_gated.KeywordConfig(attention="hard"), r"KeywordConfig\.attention"),
    case("KeywordConfig-optimizer",
         lambda: ch1_gated.KeywordConfig(optimizer="rms"), r"KeywordConfig\.optimizer"),
    case("KeywordConfig-seeds-empty",
         lambda: ch1_gated.KeywordConfig(seeds=()), r"KeywordConfig\.seeds must hold"),
    case("KeywordConfig-seeds-float",
         lambda: ch1_gated.KeywordConfig(seeds=(1.5,)), r"KeywordConfig\.seeds\[0\]"),
    case("KeywordConfig-seeds-negative",
         lambda: ch1_gated.KeywordConfig(seeds=(-1,)), r"KeywordConfig\.seeds\[0\]"),
    case("KeywordConfig-seeds-int",
         lambda: ch1_gated.KeywordConfig(seeds=5), r"KeywordConfig\.seeds must be a tuple"),
    case("KeywordConfig-batch_size-bool",
         lambda: ch1_gated.KeywordConfig(batch_size=True), r"KeywordConfig\.batch_size"),
    case("KeywordConfig-length-1", lambda: ch1_gated.KeywordConfig(length=1), r"KeywordConfig\.length"),
    case("KeywordConfig-vocab-1", lambda: ch1_gated.KeywordConfig(vocab=1), r"KeywordConfig\.vocab"),
    case("KeywordConfig.run-progress",
         lambda: ch1_gated.KeywordConfig().run(progress="yes"), "progress"),
    case("KeywordConfig.run-cache", lambda: ch1_gated.KeywordConfig().run(cache=1), "cache"),
    # ch2: SENConfig, PurityConfig and helpers
    case("SENConfig-classifier", lambda: ch2_sen.SENConfig(classifier="XX"), r"SENConfig\.classifier"),
    case("SENConfig-m-0", lambda: ch2_sen.SENConfig(m=0), r"SENConfig\.m must be"),
    case("SENConfig-embed_var-0", lambda: ch2_sen.SENConfig(embed_var=0.0), r"SENConfig\.embed_var"),
    case("SENConfig-data_seeds-float", lambda: ch2_sen.SENConfig(data_seeds=(1.5, 0, 0)),
         r"SENConfig\.data_seeds"),
    case("SENConfig-data_seeds-count", lambda: ch2_sen.SENConfig(data_seeds=(0,)),
         r"SENConfig\.data_seeds must have one entry per seed"),
    case("SENConfig-data_seeds-repeated-seed",
         lambda: ch2_sen.SENConfig(seeds=(0, 0), data_seeds=(0, 1)), r"SENConfig\.data_seeds"),
    case("SENConfig-eq8-int", lambda: ch2_sen.SENConfig(eq8=1), r"SENConfig\.eq8"),
    case("SENConfig-epochs-0", lambda: ch2_sen.SENConfig(epochs=0), r"SENConfig\.epochs"),
    case("SENConfig-freeze-unknown", lambda: ch2_sen.SENConfig(freeze=("bias",)), r"SENConfig\.freeze"),
    case("SENConfig-freeze-str", lambda: ch2_sen.SENConfig(freeze="keys"), r"SENConfig\.freeze"),
    case("SENConfig-query_vars-count",
         lambda: ch2_sen.SENConfig(query_vars=(1.0,)), r"SENConfig\.query_vars"),
    case("SENConfig-query_vars-nan",
         lambda: ch2_sen.SENConfig(query_vars=(NAN, 1.0, 1.0)), r"SENConfig\.query_vars"),
    case("SENConfig-query_vars-negative", lambda: ch2_sen.SENConfig(query_vars=(-1.0, 1.0, 1.0)),
         r"SENConfig\.query_vars"),
    case("SENConfig-dim-below-topics", lambda: ch2_sen.SENConfig(dim=2), r"SENConfig\.dim"),
    case("SENConfig-n_topics-1", lambda: ch2_sen.SENConfig(n_topics=1), r"SENConfig\.n_topics"),
    case("PurityConfig-counts-single", lambda: ch2_sen.PurityConfig(frequent_counts=(103,)),
         r"PurityConfig\.frequent_counts"),
    case("PurityConfig-counts-float", lambda: ch2_sen.PurityConfig(frequent_counts=(103.5, 25)),
         r"PurityConfig\.frequent_counts\[0\]"),
    case("PurityConfig-rare-0", lambda: ch2_sen.PurityConfig(rare_count=0), r"PurityConfig\.rare_count"),
    case("PurityConfig-classifier",
         lambda: ch2_sen.PurityConfig(classifier="X"), r"PurityConfig\.classifier"),
    case("PurityConfig-counts-too-many",
         lambda: ch2_sen.PurityConfig(frequent_counts=(300, 200)), r"PurityConfig\.frequent_counts"),
    case("CNNConfig-n_words-small", lambda: ch2_sen.CNNConfig(n_words=5), r"CNNConfig\.n_words"),
    case("CNNConfig-train_cnn-int", lambda: ch2_sen.CNNConfig(train_cnn=1), r"CNNConfig\.train_cnn"),
    case("CNNConfig-data_seeds-count", lambda: ch2_sen.CNNConfig(data_seeds=(0,)),
         r"CNNConfig\.data_seeds"),
    case("pair_sen_probe-pairs", lambda: ch2_sen.pair_sen_probe(5), "topic_pairs"),
    case("pair_sen_probe-n_sample-0",
         lambda: ch2_sen.pair_sen_probe({0: torch.zeros(1, 2)}, n_sample=0), "n_sample"),
    case("member_tasks-config", lambda: ch2_sen.member_tasks(5), "config must be"),
    case("sentence_overlap-shape", lambda: ch2_sen.sentence_overlap(np.zeros((2, 3)), np.zeros((2, 4))),
         "a and b must be"),
    case("PurityConfig-m-1", lambda: ch2_sen.PurityConfig(m=1), r"PurityConfig\.m"),
    case("PurityConfig-counts-zero", lambda: ch2_sen.PurityConfig(frequent_counts=(0, 25)),
         r"PurityConfig\.frequent_counts"),
    case("run_classifiers-config", lambda: ch2_sen.run_classifiers(5), "config must be a SENConfig"),
    case("run_classifiers-unknown",
         lambda: ch2_sen.run_classifiers(ch2_sen.SENConfig(), classifiers=("XX",)),
         r"SENConfig\.classifier"),
    case("run_ablation-config", lambda: ch2_sen.run_ablation(5), "config must be a SENConfig"),
    case("run_bag_task-classifier", lambda: _bag_run(classifier="XX"), "classifier must be one of"),
    case("run_bag_task-dim-0", lambda: _bag_run(dim=0),
         "dim must be an int"),
    case("run_bag_task-task", lambda: ch2_sen.run_bag_task(5), "task"),
    case("run_bag_task-epochs-0", lambda: _bag_run(epochs=0),
         "epochs"),
    case("run_bag_task-seeds-int", lambda: _bag_run(seeds=5), "seeds"),
    case("test_accuracy_probe-int", lambda: ch2_sen.test_accuracy_probe(5), "test_set"),
    case("sen_gap-m-0", lambda: ch2_sen.sen_gap(HISTORY, 0), r"m \(non-topic words"),
    case("sen_gap-history", lambda: ch2_sen.sen_gap(5, 20), "history"),
    # ch3: TranslationConfig, KeywordRelevanceConfig and helpers
    case("TranslationConfig-zipf-negative",
         lambda: ch3_ibm1.TranslationConfig(zipf=-1.0), r"TranslationConfig\.zipf"),
    case("TranslationConfig-zipf-nan",
         lambda: ch3_ibm1.TranslationConfig(zipf=NAN), r"TranslationConfig\.zipf"),
    case("TranslationConfig-attention",
         lambda: ch3_ibm1.TranslationConfig(attention="x"), r"TranslationConfig\.attention"),
    case("TranslationConfig-n_eval-0",
         lambda: ch3_ibm1.TranslationConfig(n_eval=0), r"TranslationConfig\.n_eval"),
    case("TranslationConfig-distinct-int",
         lambda: ch3_ibm1.TranslationConfig(distinct=1), r"TranslationConfig\.distinct"),
    case("TranslationConfig-reorder-1.5",
         lambda: ch3_ibm1.TranslationConfig(reorder=1.5), r"TranslationConfig\.reorder"),
    case("TranslationConfig-vocab-1",
         lambda: ch3_ibm1.TranslationConfig(vocab=1), r"TranslationConfig\.vocab"),
    case("TranslationConfig-distinct-vocab",
         lambda: ch3_ibm1.TranslationConfig(distinct=True, vocab=5, length=10),
         r"TranslationConfig\.vocab"),
    case("KeywordRelevanceConfig-n_eval-0", lambda: ch3_ibm1.KeywordRelevanceConfig(n_eval=0),
         r"KeywordRelevanceConfig\.n_eval"),
    case("KeywordRelevanceConfig-n_eval-float", lambda: ch3_ibm1.KeywordRelevanceConfig(n_eval=1.5),
         r"KeywordRelevanceConfig\.n_eval"),
    case("keyword_eval_set-n-0",
         lambda: ch3_ibm1.keyword_eval_set(ch1_gated.KeywordConfig(), 0), "n must be an int"),
    case("keyword_eval_set-config", lambda: ch3_ibm1.keyword_eval_set(5, 3), "config"),
    case("translation_probe-k-nan",
         lambda: ch3_ibm1.translation_probe(CORPUS.held_out(2), k=NAN), r"k \(the top fraction\)"),
    case("translation_probe-eval_set", lambda: ch3_ibm1.translation_probe(5), "eval_set"),
    case("run_proxy-steps-0", lambda: ch3_ibm1.run_proxy(COPY, steps=0), "steps must be an int"),
    case("run_proxy-lr-nan", lambda: ch3_ibm1.run_proxy(COPY, lr=NAN), "lr must be a finite"),
    case("run_proxy-seed-float", lambda: ch3_ibm1.run_proxy(COPY, seed=1.5), "seed must be an int"),
    case("run_proxy-batch_size-0",
         lambda: ch3_ibm1.run_proxy(COPY, steps=1, batch_size=0), "batch_size must be"),
    case("run_proxy-task", lambda: ch3_ibm1.run_proxy(5), "task"),
    case("run_bow_classifier-model",
         lambda: ch3_ibm1.run_bow_classifier(KW, model="svm"), "model must be one of"),
    case("run_bow_classifier-steps-bool",
         lambda: ch3_ibm1.run_bow_classifier(KW, steps=True), "steps must be an int"),
    case("run_bow_classifier-lr-negative",
         lambda: ch3_ibm1.run_bow_classifier(KW, lr=-1.0), "lr must be"),
    case("run_bow_classifier-task", lambda: ch3_ibm1.run_bow_classifier(5), "task must have a sample"),
    # ch4: CopyConfig and helpers
    case("CopyConfig-distribution",
         lambda: ch4_copy.CopyConfig(distribution="x"), r"CopyConfig\.distribution"),
    case("CopyConfig-cell", lambda: ch4_copy.CopyConfig(cell="rnn"), r"CopyConfig\.cell"),
    case("CopyConfig-attention", lambda: ch4_copy.CopyConfig(attention="x"), r"CopyConfig\.attention"),
    case("CopyConfig-heads-0", lambda: ch4_copy.CopyConfig(heads=0), r"CopyConfig\.heads"),
    case("CopyConfig-permutation_seed-float", lambda: ch4_copy.CopyConfig(permutation_seed=1.5),
         r"CopyConfig\.permutation_seed"),
    case("CopyConfig-permutation_seed-negative", lambda: ch4_copy.CopyConfig(permutation_seed=-1),
         r"CopyConfig\.permutation_seed"),
    case("CopyConfig-lr-inf", lambda: ch4_copy.CopyConfig(lr=INF), r"CopyConfig\.lr"),
    case("CopyConfig-seeds-bool", lambda: ch4_copy.CopyConfig(seeds=(True,)), r"CopyConfig\.seeds\[0\]"),
    case("CopyConfig-vocab-float", lambda: ch4_copy.CopyConfig(vocab=20.0), r"CopyConfig\.vocab"),
    case("CopyConfig-vocab-mismatch", lambda: ch4_copy.CopyConfig(vocab=5), r"CopyConfig\.vocab"),
    case("control-config", lambda: ch4_copy.control(5), "config must be a CopyConfig"),
    case("control-ratio-small",
         lambda: ch4_copy.control(ch4_copy.CopyConfig(), ratio=0.5), "ratio must be"),
    case("control-ratio-nan",
         lambda: ch4_copy.control(ch4_copy.CopyConfig(), ratio=NAN), "ratio must be"),
    case("control-ratio-bool",
         lambda: ch4_copy.control(ch4_copy.CopyConfig(), ratio=True), "ratio must be"),
    case("control-ratio-truncated",
         lambda: ch4_copy.control(ch4_copy.CopyConfig(length=20), ratio=1.52), "ratio"),
    case("succeeded-level-nan", lambda: ch4_copy.succeeded(HISTORY, level=NAN), "level must be"),
    case("succeeded-at-out-of-range", lambda: ch4_copy.succeeded(HISTORY, at=5), "at must be an int"),
    case("succeeded-at-float", lambda: ch4_copy.succeeded(HISTORY, at=1.5), "at must be an int"),
    case("succeeded-history", lambda: ch4_copy.succeeded(5), "history"),
    case("scaled_count_table-n-0",
         lambda: ch4_copy.scaled_count_table(COPY, 0, gen()), "n must be an int"),
    case("scaled_count_table-generator",
         lambda: ch4_copy.scaled_count_table(COPY, 2, 5), "generator must be"),
    case("scaled_count_table-task", lambda: ch4_copy.scaled_count_table(5, 2, gen()), "task"),
    # ch5: HeadsRun, RescueConfig, head_combinations
    case("HeadsRun-head_seeds-empty", lambda: ch5_multihead.HeadsRun(head_seeds=(), data_seeds=()),
         r"HeadsRun\.head_seeds must not be empty"),
    case("HeadsRun-head_seeds-float",
         lambda: ch5_multihead.HeadsRun(head_seeds=(1.5,)), r"HeadsRun\.head_seeds\[0\]"),
    case("HeadsRun-head_seeds-bool",
         lambda: ch5_multihead.HeadsRun(head_seeds=(True,)), r"HeadsRun\.head_seeds\[0\]"),
    case("HeadsRun-head_seeds-int",
         lambda: ch5_multihead.HeadsRun(head_seeds=5), r"HeadsRun\.head_seeds"),
    case("HeadsRun-data_seeds-count",
         lambda: ch5_multihead.HeadsRun(head_seeds=(0, 1)), r"HeadsRun\.data_seeds"),
    case("HeadsRun-head_reduce",
         lambda: ch5_multihead.HeadsRun(head_reduce="max"), r"HeadsRun\.head_reduce"),
    case("HeadsRun-copy", lambda: ch5_multihead.HeadsRun(copy=5), r"HeadsRun\.copy"),
    case("HeadsRun-tag-int", lambda: ch5_multihead.HeadsRun(tag=5), r"HeadsRun\.tag"),
    case("HeadsRun-head_proj-int", lambda: ch5_multihead.HeadsRun(head_proj=1), r"HeadsRun\.head_proj"),
    case("HeadsRun-base_seed-negative",
         lambda: ch5_multihead.HeadsRun(base_seed=-1), r"HeadsRun\.base_seed"),
    case("HeadsRun-head_seeds-heads",
         lambda: ch5_multihead.HeadsRun(head_seeds=((1, 2),)), r"HeadsRun\.head_seeds"),
    case("HeadsRun-tag-path", lambda: ch5_multihead.HeadsRun(tag="a/b"), r"HeadsRun\.tag"),
    case("RescueConfig-copy", lambda: ch5_multihead.RescueConfig(copy=5), r"RescueConfig\.copy"),
    case("RescueConfig-base_seed-float",
         lambda: ch5_multihead.RescueConfig(base_seed=1.5), r"RescueConfig\.base_seed"),
    case("RescueConfig-head_proj-int",
         lambda: ch5_multihead.RescueConfig(head_proj=1), r"RescueConfig\.head_proj"),
    case("RescueConfig-n_candidates-0", lambda: ch5_multihead.RescueConfig(n_candidates=0),
         r"RescueConfig\.n_candidates"),
    case("RescueConfig-good-1", lambda: ch5_multihead.RescueConfig(good=1.0), r"RescueConfig\.good"),
    case("RescueConfig-bad-nan", lambda: ch5_multihead.RescueConfig(bad=NAN), r"RescueConfig\.bad"),
    case("RescueConfig-bad-above-good",
         lambda: ch5_multihead.RescueConfig(good=0.5, bad=0.6), "RescueConfig thresholds"),
    case("RescueConfig-ks-missing-k_combo",
         lambda: ch5_multihead.RescueConfig(ks=(1, 2)), r"RescueConfig\.ks"),
    case("RescueConfig-ks-float",
         lambda: ch5_multihead.RescueConfig(ks=(1.5, 4)), r"RescueConfig\.ks\[0\]"),
    case("RescueConfig-ks-str", lambda: ch5_multihead.RescueConfig(ks="14"), r"RescueConfig\.ks\[0\]"),
    case("RescueConfig-data_seeds-empty",
         lambda: ch5_multihead.RescueConfig(data_seeds=()), r"RescueConfig\.data_seeds"),
    case("RescueConfig-data_seeds-float", lambda: ch5_multihead.RescueConfig(data_seeds=(1.5,)),
         r"RescueConfig\.data_seeds\[0\]"),
    case("RescueConfig-candidate_offset-negative",
         lambda: ch5_multihead.RescueConfig(candidate_offset=-1),
         r"RescueConfig\.candidate_offset"),
    case("RescueConfig-k_combo-bool",
         lambda: ch5_multihead.RescueConfig(k_combo=True), r"RescueConfig\.k_combo"),
    case("RescueConfig-head_reduce",
         lambda: ch5_multihead.RescueConfig(head_reduce="max"), r"RescueConfig\.head_reduce"),
    case("RescueConfig.fresh_heads-0",
         lambda: ch5_multihead.RescueConfig().fresh_heads(0), "k must be an int"),
    case("RescueConfig.pools-shape",
         lambda: ch5_multihead.RescueConfig().pools(["good"]), "labels must have one entry"),
    case("RescueConfig.heads_run-float", lambda: ch5_multihead.RescueConfig().heads_run([1.5], [0], "t"),
         r"HeadsRun\.head_seeds\[0\]"),
    case("RescueConfig.labels-nan",
         lambda: ch5_multihead.RescueConfig().labels([[NAN, 1.0]]), "final_acc"),
    case("head_combinations-kind",
         lambda: ch5_multihead.head_combinations(POOLS, "some", 2, 1), "kind must be one of"),
    case("head_combinations-K-0",
         lambda: ch5_multihead.head_combinations(POOLS, "all bad", 0, 1), "K must be an int"),
    case("head_combinations-n-float", lambda: ch5_multihead.head_combinations(POOLS, "all bad", 2, 1.5),
         "n must be an int"),
    case("head_combinations-seed-bool",
         lambda: ch5_multihead.head_combinations(POOLS, "all bad", 2, 1, seed=True),
         "seed must be an int"),
    case("head_combinations-pools-int", lambda: ch5_multihead.head_combinations(5, "all bad", 2, 1),
         "pools must be a dict"),
    case("head_combinations-not-enough", lambda: ch5_multihead.head_combinations(POOLS, "all bad", 4, 1),
         "not enough heads"),
    case("head_combinations-no-random",
         lambda: ch5_multihead.head_combinations({"bad": [1]}, "random", 2, 1),
         "pools needs a 'random' entry"),
    case("head_combinations-random-short",
         lambda: ch5_multihead.head_combinations({"random": [1]}, "random", 2, 1),
         r"pools\['random'\] needs 2 seeds"),
    case("head_combinations-pools-float",
         lambda: ch5_multihead.head_combinations({"bad": [1.5, 2.5]}, "all bad", 2, 1),
         "pools"),
    case("head_combinations-pools-bad-int",
         lambda: ch5_multihead.head_combinations({"bad": 5}, "all bad", 2, 1),
         r"pools\['bad'\]"),
]


# ------------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("call, match", DATA)
def test_data(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", THEORY)
def test_theory(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", METRICS)
def test_metrics(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", PLOTTING)
def test_plotting(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", MODELS)
def test_models(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", STACKED)
def test_stacked(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", TRAINING)
def test_training(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", CONFIG)
def test_config(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", CACHE)
def test_cache(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", CLAIMS)
def test_claims(call, match):
    check_rejected(call, match)


@pytest.mark.parametrize("call, match", CHAPTERS)
def test_chapters(call, match):
    check_rejected(call, match)


def test_read_sst2_tsv_bad_header_names_the_file(tmp_path):
    p = tmp_path / "train.tsv"
    p.write_text("text\tlabel\nfine\t1\n")
    check_rejected(lambda: data.read_sst2_tsv(p), "is not a GLUE SST-2 TSV")


def test_matches_are_specific():
    """Every case names its argument with more than a letter (a one-letter match such as "k"
    or "n" would also match an unrelated message)."""
    for group in (DATA, THEORY, METRICS, PLOTTING, MODELS, STACKED, TRAINING, CONFIG, CACHE,
                  CLAIMS, CHAPTERS):
        for p in group:
            match = p.values[1]
            assert len(match.strip("^$\\b")) >= 3, f"{p.id}: match {match!r} is too short"


def test_probe_notices_errors_raised_inside_numpy():
    """The frame check is live: an error raised by numpy's own Python code is not accepted."""
    with pytest.raises(AssertionError, match="not by attn_core"):
        check_rejected(lambda: np.broadcast_shapes((2,), (3,)), "shape mismatch")
