"""Chapter 7's module (issue #36): the end-token conditions, their configs and the probe of
where attention goes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from attn_core.chapters import ch7_end_token as ch
from attn_core.chapters.ch4_copy import COPY_BASE
from attn_core.data import CopyTask
import torch.nn.functional as F


def _short(cfg, steps=10):
    return replace(cfg, steps=steps, eval_every=5, seeds=(0, 1))


def test_the_base_is_chapter_4s_authors_model():
    base = ch.END_BASE.fast
    for f in ("length", "hidden", "batch_size", "steps", "head_proj", "bias", "eos", "lr"):
        assert getattr(base, f) == getattr(COPY_BASE.fast, f)
    assert base.task() == COPY_BASE.fast.task()     # the same task: bitwise chapter 4's runs


@pytest.mark.parametrize("name", list(ch.CONDITIONS))
def test_every_condition_is_named_back_and_draws_its_task(name):
    cfg = ch.condition_config(name, length=6)
    assert ch.condition_name(cfg) == name and len(cfg.seeds) == 40
    t = cfg.task()
    b = t.sample(torch.Generator().manual_seed(0), 3)
    assert b["src"].max() < t.model_vocab and b["tgt"].max() < t.model_vocab
    ctrl = ch.condition_config(name, length=6, task="control")
    assert ctrl.distribution == "distinct" and ctrl.vocab == 9


def test_a_config_with_an_inconsistent_end_token_is_refused_naming_its_field():
    with pytest.raises(ValueError, match=r"^EndTokenConfig\.mask_end=True needs an end token"):
        ch.EndTokenConfig(eos=False, mask_end=True)
    with pytest.raises(ValueError, match=r"^EndTokenConfig\.eos_side must be one of"):
        ch.EndTokenConfig(eos_side="middle")
    with pytest.raises(TypeError, match=r"^EndTokenConfig\.start must be True or False"):
        ch.EndTokenConfig(start=1)
    with pytest.raises(ValueError, match=r"^name must be one of"):
        ch.condition_config("sink")
    with pytest.raises(ValueError, match=r"^task must be one of"):
        ch.condition_config("both", task="iid")


def test_the_probe_partitions_the_attention_mass():
    for name in ch.CONDITIONS:          # untrained models: attention spread everywhere
        cfg = ch.condition_config(name, length=6)
        task = cfg.task()
        model = cfg.model_fn(task)(seeds=[0, 1])
        with torch.no_grad():
            model.score.normal_(0, 0.5)
        b = {k: torch.stack([v, v]) for k, v in
             task.sample(torch.Generator().manual_seed(0), 8).items()}
        probes = ch.end_probe(task)(model, b)
        total = sum(probes[f"mass_{c}"] for c in ch.POSITION_CLASSES)
        np.testing.assert_allclose(total.detach(), 1.0, rtol=1e-5)
        assert (probes["mass_end"] == 0).all() == (name in (
            "none", "target", "start", "masked", "varying, none", "source, masked",
            "start, masked"))
        assert (probes["mass_start"] > 0).all() == (name == "start")


def test_the_probe_puts_each_position_in_its_class():
    task = CopyTask(5, eos=True)
    probe = ch.end_probe(task)
    b = {k: v.unsqueeze(0) for k, v in task.sample(torch.Generator().manual_seed(0),
                                                    2).items()}

    class OnePlace(torch.nn.Module):   # attends to source position `at` from every step
        def __init__(self, at):
            super().__init__()
            self.at = at

        def forward(self, src, tgt_in):
            S, B, T = tgt_in.shape
            alpha = torch.zeros(S, 1, B, T, src.shape[-1])
            alpha[..., self.at] = 1
            return {"alpha": alpha, "logits": torch.zeros(S, B, T, task.model_vocab)}

    assert float(probe(OnePlace(5), b)["mass_end"][0]) == pytest.approx(1.0)
    # position 4, the last word: right for one copied word of five, last word for the rest
    m = probe(OnePlace(4), b)
    assert float(m["mass_right"][0]) == pytest.approx(1 / 5)
    assert float(m["mass_last word"][0]) == pytest.approx(4 / 5)
    m = probe(OnePlace(0), b)     # right once, a neighbour once (of word 1), other 3 times
    assert [float(m[f"mass_{c}"][0]) for c in ("right", "neighbours", "other")] == \
        pytest.approx([1 / 5, 1 / 5, 3 / 5])
    assert float(m["end_step_on_end"][0]) == 0.0


def test_the_end_token_on_the_target_side_acts_only_through_the_end_steps_loss():
    # an identity: the decoder is causal, so with the end step's loss left out the target's
    # end token changes nothing -- the run with the end token in the source only, to float
    # rounding (the masked mean adds one more, zero-weighted, term)
    a = _short(ch.condition_config("no end loss", length=6)).run(progress=False)
    b = _short(ch.condition_config("source", length=6)).run(progress=False)
    assert np.array_equal(a.probes["copy_acc"], b.probes["copy_acc"])
    np.testing.assert_allclose(a.probes["mass_right"], b.probes["mass_right"], rtol=1e-5)
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-5)
    c = _short(ch.condition_config("both", length=6)).run(progress=False)
    assert not np.array_equal(a.probes["mass_right"], c.probes["mass_right"])


def test_a_push_is_the_first_order_change_of_its_margin_under_a_gradient_step():
    from attn_core.models import Seq2Seq
    task = CopyTask(6, eos=True)
    torch.manual_seed(0)
    model = Seq2Seq(vocab=task.model_vocab, embed=8, hidden=8, bias=True, seeds=[3]).double()
    with torch.no_grad():                       # away from the zero start of the scores
        model.score.normal_(0, 0.5)
    b = {k: v.unsqueeze(0) for k, v in task.sample(torch.Generator().manual_seed(1),
                                                    16).items()}
    pushes = ch.push_probe(task)(model, b)
    enc, dec = (x.detach() for x in model._states(b["src"], b["tgt_in"]))
    words = (b["tgt"] < 6).double()

    def margins():
        e = torch.einsum("sbth,skhg,sblg->sbtl", dec, model.score, enc)
        e = e + torch.einsum("skg,sblg->sbl", model.score_bias, enc)[:, :, None, :]
        e_bar = e.mean(-1)
        d = (e.gather(-1, b["align"].unsqueeze(-1)).squeeze(-1) - e_bar)
        return ((d * words).sum() / words.sum(), ((e[..., 6] - e_bar) * words).sum()
                / words.sum())

    def step_on(group_mask, eps):
        out = model(b["src"], b["tgt_in"])
        ce = F.cross_entropy(out["logits"].flatten(0, 2), b["tgt"].flatten(),
                             reduction="none").view(b["tgt"].shape)
        m = group_mask.double()
        loss = (ce * m).sum() / m.sum()
        g = torch.autograd.grad(loss, [model.score, model.score_bias])
        with torch.no_grad():
            model.score -= eps * g[0]
            model.score_bias -= eps * g[1]
        return g

    for group, mask in (("copy", b["tgt"] < 6), ("end", b["tgt"] == 6)):
        before = [float(x.detach()) for x in margins()]
        saved = (model.score.detach().clone(), model.score_bias.detach().clone())
        eps = 1e-6
        step_on(mask, eps)
        after = [float(x.detach()) for x in margins()]
        with torch.no_grad():
            model.score.copy_(saved[0])
            model.score_bias.copy_(saved[1])
        for i, name in enumerate(("diag", "sink")):
            want = float(pushes[f"push_{name}_{group}"][0])
            assert (after[i] - before[i]) / eps == pytest.approx(want, rel=1e-4, abs=1e-9)


def test_pushes_are_zero_for_a_group_or_margin_that_does_not_exist():
    for name, zero in (("none", ch.PUSHES[1:]),
                       ("no end loss", ("push_diag_end", "push_sink_end")),
                       ("masked", ("push_sink_copy", "push_sink_end"))):
        cfg = ch.condition_config(name, length=5, seeds=(0,))
        task = cfg.task()
        model = cfg.model_fn(task)(seeds=[0])
        with torch.no_grad():
            model.score.normal_(0, 0.5)
        b = {k: v.unsqueeze(0) for k, v in task.sample(torch.Generator().manual_seed(0),
                                                        8).items()}
        out = ch.push_probe(task)(model, b)
        for k in zero:
            assert float(out[k][0]) == 0.0, (name, k)
        assert float(out["push_diag_copy"][0]) != 0.0
