"""The training engine: batched runs equal looped runs, histories follow the schema, bad input fails."""

import functools

import numpy as np
import pytest
import torch

from attn_core.data import CopyTask, KeywordTask, TopicTask
from attn_core.models import AttentionClassifier, Seq2Seq, TopicAttention
from attn_core.training import History, Trainer, choose_execution, train

SEQ2SEQ = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12)
CASES = {
    "seq2seq-lstm": (SEQ2SEQ, CopyTask(12), "adam"),
    "seq2seq-gru-3heads": (functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12, cell="gru",
                                             heads=3), CopyTask(12), "adam"),
    "classifier": (functools.partial(AttentionClassifier, vocab=20, embed=8, hidden=8),
                   KeywordTask(10, 20), "sgd"),
    "topic-TL": (functools.partial(TopicAttention, vocab=4 * 2 + 300, classifier="TL"),
                 TopicTask(n_nontopic=300, n_train=100, n_test=20), "sgd"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_batched_equals_looped(name):
    """3 seeds trained as one stacked model == the same 3 seeds trained one by one (20 steps)."""
    model_fn, task, opt = CASES[name]
    kw = dict(steps=20, batch_size=8, eval_every=5, optimizer=opt, progress=False)
    hb = train(model_fn, task, [3, 4, 5], execution="batched", **kw)
    hl = train(model_fn, task, [3, 4, 5], execution="looped", **kw)
    assert hb.execution == "batched" and hl.execution == "looped"
    assert np.abs(hb.train_loss - hl.train_loss).max() < 1e-5
    for k in hb.metrics:
        assert np.abs(hb.metrics[k] - hl.metrics[k]).max() < 1e-4, k
    # the runs actually trained: the loss moved
    assert np.abs(hb.train_loss[:, -1] - hb.train_loss[:, 0]).max() > 1e-3
    # and the returned stacked models agree parameter by parameter
    pb, pl = dict(hb.model.named_parameters()), dict(hl.model.named_parameters())
    for k in pb:
        torch.testing.assert_close(pb[k], pl[k], atol=1e-4, rtol=1e-4)


def test_members_are_independent():
    """Member i of a batched run does not depend on which other members ride along."""
    kw = dict(steps=10, batch_size=8, progress=False, execution="batched")
    h3 = train(SEQ2SEQ, CopyTask(12), [7, 8, 9], **kw)
    h2 = train(SEQ2SEQ, CopyTask(12), [9, 1], **kw)
    assert np.abs(h3.train_loss[2] - h2.train_loss[0]).max() < 1e-5


def test_same_seed_same_numbers_and_different_seeds_differ():
    kw = dict(steps=5, batch_size=8, progress=False)
    a = train(SEQ2SEQ, CopyTask(12), [0, 1], **kw)
    b = train(SEQ2SEQ, CopyTask(12), [0, 1], **kw)
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    assert not np.allclose(a.train_loss[0], a.train_loss[1])


def test_history_schema():
    probe = lambda model, batch: {"mean_alpha": model(batch["src"], batch["tgt_in"])["alpha"].mean((1, 2, 3, 4))}
    h = Trainer(steps=7, batch_size=4, eval_every=3, progress=False).fit(
        SEQ2SEQ, CopyTask(12), [0, 1], probes=[probe])
    assert isinstance(h, History)
    assert h.train_loss.shape == (2, 7)
    np.testing.assert_array_equal(h.eval_steps, [0, 3, 6, 7])
    assert set(h.metrics) == {"loss", "token_acc", "attn_acc"}
    assert all(v.shape == (2, 4) for v in h.metrics.values())
    assert h.probes["mean_alpha"].shape == (2, 4)
    np.testing.assert_allclose(h.probes["mean_alpha"], 1 / 12, rtol=1e-5)  # attention sums to 1
    assert h.final("token_acc").shape == (2,)
    assert h.model.n_members == 2


def test_member_kwargs_are_sliced_per_member():
    fn = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12)
    kw = dict(steps=3, batch_size=4, progress=False)
    hb = train(fn, CopyTask(12), [0, 0], member_kwargs={"head_seeds": [5, 6]}, execution="batched", **kw)
    hl = train(fn, CopyTask(12), [0, 0], member_kwargs={"head_seeds": [5, 6]}, execution="looped", **kw)
    assert np.abs(hb.train_loss - hl.train_loss).max() < 1e-5
    # same base seed, different heads: at initialisation the members differ only in their heads
    m = fn(seeds=[0, 0], head_seeds=[5, 6])
    for name, p in m.named_parameters():
        assert torch.equal(p[0], p[1]) == (name != "score"), name
    assert not np.allclose(hb.train_loss[0], hb.train_loss[1])


def test_auto_execution_follows_the_rule():
    # the rule: looped for one member or on the CPU, batched for S > 1 on CUDA -- no timing
    assert choose_execution(1, "cpu") == "looped"
    assert choose_execution(5, "cpu") == "looped"
    h = train(SEQ2SEQ, CopyTask(12), [0, 1, 2], steps=2, batch_size=4, progress=False)
    assert h.execution == choose_execution(3, h.model.emb.weight.device)
    with pytest.raises(ValueError, match="n_members must be an int >= 1"):
        choose_execution(0, "cpu")


def _history_arrays(h):
    return {"train_loss": h.train_loss, **{f"m/{k}": v for k, v in h.metrics.items()},
            **{f"p/{k}": v for k, v in h.probes.items()}}


def _assert_bitwise_equal(a, b):
    A, B = _history_arrays(a), _history_arrays(b)
    assert set(A) == set(B)
    for k in A:
        assert A[k].dtype == B[k].dtype and np.array_equal(A[k], B[k]), k
    for (na, pa), (nb, pb) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert na == nb and torch.equal(pa, pb), na


CLASSIFIER = functools.partial(AttentionClassifier, vocab=10, embed=6, hidden=6)


GRU_PROJ = functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12, cell="gru", heads=2,
                             head_proj=True)


@pytest.mark.parametrize("model_fn, task", [(SEQ2SEQ, CopyTask(12)), (GRU_PROJ, CopyTask(12)),
                                            (CLASSIFIER, KeywordTask(8, 10))],
                         ids=["seq2seq", "seq2seq-gru-proj", "classifier"])
@pytest.mark.parametrize("execution", ["looped", "batched"])
def test_workers_give_bitwise_the_numbers_of_one_process(model_fn, task, execution):
    probe = lambda model, batch: {"first_loss": model.evaluate(batch)["loss"] * 2}
    kw = dict(steps=4, batch_size=4, eval_every=2, progress=False, execution=execution,
              probes=[probe])
    one = train(model_fn, task, [0, 1, 2, 3, 4], workers=1, **kw)
    two = train(model_fn, task, [0, 1, 2, 3, 4], workers=2, **kw)
    _assert_bitwise_equal(one, two)
    assert not np.array_equal(one.train_loss[0], one.train_loss[1])


def test_batched_groups_keep_two_members_or_more():
    t = Trainer(steps=1, workers=2)
    assert t._groups(5, "batched") == [[0, 1], [2, 3, 4]]
    assert t._groups(3, "batched") == [[0, 1, 2]]          # a group of one would run fused
    assert t._groups(3, "looped") == [[0], [1], [2]]
    assert Trainer(steps=1, workers=1)._groups(6, "batched") == [list(range(6))]


def test_an_exception_in_a_worker_surfaces_with_its_message():
    def bad_probe(model, batch):
        raise RuntimeError("probe exploded in member")

    with pytest.raises(RuntimeError, match="probe exploded in member"):
        train(SEQ2SEQ, CopyTask(12), [0, 1], steps=1, batch_size=4, progress=False,
              execution="looped", workers=2, probes=[bad_probe])


_FRESH_PROCESS = """
import functools, sys, numpy as np
from attn_core.data import CopyTask
from attn_core.models import Seq2Seq
from attn_core.training import train
h = train(functools.partial(Seq2Seq, vocab=13, embed=12, hidden=12, cell="gru"), CopyTask(12),
          [0, 1, 2], steps=5, batch_size=4, progress=False)
np.save(sys.argv[1], h.train_loss)
print(h.execution, "torch._dynamo" in sys.modules)
"""


def test_same_seed_bitwise_same_numbers_in_two_fresh_processes(tmp_path):
    import os
    import subprocess
    import sys

    # the two processes run at the same time (each with one torch thread)
    procs, paths = [], []
    for i, workers in enumerate(("1", "2")):
        env = {**os.environ, "ATTN_WORKERS": workers, "ATTN_THREADS": "1"}
        paths.append(tmp_path / f"loss{i}.npy")
        procs.append(subprocess.Popen([sys.executable, "-c", _FRESH_PROCESS, str(paths[-1])],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs, losses = [], []
    for p, path in zip(procs, paths):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(out.strip())
        losses.append(np.load(path))
    # trained without importing torch._dynamo (torch.optim's step wrapper does, 1.5 s)
    assert outs == ["looped False", "looped False"]
    assert np.array_equal(losses[0], losses[1])


@pytest.mark.parametrize("name, reference", [
    ("adam", lambda ps, lr: torch.optim.Adam(ps, lr=lr, fused=True)),
    ("sgd", lambda ps, lr: torch.optim.SGD(ps, lr=lr)),
])
def test_the_engines_optimisers_are_torchs_bitwise(name, reference):
    """The engine's Adam and SGD give torch.optim's numbers to the last bit over many
    steps, with parameters of several shapes, one left without a gradient (skipped, as
    torch skips it) and one that gets its first gradient late."""
    from attn_core.training import OPTIMIZERS

    def params():
        g = torch.Generator().manual_seed(0)
        return [torch.randn(*shape, generator=g).requires_grad_()
                for shape in ((3, 5), (7,), (2, 2, 4), (4,))]

    mine, theirs = params(), params()
    lr = 3e-3 if name == "adam" else 0.1
    opt_a, opt_b = OPTIMIZERS[name](mine, lr=lr), reference(theirs, lr)
    g = torch.Generator().manual_seed(1)
    for step in range(30):
        data = [torch.randn(p.shape, generator=g) for p in mine]
        for ps, opt in ((mine, opt_a), (theirs, opt_b)):
            opt.zero_grad(set_to_none=True)
            used = ps[:2] + (ps[2:3] if step >= 10 else [])        # ps[3]: never a grad
            loss = sum(((p * d) ** 2).sum() + p.sin().sum()
                       for p, d in zip(used, data))
            loss.backward()
            opt.step()
        for a, b in zip(mine, theirs):
            assert torch.equal(a, b), (name, step)
    assert torch.equal(mine[3], params()[3])          # untouched


@pytest.mark.parametrize("kwargs, match", [
    (dict(steps=0), "steps"),
    (dict(steps=-3), "steps"),
    (dict(steps=5, batch_size=0), "batch_size"),
    (dict(steps=5, eval_every=0), "eval_every"),
    (dict(steps=5, optimizer="rmsprop"), "optimizer"),
    (dict(steps=5, lr=-1.0), "lr"),
    (dict(steps=5, execution="parallel"), "execution"),
    (dict(steps=5, workers=0), "workers"),
])
def test_bad_trainer_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Trainer(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(steps=5, lr=True), "lr must be a real number"),
    (dict(steps=2.0), "steps must be an int"),
    (dict(steps=5, workers=1.5), "workers must be an int"),
    (dict(steps=5, progress="yes"), "progress must be True or False"),
])
def test_trainer_rejects_bools_floats_and_strings(kwargs, match):
    with pytest.raises(TypeError, match=match):
        Trainer(**kwargs)


def test_bad_fit_arguments():
    t = Trainer(steps=2, progress=False)
    with pytest.raises(ValueError, match="S >= 1"):
        t.fit(SEQ2SEQ, CopyTask(12), [])
    with pytest.raises(TypeError, match="seeds"):
        t.fit(SEQ2SEQ, CopyTask(12), 3)
    with pytest.raises(ValueError, match="data_seeds"):
        t.fit(SEQ2SEQ, CopyTask(12), [0, 1], data_seeds=[0])
    with pytest.raises(ValueError, match="seeds"):
        t.fit(SEQ2SEQ, CopyTask(12), [0, -1])
    with pytest.raises(TypeError, match="task"):
        t.fit(SEQ2SEQ, object(), [0])
    with pytest.raises(TypeError, match="model_fn"):
        t.fit("not a model", CopyTask(12), [0])
    with pytest.raises(ValueError, match="member_kwargs"):
        t.fit(SEQ2SEQ, CopyTask(12), [0, 1], member_kwargs={"head_seeds": [1]})


def test_mismatched_shapes_raise():
    model = SEQ2SEQ(seeds=[0, 1])
    batch = {k: torch.stack([v] * 3) for k, v in CopyTask(12).sample(torch.Generator(), 4).items()}
    with pytest.raises(ValueError, match="leading dimension"):
        model.loss(batch)
    with pytest.raises(ValueError, match="missing"):
        model.loss({"src": batch["src"][:2]})


@pytest.mark.parametrize("execution", ["batched", "looped"])
def test_eval_batch_size_is_the_size_of_every_evaluation_batch(execution):
    def batch_size_probe(model, batch):
        return {"n": torch.full((model.n_members,), float(batch["src"].shape[1]))}

    h = train(SEQ2SEQ, CopyTask(12), [0, 1], steps=3, batch_size=4, eval_batch_size=7,
              eval_every=1, progress=False, execution=execution, workers=1,
              probes=[batch_size_probe])
    assert np.all(h.probes["n"] == 7)


def test_two_probes_may_not_record_the_same_name():
    p = lambda model, batch: {"x": torch.zeros(model.n_members)}
    with pytest.raises(ValueError, match="two probes returned the name 'x'"):
        train(SEQ2SEQ, CopyTask(12), [0], steps=1, batch_size=4, progress=False,
              probes=[p, p])


def test_probes_must_be_a_list_of_callables():
    with pytest.raises(TypeError, match="probes must be a list or tuple of callables"):
        train(SEQ2SEQ, CopyTask(12), [0], steps=1, batch_size=4, progress=False,
              probes={"": lambda m, b: {}})


def test_concat_of_two_runs_is_the_run_of_all_their_members():
    """History.concat (chapter 5's screen draws its heads in rounds): looped members are
    independent, so two runs concatenated are bitwise one run of all the members."""
    fn = functools.partial(AttentionClassifier, vocab=12, embed=4, hidden=4)
    kw = dict(steps=3, lr=0.1, batch_size=4, eval_every=2, progress=False, workers=1,
              execution="looped")
    task = KeywordTask(length=5, vocab=12)
    a, b = train(fn, task, [0, 1], **kw), train(fn, task, [2], data_seeds=[9], **kw)
    whole = train(fn, task, [0, 1, 2], data_seeds=[0, 1, 9], **kw)
    both = History.concat([a, b])
    assert both.seeds.tolist() == [0, 1, 2] and both.data_seeds.tolist() == [0, 1, 9]
    for name in ("train_loss", "eval_steps"):
        assert np.array_equal(getattr(both, name), getattr(whole, name))
    for k in whole.metrics:
        assert np.array_equal(both.metrics[k], whole.metrics[k])
    for k, v in whole.model.state_dict().items():
        assert torch.equal(both.model.state_dict()[k], v)
    assert History.concat([a]) is a
    longer = train(fn, task, [3], **{**kw, "steps": 4})
    with pytest.raises(ValueError, match=r"histories\[1\] has other training settings"):
        History.concat([a, longer])
    with pytest.raises(TypeError, match="non-empty list of History"):
        History.concat([])


# ---------------------------------------------------- #35: probe records, one row a member
def _fit_with(probe, execution, seeds=(0, 1), steps=2):
    return train(SEQ2SEQ, CopyTask(12), list(seeds), steps=steps, batch_size=4, eval_every=1,
                 progress=False, execution=execution, workers=1, probes=[probe])


def _mean_of_all_members(model, batch):
    return {"m": model.evaluate(batch)["loss"].mean().reshape(1)}


def _pairwise(model, batch):          # (S, S): its trailing shape follows the members
    loss = model.evaluate(batch)["loss"]
    return {"d": loss[:, None] - loss[None, :]}


def _scalar(model, batch):
    return {"s": model.evaluate(batch)["loss"].sum()}


@pytest.mark.parametrize("execution", ["looped", "batched"])
@pytest.mark.parametrize("probe, match", [
    (_scalar, r"_scalar returned 's' with shape \(\) for a model of [12] member"),
    (lambda model, batch: [1.0], r"probe .*<lambda> must return a dict"),
    (lambda model, batch: {"t": "text"}, r"probe .*<lambda> returned 't' as str"),
])
def test_a_probe_must_return_one_row_per_member_in_either_execution(probe, match, execution):
    err = TypeError if "<lambda>" in match else ValueError
    with pytest.raises(err, match=match):
        _fit_with(probe, execution)


@pytest.mark.parametrize("probe, match", [
    (_mean_of_all_members, r"_mean_of_all_members returned 'm' with shape \(1,\) for a model "
                           r"of 2 members"),
    (_pairwise, r"_pairwise returned 'd' with shape \(2, 2\) .* and shape \(1, 1\) for "
                r"member 0 alone: .* must not depend on how many members"),
])
def test_a_probe_whose_rows_follow_the_model_not_the_member_fails_batched(probe, match):
    with pytest.raises(ValueError, match=match):
        _fit_with(probe, "batched")


def test_looped_a_reduction_over_the_members_is_the_members_own_value():
    """Looped, each model has one member: a probe reducing over the members records that
    member's own value (the right numbers), so it is not checked twice over at double size
    (the batched run of the same probe fails, above)."""
    h = _fit_with(_mean_of_all_members, "looped")
    np.testing.assert_allclose(h.probes["m"], h.metrics["loss"], rtol=1e-6)
    h = _fit_with(_pairwise, "looped")
    assert h.probes["d"].shape == (2, 3, 1) and not h.probes["d"].any()


@pytest.mark.parametrize("execution", ["looped", "batched"])
def test_a_probe_record_keeps_its_shape_through_a_run(execution):
    calls = {}

    def growing(model, batch):    # one more column at each call on the same model
        calls[id(model)] = calls.get(id(model), 0) + 1
        return {"g": torch.zeros(model.n_members, calls[id(model)])}

    with pytest.raises(ValueError, match=r"growing returned 'g' with shape \(\d, \d\) at this "
                                         r"evaluation and \(\d, \d\) at the first"):
        _fit_with(growing, execution)


def test_a_per_member_probe_is_recorded_alike_looped_and_batched_and_named_in_errors():
    def per_member(model, batch):
        return {"loss2": model.evaluate(batch)["loss"] * 2,
                "alpha": model(batch["src"], batch["tgt_in"])["alpha"].mean((1, 2, 3))}

    hl, hb = (_fit_with(per_member, e, seeds=(3, 4, 5)) for e in ("looped", "batched"))
    for k in ("loss2", "alpha"):
        assert hl.probes[k].shape == hb.probes[k].shape
        assert hb.probes[k].shape[:2] == (3, 3) and hb.probes[k].ndim == (2 if k == "loss2" else 3)
        assert np.abs(hl.probes[k] - hb.probes[k]).max() < 1e-4, k
    np.testing.assert_allclose(hb.probes["loss2"], 2 * hb.metrics["loss"], rtol=1e-6)
    # a functools.partial is named by the function it wraps
    bad = functools.partial(lambda model, batch, n: {"x": torch.zeros(n)}, n=5)
    with pytest.raises(ValueError, match=r"probe .*<lambda> returned 'x' with shape \(5,\)"):
        _fit_with(bad, "batched")


def test_a_worker_pool_that_does_not_start_is_named_not_waited_for(monkeypatch):
    """The engine waits POOL_START_TIMEOUT_S for its worker processes to answer a first
    call, then says which pool did not start and what to do (a chapter's first run in a
    kernel once sat idle for 600 s: with this it cannot sit silent)."""
    import time

    from attn_core import training as tr

    tr._start_workers(2)                                  # a pool that starts: no error
    monkeypatch.setattr(tr, "POOL_START_TIMEOUT_S", 0.5)
    monkeypatch.setattr(tr, "_PING_DELAY_S", 5.0)          # workers that take 5 s to answer
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"the engine's 2 worker processes \(joblib/loky\) "
                                           r"did not start and answer within 0\.5 s: set "
                                           r"ATTN_WORKERS=1"):
        tr._start_workers(2)
    assert time.perf_counter() - t0 < 4.5                   # it did not wait for them
