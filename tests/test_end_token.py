"""The end token taken apart (issue #36, chapter 7): CopyTask's options for where the end
token is and what it may do, and the Seq2Seq masks they drive (src_mask, score_stop,
loss_mask, align_mask). Each option at its default leaves the batch exactly as before."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F

from attn_core.data import CopyTask
from attn_core.models import Seq2Seq, attention_weights
from attn_core.training import train

gen = lambda: torch.Generator().manual_seed(0)  # noqa: E731


# ------------------------------------------------------------------------------- the data
def test_the_defaults_draw_the_batches_of_before():
    for eos in (False, True):
        b = CopyTask(6, eos=eos).sample(gen(), 5)
        assert set(b) == {"src", "tgt_in", "tgt", "align"}
        L = 6 + eos
        assert torch.equal(b["align"], torch.arange(L).expand(5, L))
        assert torch.equal(b["tgt"], b["src"])


def test_end_token_in_the_source_only():
    t = CopyTask(5, eos=True, eos_side="source")
    b = t.sample(gen(), 4)
    assert b["src"].shape == (4, 6) and b["tgt"].shape == b["tgt_in"].shape == (4, 5)
    assert (b["src"][:, -1] == t.eos_token).all() and (b["tgt"] < 5).all()
    assert torch.equal(b["tgt"], b["src"][:, :5])
    assert set(b) == {"src", "tgt_in", "tgt", "align"}


def test_end_token_in_the_target_only_has_no_source_position():
    t = CopyTask(5, eos=True, eos_side="target")
    b = t.sample(gen(), 4)
    assert b["src"].shape == (4, 5) and b["tgt"].shape == (4, 6)
    assert (b["src"] < 5).all() and (b["tgt"][:, -1] == t.eos_token).all()
    assert torch.equal(b["tgt"][:, :5], b["src"])
    assert torch.equal(b["align_mask"][0], torch.tensor([True] * 5 + [False]))
    # the same data as the end token on both sides, without the source's end
    both = CopyTask(5, eos=True).sample(gen(), 4)
    assert torch.equal(both["src"][:, :5], b["src"]) and torch.equal(both["tgt"], b["tgt"])


def test_a_start_token_at_the_front_of_the_source_shifts_the_alignment():
    t = CopyTask(5, start=True)
    assert (t.start_token, t.bos, t.model_vocab) == (5, 6, 7)
    b = t.sample(gen(), 4)
    assert (b["src"][:, 0] == 5).all() and b["src"].shape == (4, 6)
    assert torch.equal(b["tgt"], b["src"].gather(1, b["align"]))
    assert torch.equal(b["align"][0], torch.arange(1, 6))
    t2 = CopyTask(5, eos=True, start=True)
    assert (t2.eos_token, t2.start_token, t2.bos, t2.model_vocab) == (5, 6, 7, 8)
    b2 = t2.sample(gen(), 4)
    assert (b2["src"][:, 0] == 6).all() and (b2["src"][:, -1] == 5).all()
    assert torch.equal(b2["tgt"], b2["src"].gather(1, b2["align"]))
    for b_, t_ in ((b, t), (b2, t2)):
        assert max(int(v.max()) for v in (b_["src"], b_["tgt"], b_["tgt_in"])) < t_.model_vocab


def test_the_masks_mark_the_end():
    b = CopyTask(5, eos=True, mask_end=True, end_loss=False,
                 end_score_grad=False).sample(gen(), 3)
    end = torch.tensor([False] * 5 + [True])
    assert torch.equal(b["src_mask"], (~end).expand(3, 6))
    assert torch.equal(b["loss_mask"], (~end).expand(3, 6))
    assert torch.equal(b["score_stop"], end.expand(3, 6))
    assert torch.equal(b["align_mask"], (~end).expand(3, 6))   # its place is masked


@pytest.mark.parametrize("kw, name", [
    (dict(eos_side="source"), "eos_side"), (dict(eos=True, eos_side="middle"), "eos_side"),
    (dict(mask_end=True), "mask_end"), (dict(eos=True, eos_side="target", mask_end=True),
                                        "mask_end"),
    (dict(end_loss=False), "end_loss"), (dict(eos=True, eos_side="source", end_loss=False),
                                         "end_loss"),
    (dict(eos=True, eos_side="source", end_score_grad=False), "end_score_grad")])
def test_an_option_without_its_end_token_is_refused_naming_it(kw, name):
    with pytest.raises(ValueError, match=rf"^{name}"):
        CopyTask(5, **kw)


@pytest.mark.parametrize("name", ["start", "mask_end", "end_loss", "end_score_grad"])
def test_the_options_must_be_bools(name):
    with pytest.raises(TypeError, match=rf"^{name} must be True or False"):
        CopyTask(5, eos=True, **{name: 1})


# ------------------------------------------------------------------------------ the model
def _model(task, **kw):
    return Seq2Seq(vocab=task.model_vocab, embed=8, hidden=8, seeds=[0, 1], **kw)


def _stack(b):
    return {k: torch.stack([v, v]) for k, v in b.items()}


@pytest.mark.parametrize("attention", ["learned", "uniform"])
def test_a_masked_source_position_gets_no_attention(attention):
    task = CopyTask(5, eos=True, mask_end=True)
    b = _stack(task.sample(gen(), 3))
    m = _model(task, attention=attention)
    alpha = m(b["src"], b["tgt_in"], src_mask=b["src_mask"])["alpha"]
    assert (alpha[..., -1] == 0).all()
    assert torch.allclose(alpha.sum(-1), torch.ones(()))
    if attention == "uniform":
        assert torch.allclose(alpha[..., :-1], torch.full((), 1 / 5))
    free = m(b["src"], b["tgt_in"])["alpha"]
    assert (free[..., -1] > 0).all()           # without the mask it does


def test_attention_weights_with_a_mask_renormalise_over_the_rest():
    scores = torch.tensor([[1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, True, False]])
    assert torch.allclose(attention_weights(scores, "learned", mask),
                          torch.cat([torch.softmax(scores[:, :2], -1), torch.zeros(1, 1)], 1))


def test_a_stopped_step_sends_no_gradient_to_the_attention_scores():
    task = CopyTask(5, eos=True, end_loss=False, end_score_grad=False)
    b = _stack(task.sample(gen(), 3))
    only_end = {**b, "loss_mask": ~b["loss_mask"]}        # the end step's loss alone

    def grads(batch):
        m = _model(task)
        m.loss(batch).sum().backward()
        return m.score.grad, m.encoder.w_ih.grad

    g_score, g_enc = grads(only_end)
    assert torch.equal(g_score, torch.zeros_like(g_score))    # the scores got nothing
    assert g_enc.abs().sum() > 0                              # the rest of the step did
    free = {k: v for k, v in only_end.items() if k != "score_stop"}
    assert grads(free)[0].abs().sum() > 0                     # without the stop they do
    # the stop changes gradients, not values
    m = _model(task)
    assert torch.equal(m(b["src"], b["tgt_in"], score_stop=b["score_stop"])["logits"],
                       m(b["src"], b["tgt_in"])["logits"])


def test_the_loss_mask_leaves_the_end_step_out_of_the_loss():
    task = CopyTask(5, eos=True, end_loss=False)
    b = _stack(task.sample(gen(), 3))
    m = _model(task)
    logits = m(b["src"], b["tgt_in"])["logits"]
    want = F.cross_entropy(logits[:, :, :-1].flatten(0, 2), b["tgt"][:, :, :-1].flatten(),
                           reduction="none").view(2, -1).mean(1)
    assert torch.allclose(m.loss(b), want, rtol=1e-6)
    plain = {k: v for k, v in b.items() if k != "loss_mask"}
    assert not torch.allclose(m.loss(plain), want, rtol=1e-6)
    assert torch.allclose(m.evaluate(b)["loss"], want, rtol=1e-6)


def test_attention_accuracy_counts_only_steps_with_a_source_position():
    task = CopyTask(5, eos=True, eos_side="target")
    b = _stack(task.sample(gen(), 3))
    m = _model(task)
    alpha = m(b["src"], b["tgt_in"])["alpha"]
    hit = (alpha.mean(1).argmax(-1) == b["align"]).float()
    assert torch.allclose(m.evaluate(b)["attn_acc"], hit[:, :, :5].flatten(1).mean(1))


def test_a_mask_of_the_wrong_shape_or_dtype_is_refused_naming_it():
    task = CopyTask(5, eos=True, mask_end=True)
    b = _stack(task.sample(gen(), 3))
    m = _model(task)
    with pytest.raises(ValueError, match=r"^batch\['src_mask'\] must have shape"):
        m.loss({**b, "src_mask": b["src_mask"][:, :, :-1]})
    with pytest.raises(TypeError, match=r"^batch\['loss_mask'\] must be a bool tensor"):
        m.loss({**b, "loss_mask": b["src_mask"].long()})


@pytest.mark.parametrize("execution", ["looped", "batched"])
def test_the_engine_trains_with_every_mask(execution):
    task = CopyTask(4, eos=True, mask_end=True, end_loss=False, end_score_grad=False)
    fn = functools.partial(Seq2Seq, vocab=task.model_vocab, embed=8, hidden=8)
    h = train(fn, task, [0, 1], steps=4, batch_size=4, eval_every=2, progress=False,
              workers=1, execution=execution)
    assert h.metrics["token_acc"].shape == (2, 3)
    ref = train(fn, task, [0, 1], steps=4, batch_size=4, eval_every=2, progress=False,
                workers=1, execution="looped")
    assert torch.allclose(torch.as_tensor(h.train_loss), torch.as_tensor(ref.train_loss),
                          rtol=1e-5)


# ---------------------------------------------------------------- sequences of varying length
def test_varying_lengths_pad_the_source_on_the_left_and_the_target_on_the_right():
    t = CopyTask(8, eos=True, min_length=3)
    assert (t.eos_token, t.pad_token, t.bos, t.model_vocab) == (8, 9, 10, 11)
    b = t.sample(gen(), 400)
    ends = b["tgt"] == 8
    assert (ends.sum(1) == 1).all()                         # one end per target
    ell = ends.float().argmax(1)                            # ℓ: the end step
    assert int(ell.min()) == 3 and int(ell.max()) == 8      # every length appears
    assert (b["src"][:, -1] == 8).all()                     # the source's end stays last
    real = b["align_mask"]
    assert torch.equal(real.sum(1), ell + 1)                # the ℓ words and the end
    assert torch.equal(b["tgt"][real], b["src"].gather(1, b["align"])[real])
    assert torch.equal(b["src_mask"], b["src"] != 9)
    assert torch.equal(b["loss_mask"], real)
    assert torch.equal(b["tgt_in"][:, 1:], b["tgt"][:, :-1])
    for row, n in zip(b["src"], ell):                       # a permutation of 0 .. ℓ-1
        words = row[8 - int(n):8]
        assert sorted(words.tolist()) == list(range(int(n)))
    d = CopyTask(8, vocab=12, distribution="distinct", eos=True,
                 min_length=3).sample(gen(), 50)               # ℓ distinct words of 12
    for row, real in zip(d["src"], d["src_mask"]):
        words = row[real][:-1]
        assert len(set(words.tolist())) == len(words) and (words < 12).all()


def test_varying_lengths_mask_their_own_end_steps():
    t = CopyTask(6, eos=True, min_length=2, mask_end=True, end_loss=False,
                 end_score_grad=False)
    b = t.sample(gen(), 50)
    ends = b["tgt"] == 6
    assert torch.equal(b["score_stop"], ends)
    assert not (b["loss_mask"] & ends).any() and not (b["align_mask"] & ends).any()
    assert torch.equal(b["src_mask"], (b["src"] != 7) & (b["src"] != 6))


def test_varying_lengths_without_an_end_token_pad_the_same_words():
    t = CopyTask(8, min_length=3)
    assert (t.eos_token, t.pad_token, t.bos, t.model_vocab) == (None, 8, 9, 10)
    b = t.sample(gen(), 300)
    with_end = CopyTask(8, eos=True, min_length=3).sample(gen(), 300)
    real = b["align_mask"]
    ell = real.sum(1)
    assert int(ell.min()) == 3 and int(ell.max()) == 8 and b["src"].shape == (300, 8)
    assert torch.equal(b["tgt"][real], b["src"].gather(1, b["align"])[real])
    assert torch.equal(b["loss_mask"], real) and torch.equal(b["src_mask"], b["src"] != 8)
    # the same lengths and words as with the end token: only the end token differs
    assert torch.equal(with_end["align_mask"].sum(1), ell + 1)
    assert torch.equal(with_end["src"][:, :8][with_end["src_mask"][:, :8]],
                       b["src"][b["src_mask"]])


@pytest.mark.parametrize("kw, name", [
    (dict(eos=True, min_length=0), "min_length"),
    (dict(eos=True, min_length=6), "min_length"),
    (dict(eos=True, eos_side="source", min_length=2), "min_length"),
    (dict(eos=True, min_length=2, target_permutation=(1, 0, 2, 3, 4)), "min_length")])
def test_bad_varying_lengths_are_refused_naming_min_length(kw, name):
    with pytest.raises(ValueError, match=rf"^{name}"):
        CopyTask(5, **kw)


def test_the_engine_trains_on_varying_lengths():
    task = CopyTask(5, eos=True, min_length=2)
    fn = functools.partial(Seq2Seq, vocab=task.model_vocab, embed=8, hidden=8)
    h = train(fn, task, [0, 1], steps=4, batch_size=4, eval_every=2, progress=False,
              workers=1, execution="batched")
    assert torch.isfinite(torch.as_tensor(h.train_loss)).all()


def test_a_state_stopped_step_trains_only_the_output_layers():
    task = CopyTask(5, eos=True, end_loss=False, end_state_grad=False)
    b = _stack(task.sample(gen(), 3))
    assert torch.equal(b["state_stop"], ~b["loss_mask"])
    only_end = {**b, "loss_mask": ~b["loss_mask"]}        # the end step's loss alone
    m = _model(task)
    m.loss(only_end).sum().backward()
    assert torch.equal(m.score.grad, torch.zeros_like(m.score.grad))
    assert m.encoder.w_ih.grad is None or not m.encoder.w_ih.grad.any()
    assert m.combine.weight.grad.abs().sum() > 0 and m.out.weight.grad.abs().sum() > 0
    m2 = _model(task)
    free = {k: v for k, v in only_end.items() if k != "state_stop"}
    m2.loss(free).sum().backward()
    assert m2.encoder.w_ih.grad.abs().sum() > 0              # without the stop it reaches
    assert torch.equal(m(b["src"], b["tgt_in"], state_stop=b["state_stop"])["logits"],
                       m(b["src"], b["tgt_in"])["logits"])   # values unchanged


def test_a_masked_start_token_gets_no_attention():
    task = CopyTask(5, start=True, mask_start=True)
    b = _stack(task.sample(gen(), 3))
    assert torch.equal(b["src_mask"][0, 0], torch.tensor([False] + [True] * 5))
    alpha = _model(task)(b["src"], b["tgt_in"], src_mask=b["src_mask"])["alpha"]
    assert (alpha[..., 0] == 0).all()
    with pytest.raises(ValueError, match=r"^mask_start=True needs a start token"):
        CopyTask(5, mask_start=True)
    with pytest.raises(ValueError, match=r"^end_state_grad=False needs an end token"):
        CopyTask(5, end_state_grad=False)
