"""attn_core.stored: stored runs load only for their own configuration and only whole (the
manifest, the members and keys their configuration trains), their first members are re-run
live and must stay within the measured envelope (bitwise on a platform that reproduced them
bitwise), a mismatch raises in strict mode and is explained in a reader's session, and every
run the chapters load this way is stored with its envelope."""

import json
from dataclasses import replace

import numpy as np
import pytest

from attn_core import stored
from attn_core.cache import read_entry, save_history
from attn_core.chapters import ch4_copy, ch5_multihead
from attn_core.chapters import ch6_transformer as ch6
from attn_core.chapters.ch4_copy import CopyConfig
from attn_core.config import env_stored

TINY = CopyConfig(length=5, embed=8, hidden=8, steps=12, eval_every=4, eval_batch_size=8,
                  batch_size=4, seeds=(0, 1, 2))
TOKENS = 8 * 6          # eval batch x (5 words + the end token)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(stored, "STORE", tmp_path / "stored")
    monkeypatch.setenv("ATTN_MODE", "fast")
    monkeypatch.setenv("ATTN_STORED", "strict")
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    return tmp_path / "stored"


def _record(path, live):
    h, _ = read_entry(path)
    return {k: v[:live] for g in ("metrics", "probes") for k, v in getattr(h, g).items()}, h


def _store(config=TINY, live=1, runs=(), bitwise=True):
    """Store ``config`` and an envelope measured from ``runs`` (name -> History of the live
    members); with ``bitwise``, this platform is listed as reproducing it bitwise."""
    path = stored.store(config, progress=False)
    record, h = _record(path, live)
    now = [{"run": name, "platform": "elsewhere", "jitter": 1,
            "now": {**r.metrics, **r.probes}} for name, r in runs]
    if bitwise:
        same = config.first_members(live).train(False)
        now.append({"run": "native", "platform": stored.platform_key(), "jitter": None,
                    "now": {**same.metrics, **same.probes}})
    spec = stored.build_envelope(path.name, record, h.eval_steps, live, TOKENS, now)
    stored.write_envelopes({path.name: spec})
    return path


def _rewrite(path, manifest=True, **changes):
    """Rewrite entry ``path`` with some of its arrays changed (``changes``: group/key ->
    fn(array) -> array), keeping its meta; with ``manifest``, as if the script had stored it."""
    h, info = read_entry(path)
    for name, fn in changes.items():
        group, key = name.split("__")
        getattr(h, group)[key] = fn(getattr(h, group)[key].copy())
    save_history(h, path, meta=info["meta"])
    if manifest:
        stored.write_manifest()


def _spread_by(by, member=0, index=1, key="loss"):
    def fn(a):
        a[member, index] += by
        return a
    return {f"metrics__{key}": fn}


def test_a_stored_run_loads_whole_and_its_live_members_match_bitwise(store, reported):
    path = _store(live=2)
    assert path.parent == store and path.exists()
    h = stored.stored_run(TINY, live=2)
    out = reported()
    assert "[stored]" in out and "members 0..1 of 3 retrained, match bitwise" in out
    assert h.stored and h.confirmed and h.n_members == 3 and h.live.n_members == 2
    fresh = TINY.train(progress=False)       # what the stored entry must hold
    for k, v in fresh.metrics.items():
        np.testing.assert_array_equal(h.metrics[k], v)


def test_the_entry_is_keyed_by_the_whole_configuration(store):
    _store()
    assert stored.stored_path(TINY) != stored.stored_path(replace(TINY, steps=16))
    with pytest.raises(ValueError, match=r"no stored result.*scripts/store_results\.py"):
        stored.stored_run(replace(TINY, steps=16))


# ------------------------------------------------------------------ whole or refused (item 7)
def test_a_changed_entry_is_refused_by_the_manifest(store):
    """Members 1-2 set to 1.0: only member 0 is re-trained, so only the manifest sees it."""
    path = _store()
    _rewrite(path, manifest=False, metrics__token_acc=lambda a: np.r_[a[:1], a[1:] * 0 + 1])
    with pytest.raises(stored.StoredMismatch,
                       match=r"stored_results/copy-\w+\.npz was changed after it was stored "
                             r"\(its sha256 is not the manifest's\): refused.*store_results"):
        stored.stored_run(TINY)


def test_an_unknown_or_missing_manifest_is_refused(store):
    path = _store()
    (store / stored.MANIFEST).unlink()
    with pytest.raises(stored.StoredMismatch, match="have no manifest"):
        stored.stored_run(TINY)
    stored.write_manifest()
    data = json.loads((store / stored.MANIFEST).read_text())
    del data["sha256"][f"stored_results/{path.name}"]
    (store / stored.MANIFEST).write_text(json.dumps(data))
    with pytest.raises(stored.StoredMismatch, match="is not in the stored results' manifest"):
        stored.stored_run(TINY)


def test_a_partial_entry_is_refused_even_with_a_matching_manifest(store):
    """Entries whose members or keys are not what the configuration trains: refused by
    their shape, whatever the manifest says."""
    path = _store()
    h, info = read_entry(path)
    one = replace(h, seeds=h.seeds[:1], data_seeds=h.data_seeds[:1],
                  train_loss=h.train_loss[:1], metrics={k: v[:1] for k, v in h.metrics.items()},
                  probes={k: v[:1] for k, v in h.probes.items()})
    save_history(one, path, meta=info["meta"])
    stored.write_manifest()
    with pytest.raises(stored.StoredMismatch,
                       match=r"holds 1 members; its configuration trains 3: refused"):
        stored.stored_run(TINY)
    save_history(replace(h, metrics={}), path, meta=info["meta"])
    stored.write_manifest()
    with pytest.raises(stored.StoredMismatch, match="holds no metrics: refused"):
        stored.stored_run(TINY)
    save_history(replace(h, metrics={"loss": h.metrics["loss"]}), path, meta=info["meta"])
    stored.write_manifest()
    with pytest.raises(stored.StoredMismatch, match=r"records \['attn_map', 'beta_align_acc', "
                                                    r"'loss'\]; the members trained now record"):
        stored.stored_run(TINY)


def test_chapter6s_sweep_is_refused_when_changed_or_incomplete(tmp_path):
    rows = json.loads(ch6.SWEEP_FILE.read_text())
    bad = tmp_path / "sweep.json"
    del rows["learned"]["token_acc"]
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"row 'learned' has no numeric 'token_acc'"):
        ch6.load_sweep(bad)
    rows = json.loads(ch6.SWEEP_FILE.read_text())
    rows["learned"]["attn_acc"] = rows["learned"]["attn_acc"][:3]
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"row 'learned''s 'attn_acc' has shape \(3, 16\)"):
        ch6.load_sweep(bad)


def test_the_packaged_sweep_must_match_the_manifest(store, monkeypatch):
    rows_dir = store / "rows"             # the manifest covers every JSON file of stored.ROWS
    rows_dir.mkdir(parents=True)
    copy = rows_dir / ch6.SWEEP_FILE.name
    copy.write_text(ch6.SWEEP_FILE.read_text())
    monkeypatch.setattr(stored, "ROWS", rows_dir)
    monkeypatch.setattr(ch6.SWEEP_STORED, "file", copy)
    stored.write_manifest()
    assert stored._relative(copy) in json.loads((store / stored.MANIFEST).read_text())["sha256"]
    assert ch6.load_sweep()["small positions"]["final_token_acc"] != [1.0] * 10
    rows = json.loads(copy.read_text())
    rows["small positions"]["final_token_acc"] = [1.0] * 10         # rewritten accuracies
    copy.write_text(json.dumps(rows))
    with pytest.raises(stored.StoredMismatch, match="ch6_sweep.json was changed after it "
                                                    "was stored"):
        ch6.load_sweep()


# -------------------------------------------------------------------- the measured envelope
def test_within_the_envelope_passes_beyond_it_fails(store, reported):
    """Off the bitwise platform a live member passes within FACTOR x its envelope: a record
    moved by 2 envelopes passes, by 4 it does not."""
    noisy = replace(TINY, lr=TINY.lr * 1.001).first_members(1).train(False)
    path = _store(runs=[("a neighbour", noisy)], bitwise=False)
    spec = stored.load_envelope(path.name)
    env = spec["keys"]["loss"]["envelope"]
    i = int(np.argmax(env))
    assert env[i] > stored.FLOOR_VALUE
    _rewrite(path, **_spread_by(2 * env[i], index=i))
    r = stored.stored_run(TINY)
    assert r.confirmed
    assert "largest difference / allowed = 0.67 ('loss' at step" in r.check.describe()
    assert "member 0 of 3 retrained, match within the spread" in reported()
    _rewrite(path, **_spread_by(2 * env[i], index=i))          # 4 envelopes in all
    with pytest.raises(stored.StoredMismatch, match=r"largest difference / allowed = 1\.3 "
                                                    r"\('loss' at step \d+"):
        stored.stored_run(TINY)


def test_on_a_bitwise_platform_any_difference_fails(store):
    path = _store()                                   # this platform reproduced it bitwise
    _rewrite(path, **_spread_by(1e-6))
    with pytest.raises(stored.StoredMismatch, match=r"bitwise .*'loss' differs at step 4"):
        stored.stored_run(TINY)


def test_accuracies_are_compared_in_tokens(store, capsys):
    """An envelope of 0 tokens allows FACTOR x FLOOR_TOKENS = 3 tokens; 4 fail."""
    path = _store(bitwise=False)
    _rewrite(path, **_spread_by(3 / TOKENS, key="token_acc"))
    r = stored.stored_run(TINY)
    assert "('token_acc' at step 4: 3 tokens of 3 tokens allowed" in r.check.describe()
    _rewrite(path, **_spread_by(1 / TOKENS, key="token_acc"))
    with pytest.raises(stored.StoredMismatch, match="'token_acc' at step 4: 4 tokens of 3 "
                                                    "tokens allowed"):
        stored.stored_run(TINY)


def test_build_envelope_refuses_an_accuracy_that_is_not_a_token_count():
    rec = {"token_acc": np.array([[0.5, 0.123456]])}
    with pytest.raises(ValueError, match="'token_acc' is not a count of 48 held-out tokens"):
        stored.build_envelope("x", rec, [0, 4], 1, 48, [])


def test_a_readers_session_goes_on_unconfirmed_and_says_what_to_do(store, monkeypatch,
                                                                    capsys):
    path = _store(bitwise=False)
    _rewrite(path, **_spread_by(0.5))
    monkeypatch.setenv("ATTN_STORED", "check")
    h = stored.stored_run(TINY)
    out = capsys.readouterr().out
    assert h.stored and not h.confirmed and h.n_members == 3
    assert "NOT CONFIRMED ON THIS MACHINE" in out and "ATTN_STORED=off" in out
    assert "to train every seed now (~" in out and "s here)" in out


def test_attn_stored_off_trains_every_member_now(store, monkeypatch, reported):
    monkeypatch.setenv("ATTN_STORED", "off")
    h = stored.stored_run(TINY)                     # nothing stored: trained (and cached)
    assert not getattr(h, "stored", False) and h.n_members == 3
    assert "[cache]" in reported()


@pytest.mark.parametrize("raw", ["on", "1", "strict "])
def test_env_stored_names_itself(monkeypatch, raw):
    monkeypatch.setenv("ATTN_STORED", raw)
    if raw.strip() == "strict":
        assert env_stored() == "strict"
        return
    with pytest.raises(ValueError, match="ATTN_STORED must be one of check, strict, off"):
        env_stored()


def test_an_entry_stored_for_another_config_is_refused(store):
    path = _store()
    h, info = read_entry(path)
    meta = json.loads(json.dumps(info["meta"]))
    meta["stored_config"]["steps"] = 99
    save_history(h, path, meta=meta)
    stored.write_manifest()
    with pytest.raises(ValueError, match="stored for another configuration"):
        stored.stored_run(TINY)


def test_full_mode_and_smoke_runs_train_instead(store, monkeypatch, reported):
    monkeypatch.setenv("ATTN_MODE", "full")
    h = stored.stored_run(TINY)                     # nothing stored: trained (and cached)
    assert not getattr(h, "stored", False) and h.n_members == 3
    assert "[cache]" in reported()
    with pytest.raises(ValueError, match="ATTN_MODE=fast"):
        stored.store(TINY, progress=False)


# ------------------------------------------------------------------------- prefix checks
def test_a_prefix_check_trains_only_its_steps_and_checks_their_evaluations(store, reported):
    _store()
    h = stored.stored_run(TINY, upto=8)
    out = reported()
    assert ("member 0 of 3 retrained for its first 8 of 12 steps, match bitwise"
            in " ".join(out.split()))
    assert h.confirmed and h.n_members == 3 and h.eval_steps.tolist() == [0, 4, 8, 12]
    assert h.live.eval_steps.tolist() == [0, 4, 8] and h.live.n_members == 1
    assert "[cache]" not in out                     # a prefix is trained now, not cached
    whole = stored.stored_run(TINY, upto=12)        # the whole run: as upto=None
    assert whole.live.eval_steps.tolist() == [0, 4, 8, 12]


@pytest.mark.parametrize("index, caught", [(1, True), (2, True), (3, False)])
def test_a_prefix_check_sees_a_change_within_its_steps_only(store, index, caught):
    """A record changed at step 4 or 8 fails an 8-step prefix check; one changed only at
    step 12 passes it (what a prefix cannot see) and fails the whole-run check."""
    path = _store()
    _rewrite(path, **_spread_by(1e-6, index=index))
    if caught:
        with pytest.raises(stored.StoredMismatch, match=f"differs at step {4 * index}"):
            stored.stored_run(TINY, upto=8)
    else:
        assert stored.stored_run(TINY, upto=8).confirmed
        with pytest.raises(stored.StoredMismatch, match="differs at step 12"):
            stored.stored_run(TINY)


def test_every_chapters_prefix_is_the_platform_matrix_s():
    """The chapters write their prefix out (``upto=40``): each is PREFIX_STEPS, the prefix
    the platform matrix measured every changed model failing on (chapters 4-6)."""
    import re
    from pathlib import Path
    found = {}
    for nb in sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("0*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        for value in re.findall(r"\bupto=(\d+)", code):      # the numbers written out
            found.setdefault(nb.stem[:2], set()).add(value)
    assert {"04", "05", "06"} <= set(found), found
    assert all(v == {str(stored.PREFIX_STEPS)} for v in found.values()), found


@pytest.mark.parametrize("upto, err, msg", [
    (0, ValueError, "upto must be an int >= 1; got 0"), (2.0, TypeError, "upto must be an int"),
    (True, TypeError, "upto must be an int"),
    (3, ValueError, r"upto must reach the first evaluation after step 0 \(step 4\)")])
def test_bad_prefixes_are_refused_naming_upto(store, upto, err, msg):
    _store()
    with pytest.raises(err, match=msg):
        stored.stored_run(TINY, upto=upto)


@pytest.mark.parametrize("live, err", [(0, ValueError), (True, TypeError), (1.0, TypeError),
                                       (4, ValueError)])
def test_bad_live_counts_are_refused(store, live, err):
    _store()
    with pytest.raises(err, match="live must"):
        stored.stored_run(TINY, live=live)


def test_bad_arguments_name_themselves(store):
    with pytest.raises(TypeError, match="config must be an experiment config"):
        stored.stored_path({"steps": 3})
    with pytest.raises(TypeError, match="upto must be an int"):
        with stored.step_cap(1.5):
            pass


def test_first_members_keep_each_members_seeds():
    assert TINY.first_members(2).seeds == (0, 1)
    run = ch5_multihead.stored_configs()[0]
    first = run.first_members(3)
    assert first.head_seeds == run.head_seeds[:3] and first.data_seeds == run.data_seeds[:3]
    with pytest.raises(ValueError, match=r"n must be an int in \[1, 3\]; got 4"):
        TINY.first_members(4)


def test_every_run_the_chapters_load_stored_is_stored_whole_with_its_envelope():
    from attn_core.chapters import registry

    configs = registry.stored_configs()
    with_stored = [c for c in registry.CHAPTERS if c.has_stored_runs]
    assert all(c.load().stored_configs() for c in with_stored)
    assert len(registry.live_checks()) == len(configs) >= len(with_stored)
    for cfg in configs:
        path = stored.verify_file(stored.stored_path(cfg))
        h, info = read_entry(path)
        assert info["meta"]["stored_config"] == json.loads(json.dumps(cfg.cache_config()))
        stored._check_whole(h, cfg, path.name)
    for check in registry.live_checks():
        spec = stored.load_envelope(check.name)
        record, steps = check.record()
        assert spec["live"] == check.live and spec["eval_steps"] == list(steps)
        assert sorted(spec["keys"]) == sorted(record)
    stored.verify_file(ch6.SWEEP_FILE)


def test_chapter5_stored_configs_name_a_wrong_config():
    with pytest.raises(TypeError, match="cfg must be a RescueConfig"):
        ch5_multihead.combination_configs(TINY, ["good"] * 16)
    with pytest.raises(TypeError, match="cfg must be a RescueConfig"):
        ch5_multihead.screen_configs(TINY)
    with pytest.raises(ValueError, match="labels must have one entry per candidate"):
        ch5_multihead.combination_configs(ch5_multihead.RESCUE.fast, ["good"] * 3)


class _TwiceTheRate(CopyConfig):
    """A reader's variant (#35): the same fields as TINY, another learning rate in code."""

    def train_kwargs(self) -> dict:
        return {**super().train_kwargs(), "lr": 2 * self.lr}


def test_a_readers_variant_trains_instead_of_loading_the_stored_base(store, reported):
    _store()
    variant = _TwiceTheRate(**{f: getattr(TINY, f) for f in TINY.__dataclass_fields__})
    assert stored.stored_path(variant) == stored.stored_path(TINY)   # the same fields
    h = stored.stored_run(variant)
    assert not getattr(h, "stored", False) and h.n_members == 3
    assert "[stored]" not in reported()
    base = stored.stored_run(TINY)
    assert base.stored
    assert not np.array_equal(h.metrics["loss"], base.metrics["loss"])
    np.testing.assert_array_equal(h.metrics["loss"], variant.train(False).metrics["loss"])
