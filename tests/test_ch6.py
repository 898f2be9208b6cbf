"""Chapter 6: the encoder-decoder Transformer, its stacked engine model and its probe."""

import functools
import json
import re

import numpy as np
import pytest
import torch

from attn_core.chapters import ch6_transformer as ch
from attn_core.chapters.ch4_copy import copy_probe
from attn_core.chapters.ch6_transformer import (POSITIONS, StackedTransformer,
                                                TransformerCopyConfig, TransformerSeq2Seq)
from attn_core.data import CopyTask
from attn_core.stacked import member, stack_members
from attn_core.training import train

SMALL = dict(d_model=8, heads=2, d_ff=16, max_len=16)


def _batch(task, n, seed=0, members=1):
    b = task.sample(torch.Generator().manual_seed(seed), n)
    return {k: torch.stack([v] * members) for k, v in b.items()}


@pytest.mark.parametrize("norm", ch.NORMS)
@pytest.mark.parametrize("positions", POSITIONS)
def test_a_stack_of_members_computes_each_member(positions, norm):
    task = CopyTask(6, eos=True)
    make = functools.partial(StackedTransformer, vocab=task.model_vocab, positions=positions,
                             norm=norm, **SMALL)
    stacked = make(seeds=[0, 1, 2])
    b = _batch(task, 5, members=3)
    out = stacked(b["src"], b["tgt_in"])
    assert out["logits"].shape == (3, 5, 7, task.model_vocab)
    assert out["alpha"].shape == (3, 2, 5, 7, 7)
    for i, seed in enumerate([0, 1, 2]):
        alone = make(seeds=[seed])(b["src"][i:i + 1], b["tgt_in"][i:i + 1])
        torch.testing.assert_close(alone["logits"][0], out["logits"][i], atol=1e-5, rtol=0)
        torch.testing.assert_close(alone["alpha"][0], out["alpha"][i], atol=1e-6, rtol=0)
    # members differ, and stack_members / member round-trip the parameters exactly
    assert not torch.allclose(out["logits"][0], out["logits"][1])
    joined = stack_members([make(seeds=[s]) for s in (0, 1, 2)])
    assert torch.equal(joined(b["src"], b["tgt_in"])["logits"], out["logits"])
    one = member(stacked, 1)
    assert one.seeds == [1] and torch.equal(
        one(b["src"][1:2], b["tgt_in"][1:2])["logits"][0],
        make(seeds=[1])(b["src"][1:2], b["tgt_in"][1:2])["logits"][0])


def test_member_module_is_the_readable_model_with_the_members_weights():
    task = CopyTask(6, eos=True)
    stacked = StackedTransformer(task.model_vocab, seeds=[3, 4], **SMALL)
    b = _batch(task, 4, members=2)
    readable = stacked.member_module(1)
    assert isinstance(readable, TransformerSeq2Seq)
    torch.testing.assert_close(readable(b["src"][1], b["tgt_in"][1])["logits"],
                               stacked(b["src"], b["tgt_in"])["logits"][1], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match=r"m must be an int in \[0, 1\]"):
        stacked.member_module(2)


@pytest.mark.parametrize("norm", ch.NORMS)
@pytest.mark.parametrize("positions", ["learned", "qk", "relative"])
def test_lexical_probe_is_the_output_with_the_cross_attention_on_one_position(positions, norm):
    task = CopyTask(6, eos=True)
    stacked = StackedTransformer(task.model_vocab, positions=positions, norm=norm,
                                 seeds=[0, 1], **SMALL)
    b = _batch(task, 5, members=2)
    beta = stacked.lexical_probe(b["src"], b["tgt_in"], b["tgt"])
    assert beta.shape == (2, 5, 7, 7)
    model = stacked.member_module(1)
    src, tgt_in, tgt = b["src"][1], b["tgt_in"][1], b["tgt"][1]
    # the forward pass with every head's α replaced by a one-hot at position l
    for l in (0, 3, 6):
        def one_hot(q_in, k_in, v_in, **kw):
            out, alpha = ch.MultiHeadAttention.forward(model.cross, q_in, k_in, v_in, **kw)
            B, T, d = q_in.shape
            v = model.cross.v(v_in)[:, l]                       # V_l (B, d)
            return model.cross.o(v)[:, None, :].expand(B, T, d), alpha
        model.cross.forward = one_hot
        p = torch.softmax(model(src, tgt_in)["logits"], -1)
        del model.cross.forward
        want = p.gather(-1, tgt[..., None]).squeeze(-1)
        torch.testing.assert_close(beta[1, :, :, l], want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("positions", POSITIONS)
def test_the_decoder_is_causal(positions):
    task = CopyTask(8, eos=True)
    model = StackedTransformer(task.model_vocab, positions=positions, seeds=[0], **SMALL)
    b = _batch(task, 3)
    changed = b["tgt_in"].clone()
    changed[..., 5:] = (changed[..., 5:] + 1) % task.model_vocab
    a = model(b["src"], b["tgt_in"])["logits"]
    c = model(b["src"], changed)["logits"]
    torch.testing.assert_close(a[..., :5, :], c[..., :5, :], atol=1e-6, rtol=0)
    assert not torch.allclose(a[..., 5:, :], c[..., 5:, :])


def test_without_positions_the_source_is_a_bag_of_words():
    task = CopyTask(8, eos=True)
    b = _batch(task, 4)
    shuffled = b["src"].clone()
    shuffled[..., :8] = shuffled[..., torch.randperm(8, generator=torch.Generator()
                                                      .manual_seed(1))]
    # relative biases start at 0: at initialisation that model is a bag too, until they move
    for positions, same, moved in (("none", True, False), ("learned", False, False),
                                   ("relative", True, False), ("relative", False, True)):
        model = StackedTransformer(task.model_vocab, positions=positions, seeds=[0], **SMALL)
        if moved:
            with torch.no_grad():
                model.params["rel"].normal_(generator=torch.Generator().manual_seed(2))
        a = model(b["src"], b["tgt_in"])["logits"]
        c = model(shuffled, b["tgt_in"])["logits"]
        assert torch.allclose(a, c, atol=1e-5) is same, (positions, moved)


def test_qk_positions_never_enter_what_is_read():
    # every source word the same: with positions only in queries and keys each encoder
    # output is the same vector (the values carry no position); added positions differ
    task = CopyTask(8, eos=True)
    src = torch.full((1, 2, 9), 3, dtype=torch.long)
    for positions, same in (("qk", True), ("learned", False)):
        model = StackedTransformer(task.model_vocab, positions=positions, seeds=[0], **SMALL)
        enc, _ = model.member_module(0).encode(src[0])
        assert torch.allclose(enc, enc[:, :1].expand_as(enc), atol=1e-6) is same, positions


@pytest.mark.parametrize("positions, cross_sees_positions",
                         [("qk", True), ("qk-cross", True), ("qk-self", False)])
def test_qk_variants_tell_only_their_attentions_where_they_are(positions,
                                                                cross_sees_positions):
    # every source and target word the same: the values never carry a position, so the
    # encoder outputs are all one vector, and the cross-attention can prefer one position
    # over another only if its own queries and keys are given the positions
    task = CopyTask(8, eos=True)
    src = torch.full((1, 2, 9), 3, dtype=torch.long)
    model = StackedTransformer(task.model_vocab, positions=positions, seeds=[0], **SMALL)
    enc, _ = model.member_module(0).encode(src[0])
    torch.testing.assert_close(enc, enc[:, :1].expand_as(enc))
    alpha = model(src, src)["alpha"]
    uniform = torch.allclose(alpha, torch.full_like(alpha, 1 / 9), atol=1e-6)
    assert uniform is not cross_sees_positions, positions
    # the encoder's self-attention: without positions it is permutation-equivariant
    words = torch.randperm(9, generator=torch.Generator().manual_seed(0))[None]
    order = torch.tensor([[3, 0, 8, 1, 5, 2, 7, 4, 6]])
    one = model.member_module(0)
    a, _ = one.encode(words)
    b, _ = one.encode(words[:, order[0]])
    equivariant = torch.allclose(a[:, order[0]], b, atol=1e-5)
    assert equivariant is (positions == "qk-cross"), positions


def test_uniform_cross_attention_is_frozen_at_one_over_L():
    task = CopyTask(6, eos=True)
    model = StackedTransformer(task.model_vocab, attention="uniform", seeds=[0, 1], **SMALL)
    b = _batch(task, 3, members=2)
    alpha = model(b["src"], b["tgt_in"])["alpha"]
    torch.testing.assert_close(alpha, torch.full_like(alpha, 1 / 7))
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert frozen == {"params.cross__q__weight", "params.cross__q__bias",
                      "params.cross__k__weight", "params.cross__k__bias"}


def test_sinusoidal_table():
    pe = ch.sinusoidal_positions(5, 4)
    assert torch.allclose(pe[:, 0], torch.sin(torch.arange(5.0)))
    assert torch.allclose(pe[:, 1], torch.cos(torch.arange(5.0)))
    assert torch.allclose(pe[:, 2], torch.sin(torch.arange(5.0) / 100))


def test_training_is_bitwise_reproducible_and_the_same_in_two_workers():
    task = CopyTask(6, eos=True)
    fn = functools.partial(StackedTransformer, vocab=task.model_vocab, **SMALL)
    kw = dict(steps=3, batch_size=4, eval_every=2, progress=False,
              probes=[copy_probe], execution="looped")
    one = train(fn, task, [0, 1, 2], workers=1, **kw)
    again = train(fn, task, [0, 1, 2], workers=1, **kw)
    two = train(fn, task, [0, 1, 2], workers=2, **kw)
    for other in (again, two):
        assert np.array_equal(one.train_loss, other.train_loss)
        for k in one.metrics:
            assert np.array_equal(one.metrics[k], other.metrics[k]), k
        for k in one.probes:
            assert np.array_equal(one.probes[k], other.probes[k]), k
    assert not np.array_equal(one.train_loss[0], one.train_loss[1])
    assert set(one.probes) == {"beta_align_acc", "attn_map"}


def test_batched_training_matches_looped():
    task = CopyTask(6, eos=True)
    fn = functools.partial(StackedTransformer, vocab=task.model_vocab, **SMALL)
    kw = dict(steps=3, batch_size=4, eval_every=3, progress=False, workers=1)
    looped = train(fn, task, [0, 1], execution="looped", **kw)
    batched = train(fn, task, [0, 1], execution="batched", **kw)
    np.testing.assert_allclose(looped.train_loss, batched.train_loss, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(positions="rotary"), ValueError, r"positions must be one of \('learned'"),
    (dict(norm="sandwich"), ValueError, r"norm must be one of \('pre', 'post'\)"),
    (dict(d_model=10, heads=4), ValueError, r"d_model \(10\) must be a multiple of heads \(4\)"),
    (dict(d_model=8.0), TypeError, r"d_model must be an int"),
    (dict(attention="hard"), ValueError, r"attention must be one of \('learned', 'uniform'\)"),
    (dict(seeds=[]), ValueError, r"seeds"),
])
def test_bad_model_arguments(kwargs, error, match):
    args = dict(vocab=7, **SMALL)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        StackedTransformer(**args)


def test_bad_inputs_are_refused():
    model = StackedTransformer(7, seeds=[0, 1], **SMALL)
    ok = torch.zeros(2, 3, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=r"src has leading dimension 1 but the model has 2"):
        model(ok[:1], ok[:1])
    with pytest.raises(ValueError, match=r"tgt_in must have shape \(S, B, T\); got \(3, 4\)"):
        model(ok, ok[0])
    with pytest.raises(ValueError, match=r"src must hold token ids in \[0, 6\] \(vocab=7\)"):
        model(ok + 7, ok)
    with pytest.raises(ValueError, match=r"src \(2, 3, 4\) and tgt_in \(2, 2, 4\) must "
                                         r"share their first two dimensions \(S, B\)"):
        model(ok, ok[:, :2])
    with pytest.raises(ValueError, match=r"src must not be empty"):
        model(ok[..., :0], ok)
    with pytest.raises(ValueError, match=r"tgt must have shape \(2, 3, 4\); got \(2, 3, 3\)"):
        model.lexical_probe(ok, ok, ok[..., :3])
    long_src = torch.zeros(2, 3, 17, dtype=torch.long)
    with pytest.raises(ValueError, match=r"length 17 exceed max_len=16"):
        model(long_src, ok)


@pytest.mark.parametrize("kwargs, match", [
    (dict(positions="alibi"), r"TransformerCopyConfig.positions must be one of"),
    (dict(d_model=30, heads=4), r"TransformerCopyConfig.d_model \(30\) must be a multiple"),
    (dict(distribution="distinct", vocab=10), r"TransformerCopyConfig.vocab"),
    (dict(steps=0), r"TransformerCopyConfig.steps"),
])
def test_bad_config_fields_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TransformerCopyConfig(**kwargs)


def test_config_builds_the_model_it_describes():
    cfg = TransformerCopyConfig(length=6, positions="relative", norm="post", d_model=8,
                                heads=2, d_ff=16, seeds=(0, 1))
    task = cfg.task()
    model = cfg.model_fn(task)(seeds=[5])
    base = model.member_module(0)
    assert (base.positions, base.norm, base.d_model, base.heads) == ("relative", "post", 8, 2)
    assert cfg.cache_name() == "transformer-relative"
    h = TransformerCopyConfig(length=6, d_model=8, heads=2, d_ff=16, seeds=(0,), steps=2,
                              eval_every=1).train(progress=False)
    assert h.metrics["token_acc"].shape == (1, 3) and "attn_acc" in h.metrics


def test_pos_std_scales_the_learned_positions_draw():
    a = StackedTransformer(7, pos_std=1.0, seeds=[0], **SMALL).params["pos"]
    b = StackedTransformer(7, pos_std=0.02, seeds=[0], **SMALL).params["pos"]
    torch.testing.assert_close(b, 0.02 * a)
    # the rest of the member is drawn the same (positions come after the embedding)
    ea = StackedTransformer(7, pos_std=1.0, seeds=[0], **SMALL).params["emb__weight"]
    eb = StackedTransformer(7, pos_std=0.02, seeds=[0], **SMALL).params["emb__weight"]
    assert torch.equal(ea, eb)
    assert TransformerCopyConfig(pos_std=0.0).pos_std == 0.0
    with pytest.raises(ValueError, match=r"TransformerCopyConfig.pos_std"):
        TransformerCopyConfig(pos_std=-0.1)
    with pytest.raises(ValueError, match=r"pos_std must be"):
        StackedTransformer(7, pos_std=-1.0, **SMALL)


def test_separate_decoder_positions_change_nothing_else():
    task = CopyTask(6, eos=True)
    shared = StackedTransformer(task.model_vocab, seeds=[4], **SMALL)
    apart = StackedTransformer(task.model_vocab, shared_positions=False, seeds=[4], **SMALL)
    assert set(apart.params) == set(shared.params) | {"pos_dec"}
    for name, t in shared.params.items():
        assert torch.equal(t, apart.params[name]), name
    assert not torch.allclose(apart.params["pos_dec"], apart.params["pos"])
    # the decoder reads pos_dec: moving it moves the logits
    b = _batch(task, 3)
    before = apart(b["src"], b["tgt_in"])["logits"]
    with torch.no_grad():
        apart.params["pos_dec"].add_(1.0)
    assert not torch.allclose(before, apart(b["src"], b["tgt_in"])["logits"])
    with pytest.raises(TypeError, match="shared_positions must be True or False"):
        StackedTransformer(7, shared_positions=1, **SMALL)


# --------------------------------------------------------------- the stored sweep (chapter)
def test_the_stored_sweep_has_every_condition_with_its_own_configuration():
    from attn_core.chapters.ch6_transformer import SWEEP_CONDITIONS, load_sweep, sweep_config
    rows = load_sweep()
    assert set(rows) == set(SWEEP_CONDITIONS)
    for name, row in rows.items():
        cfg = sweep_config(name)
        assert row["seeds"] == list(cfg.seeds)
        acc = np.array(row["token_acc"])
        assert acc.shape == (len(cfg.seeds), len(row["eval_steps"]))
        np.testing.assert_allclose(acc[:, -1], row["final_token_acc"], atol=1e-4)


def test_a_stored_sweep_row_of_another_configuration_is_refused(tmp_path):
    import json

    from attn_core.chapters.ch6_transformer import SWEEP_FILE, load_sweep
    rows = json.loads(SWEEP_FILE.read_text())
    rows["qk-self"]["config"]["steps"] = 299
    bad = tmp_path / "sweep.json"
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"row 'qk-self' was computed with another config"):
        load_sweep(bad)
    del rows["qk-self"]
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"has no row 'qk-self'.*sweep\.py"):
        load_sweep(bad)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_sweep(bad)
    with pytest.raises(ValueError, match="is missing"):
        load_sweep(tmp_path / "nothing.json")


def test_sweep_config_names_its_arguments():
    from attn_core.chapters.ch6_transformer import sweep_config
    cfg = sweep_config("qk-self, control", seeds=[0, 1])
    assert (cfg.positions, cfg.distribution, cfg.vocab, cfg.seeds) == (
        "qk-self", "distinct", 30, (0, 1))
    with pytest.raises(ValueError, match="name must be one of"):
        sweep_config("qk-both")
    with pytest.raises(TypeError, match="base must be a TransformerCopyConfig"):
        sweep_config("learned", base=object())


def _live_from_row(row, n=1):
    from attn_core.training import History
    steps = np.asarray(row["eval_steps"])
    return History(seeds=np.arange(n), data_seeds=np.arange(n), train_loss=np.zeros((n, 1)),
                   eval_steps=steps,
                   metrics={"token_acc": np.array(row["token_acc"])[:n].copy(),
                            "attn_acc": np.array(row["attn_acc"])[:n].copy()},
                   probes={"beta_align_acc": np.array(row["beta_align"])[:n].copy()})


def test_check_live_reports_the_worst_live_seed_and_whether_all_were_confirmed(monkeypatch):
    from attn_core.stored import CheckReport
    sweep = ch.load_sweep()
    a, b = _live_from_row(sweep["learned"]), _live_from_row(sweep["qk-self"])
    a.check = CheckReport("a", 0.2, ("loss", 20, 1e-6, 5e-6, "value"), False)
    b.check = CheckReport("b", 0.7, ("token_acc", 40, 2.0, 3.0, "tokens"), False)
    a.confirmed = b.confirmed = True
    report = ch.check_live({"learned": a, "qk-self": b})
    assert report.name == "b" and report.ratio == 0.7 and report.confirmed
    b.confirmed = False
    assert not ch.check_live({"learned": a, "qk-self": b}).confirmed
    with pytest.raises(ValueError, match="a condition the sweep does not: 'nope'"):
        ch.check_live({"nope": a})
    with pytest.raises(ValueError, match=r"live\['learned'\] was not loaded by stored_run"):
        ch.check_live({"learned": _live_from_row(sweep["learned"])})
    with pytest.raises(TypeError, match="live must be a non-empty dict"):
        ch.check_live([a])
    monkeypatch.setenv("ATTN_STORED", "off")        # nothing stored was used: no check
    assert ch.check_live({"learned": _live_from_row(sweep["learned"])}) is None


def test_the_stored_live_seeds_are_the_sweeps_first_seeds():
    """Each live condition's stored entry (full precision) holds what its sweep row's first
    seed holds (rounded to 4 decimals): the check of the entry checks the sweep's seed."""
    from attn_core import stored
    from attn_core.cache import read_entry
    sweep = ch.load_sweep()
    for name in ch.LIVE_CONDITIONS:
        h, _ = read_entry(stored.verify_file(stored.stored_path(ch.live_config(name))))
        row = sweep[name]
        assert h.eval_steps.tolist() == row["eval_steps"]
        for key, got in (("token_acc", h.metrics["token_acc"]),
                         ("attn_acc", h.metrics["attn_acc"]),
                         ("beta_align", h.probes["beta_align_acc"])):
            np.testing.assert_array_equal(np.round(got.astype(float), 4),
                                          np.asarray(row[key])[:1], err_msg=f"{name} {key}")


# ------------------------------------------------------------- #29: untrained values, heads
def test_emb_std_scales_the_words_and_leaves_old_records_alone():
    a = StackedTransformer(7, seeds=[0], **SMALL).params["emb__weight"]
    b = StackedTransformer(7, emb_std=0.02, seeds=[0], **SMALL).params["emb__weight"]
    torch.testing.assert_close(b, 0.02 * a)
    # the field postdates the stored results: at its default it is not in the record, so
    # every stored entry keeps its name; set, it is
    from attn_core.stored import config_record, stored_path
    assert "emb_std" not in config_record(TransformerCopyConfig())
    assert config_record(TransformerCopyConfig(emb_std=0.02))["emb_std"] == 0.02
    for name in ch.LIVE_CONDITIONS:
        assert stored_path(ch.live_config(name)).exists(), name
    with pytest.raises(ValueError, match=r"TransformerCopyConfig.emb_std"):
        TransformerCopyConfig(emb_std=-1.0)


@pytest.mark.parametrize("name", ["learned", "small words and positions", "1 head",
                                  "uniform, control"])
def test_initial_evaluation_is_the_stored_step_0(name):
    sweep = ch.load_sweep()
    assert ch.check_initial(sweep, [name], n=2) <= 2
    # another model lands far away: the check checks the code, not only the record
    cfg = ch.live_config(name, 2)
    other = ch.initial_evaluation(TransformerCopyConfig(**{
        **{k: getattr(cfg, k) for k in cfg.__dataclass_fields__}, "seeds": (5, 6)}))
    tokens = cfg.eval_batch_size * (cfg.length + 1)
    stored0 = np.array(sweep[name]["token_acc"])[:2, 0]
    assert np.abs(other["token_acc"] - stored0).max() * tokens > 10


def test_untrained_models_fail_the_chapters_findings():
    """Step 0 of the conditions the claims compare, computed now: every finding's untrained
    value fails its threshold (the notebook takes the same values from the stored sweep)."""
    from attn_core.chapters.ch4_copy import guessing_accuracy
    guess = guessing_accuracy(20, eos=True)
    init = {n: ch.initial_evaluation(ch.live_config(n, 3))
            for n in ("learned", "small positions", "small positions, control", "qk-cross",
                      "qk-self", "none", "uniform", "uniform, control", "relative")}
    for n, v in init.items():
        assert (v["token_acc"] <= ch.SUCCESS_LEVEL).all(), n          # success rate 0
    assert abs(init["small positions"]["token_acc"].mean() - guess) > 0.03
    assert (init["small positions, control"]["token_acc"] < guess + 0.05).all()
    assert np.abs(init["none"]["token_acc"] - guess).max() > 0.04
    assert init["qk-cross"]["attn_acc"].min() - init["qk-self"]["attn_acc"].max() < 0.5
    assert init["uniform, control"]["beta_align"].min() < 0.5
    assert init["uniform, control"]["beta_align"].min() - init["uniform"]["beta_align"].max() \
        < 0.4
    lstm = ch.lstm_reference()
    assert (lstm["control"]["token_acc_0"] <= ch.SUCCESS_LEVEL).all()
    assert lstm["permutation"]["token_acc_0"].mean() - \
        init["small positions"]["token_acc"].mean() < 0.2


def test_lstm_reference_reads_chapter_4s_stored_runs():
    lstm = ch.lstm_reference()
    ok = {t: lstm[t]["token_acc"] > ch.SUCCESS_LEVEL for t in lstm}
    assert (ok["permutation"].sum(), ok["permutation"].size) == (2, 10)
    assert (ok["control"].sum(), ok["control"].size) == (10, 10)
    # the step asked for, not the runs' end (the permutation runs train 400 steps)
    earlier = ch.lstm_reference(step=280)["permutation"]["token_acc"]
    assert not np.array_equal(earlier, lstm["permutation"]["token_acc"])
    with pytest.raises(ValueError, match="not evaluated at step 400"):
        ch.lstm_reference(step=400)


def test_fisher_exact():
    assert ch.fisher_exact(7, 10, 2, 10) == pytest.approx(0.069779, abs=1e-6)  # R: 0.06978
    assert ch.fisher_exact(2, 10, 7, 10) == pytest.approx(ch.fisher_exact(7, 10, 2, 10))
    assert ch.fisher_exact(10, 10, 2, 10) == pytest.approx(0.000714, abs=1e-6)
    assert ch.fisher_exact(3, 5, 3, 5) == pytest.approx(1.0)
    assert ch.fisher_exact(0, 0, 2, 10) == 1.0                    # an empty group: no evidence
    with pytest.raises(ValueError, match=r"k1 \(of n1\) must be an int in \[0, 10\]; got 11"):
        ch.fisher_exact(11, 10, 2, 10)


def _margin(model, batch):
    log_a = model(batch["src"], batch["tgt_in"])["alpha"].log()
    on = log_a.gather(-1, batch["align"][:, None, :, :, None].expand(*log_a.shape[:-1], 1))
    return (on.squeeze(-1) - log_a.mean(-1)).flatten(1).mean(1)


@pytest.mark.parametrize("positions", ["learned", "relative", "none"])
def test_first_step_push_is_the_first_adam_steps_change_of_the_margin(positions):
    cfg = TransformerCopyConfig(length=6, d_model=8, heads=2, d_ff=16, positions=positions,
                                seeds=(0, 1), lr=1e-4)
    push = ch.first_step_push(cfg, batches=1)
    assert set(push) == set(ch.PUSH_GROUPS)
    if positions == "none":
        assert (push["positions"] == 0).all()
    else:
        assert (push["positions"] != 0).all()
    # one real Adam step on the first training batch moves the margin by that much
    task = cfg.task()
    model = cfg.model_fn(task)(seeds=[0, 1])
    b = [task.sample(torch.Generator().manual_seed(s), cfg.batch_size) for s in (0, 1)]
    first = {k: torch.stack([x[k] for x in b]) for k in b[0]}
    held = task.sample(torch.Generator().manual_seed(12345), cfg.batch_size)
    held = {k: torch.stack([v] * 2) for k, v in held.items()}
    with torch.no_grad():
        before = _margin(model, held)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    model.loss(first).sum().backward()
    opt.step()
    with torch.no_grad():
        change = (_margin(model, held) - before).numpy()
    np.testing.assert_allclose(sum(push.values()), change, rtol=0.05, atol=1e-7)


# ------------------------------------------------------------------ #31: figures, sliders
def _texts(fig):
    from matplotlib.text import Text
    return {t.get_text() for t in fig.findobj(Text) if t.get_text()}


def test_model_diagram_shows_every_part_of_the_model():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    fig = ch.model_diagram()
    try:
        assert isinstance(fig, Figure)
        texts = _texts(fig)
        for part in (r"source $x_1 \ldots x_L$, EOS", "target, shifted\n"
                     r"BOS, $y_1 \ldots y_{T-1}$", "word + position\n$x_l + p_l$",
                     "word + position\n$z_t + p_t$",
                     "encoder layer:\nself-attention,\nfeed-forward",
                     "causal\nself-attention", r"cross-attention $\alpha_{t,l}$",
                     "feed-forward", r"logits $W_{\mathrm{out}}\,\mathrm{LN}(y_t)$",
                     "$H$: keys,\nvalues", "queries", "One layer each side, $K = 4$ heads"):
            assert part in texts, part
    finally:
        plt.close(fig)


def _logits_by_the_models_attention(sigma, d=64, K=4, n=21, draws=60, seed=0):
    """The same quantity computed independently: the chapter's MultiHeadAttention, its
    q and k drawn by nn.Linear's own initialisation (biases set to 0), its scores on
    position vectors p ~ N(0, σ²) (shared by queries and keys), t ≠ l, head 0."""
    torch.manual_seed(seed)
    out = []
    for _ in range(draws):
        m = ch.MultiHeadAttention(d, K)
        with torch.no_grad():
            m.q.bias.zero_()
            m.k.bias.zero_()
            p = sigma * torch.randn(1, n, d)
            q = m.q(p).view(1, n, K, d // K).transpose(1, 2)
            k = m.k(p).view(1, n, K, d // K).transpose(1, 2)
            s = (q @ k.transpose(-1, -2) / (d // K) ** 0.5)[0, 0]
        out.append(s[~torch.eye(n, dtype=torch.bool)].double().numpy())
    return np.concatenate(out)


@pytest.mark.parametrize("sigma", [0.01, 0.02, 0.1, 0.3, 1.0, 2.0])
def test_position_logits_spread_is_sigma_squared_over_3_over_the_sliders_range(sigma):
    # the slider's whole range (the live one runs 0.01..2, the pre-drawn one 0.02..2):
    # the closed form (Exercise 6.2) and an independent computation with the model's
    # own attention module and PyTorch's own initialisation agree with the samples
    x = ch.position_logits(sigma)
    assert x.shape == (50 * 21 * 20,)
    assert abs(x.std() / (sigma ** 2 / 3) - 1) < 0.04
    assert abs(x.mean()) < 0.02 * sigma ** 2
    model = _logits_by_the_models_attention(sigma)
    assert abs(x.std() / model.std() - 1) < 0.06
    # the same seed: exactly σ² times the samples at σ = 1
    np.testing.assert_allclose(x, sigma ** 2 * ch.position_logits(1.0), rtol=1e-9,
                               atol=1e-15)


def test_position_logits_spread_moves_with_sigma_and_follows_its_arguments():
    spreads = [ch.position_logits(s).std() for s in (0.01,) + ch.SLIDER_SIGMAS]
    assert np.all(np.diff(spreads) > 0)
    # another width and number of heads: σ²/3 all the same; another seed: other samples
    x = ch.position_logits(0.5, d_model=32, heads=2, n_positions=11, draws=200, seed=3)
    assert x.shape == (200 * 11 * 10,)
    assert abs(x.std() / (0.5 ** 2 / 3) - 1) < 0.04
    assert not np.array_equal(ch.position_logits(1.0, seed=1), ch.position_logits(1.0))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"sigma": 0.0}, ValueError, "sigma"), ({"sigma": -1.0}, ValueError, "sigma"),
    ({"sigma": float("nan")}, ValueError, "sigma"), ({"sigma": "1"}, TypeError, "sigma"),
    ({"sigma": 1.0, "heads": 3}, ValueError, r"d_model \(64\) must be a multiple of heads"),
    ({"sigma": 1.0, "n_positions": 1}, ValueError, "n_positions"),
    ({"sigma": 1.0, "draws": 0}, ValueError, "draws"),
    ({"sigma": 1.0, "seed": -1}, ValueError, "seed"),
    ({"sigma": 1.0, "d_model": 64.0}, TypeError, "d_model"),
])
def test_position_logits_names_its_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ch.position_logits(**kwargs)


@pytest.mark.parametrize("sigma", [0.01, 0.02, 0.3, 1.0, 2.0])
def test_draw_position_logits_draws_the_measured_spread(sigma):
    import matplotlib.pyplot as plt

    fig = ch.draw_position_logits(sigma)
    try:
        spread_ax, hist_ax = fig.axes
        marked = [ln for ln in spread_ax.get_lines() if ln.get_marker() == "o"]
        assert len(marked) == 1
        assert marked[0].get_xdata()[0] == sigma
        assert marked[0].get_ydata()[0] == pytest.approx(ch.position_logits(sigma).std())
        assert f"{ch.position_logits(sigma).std():.2g}" in spread_ax.get_title()
        # the histogram of the position part: its shares sum to 1, its spread grows with σ
        steps = hist_ax.patches[1].get_data()
        assert steps.values.sum() == pytest.approx(1.0)
        bins = np.linspace(*ch.LOGIT_RANGE, 62)
        want = np.histogram(np.clip(ch.position_logits(sigma), *ch.LOGIT_RANGE), bins)[0]
        np.testing.assert_allclose(steps.values, want / want.sum())
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="sigma"):
        ch.draw_position_logits(0.0)


def test_success_counts_slider_draws_the_counts_it_is_given():
    import matplotlib.pyplot as plt
    from attn_core.exercises import ch6 as ex

    rows = ch.load_sweep()
    drawn = {}
    for step in (100, 200, 300):
        fig = ch.draw_success_counts(rows, step, ex.success_count_reference)
        try:
            (ax,) = fig.axes
            bars = [p.get_width() for p in ax.patches]
            want = [ex.success_count_reference(rows[n], lv, step) for lv in (0.95, 0.9)
                    for n in ch.WHAT_IF_NAMES]
            assert bars == want
            assert ax.get_title() == f"budget: step {step}"
            drawn[step] = bars
        finally:
            plt.close(fig)
    assert drawn[100] != drawn[300]                 # the answer moves with the budget
    assert drawn[300][ch.WHAT_IF_NAMES.index("relative")] == 9
    assert drawn[200][ch.WHAT_IF_NAMES.index("relative")] == 0
    ok = ex.success_count_reference
    for kwargs, error, match in [
            ({"count": 3}, TypeError, "count must be callable"),
            ({"rows": []}, TypeError, "rows must be"),
            ({"step": 310}, ValueError, "step must be an evaluation step"),
            ({"step": 300.0}, TypeError, "step"),
            ({"names": ["nope"]}, ValueError, r"names\[0\]"),
            ({"names": "learned"}, TypeError, "names must be"),
            ({"levels": [1.5]}, ValueError, r"levels\[0\]"),
            ({"levels": []}, TypeError, "levels must be")]:
        args = {"rows": rows, "step": 300, "count": ok, **kwargs}
        with pytest.raises(error, match=match):
            ch.draw_success_counts(**args)


def test_printed_name_says_the_attention_but_the_key_does_not_change():
    """A uniform-attention run printed as '[cache] transformer-learned' read as the learned
    model (#31); the printed name says the attention, the cache name (the stored results'
    key) stays the positions only."""
    from dataclasses import replace

    base = ch.TRANSFORMER_BASE.fast
    uniform = replace(base, attention="uniform")
    assert uniform.cache_name() == base.cache_name() == "transformer-learned"
    assert base.display_name() == "transformer-learned"
    assert uniform.display_name() == "transformer-learned, uniform attention"


# ------------------------------------------------- the stored sweep at the papers' scale
def test_the_full_sweep_has_every_condition_at_the_papers_scale():
    rows = ch.load_full_sweep()
    assert tuple(rows) == ch.FULL_CONDITIONS or set(rows) == set(ch.FULL_CONDITIONS)
    for name in ch.FULL_CONDITIONS:
        row, cfg = rows[name], ch.full_sweep_config(name)
        assert (cfg.length, cfg.d_model, cfg.batch_size, cfg.steps) == (40, 128, 128, 300)
        assert row["seeds"] == list(ch.FULL_SEEDS)
        acc = np.array(row["token_acc"])
        assert acc.shape == (10, 31) and row["eval_steps"][-1] == 300
        np.testing.assert_allclose(acc[:, -1], row["final_token_acc"], atol=1e-4)


def test_a_full_sweep_row_that_differs_is_refused(tmp_path, monkeypatch):
    from attn_core import stored
    rows = json.loads(ch.FULL_SWEEP_FILE.read_text())
    bad = tmp_path / "full.json"
    for change, match in [
            (lambda r: r["qk-self"]["config"].update(length=20),
             r"row 'qk-self' was computed with another configuration than "
             r"full_sweep_config\('qk-self'\)"),
            (lambda r: r.pop("uniform, control"),
             r"has no row 'uniform, control': run ATTN_MODE=full python "
             r"benchmarks/full_ch6/run\.py"),
            (lambda r: r["learned"].update(attn_acc=r["learned"]["attn_acc"][:3]),
             r"row 'learned''s 'attn_acc' has shape \(3, 31\) \(needs \(10, 31\)")]:
        copy = json.loads(json.dumps(rows))
        change(copy)
        bad.write_text(json.dumps(copy))
        with pytest.raises(ValueError, match=match):
            ch.load_full_sweep(bad)
    with pytest.raises(ValueError, match=r"ch6_full_sweep\.json.* is missing|is missing"):
        ch.load_full_sweep(tmp_path / "nothing.json")
    # the package's own file is checked against the manifest before any row is read
    real = stored._manifest()
    name = stored._relative(ch.FULL_SWEEP_FILE)
    assert name in real
    monkeypatch.setattr(stored, "_manifest", lambda: {**real, name: "0" * 64})
    with pytest.raises(stored.StoredMismatch, match=rf"^{re.escape(name)} was changed"):
        ch.load_full_sweep()


def test_full_sweep_config_names_a_condition_that_did_not_run_at_full_size():
    with pytest.raises(ValueError, match=r"^name must be one of .*'uniform, control'.*; "
                                         r"got '1 head'"):
        ch.full_sweep_config("1 head")
