"""attn_core.stored: stored runs load only for their own configuration, their first members are
re-run live and must match, a changed computation is caught, and every run the chapters load
this way is stored (scripts/store_results.py)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from attn_core import stored
from attn_core.cache import _read_entry, save_history
from attn_core.chapters import ch4_copy, ch5_multihead
from attn_core.chapters.ch4_copy import CopyConfig

TINY = CopyConfig(length=5, embed=8, hidden=8, steps=12, eval_every=4, eval_batch_size=8,
                  batch_size=4, seeds=(0, 1, 2))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(stored, "STORE", tmp_path / "stored")
    monkeypatch.setenv("ATTN_MODE", "fast")
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    return tmp_path / "stored"


def test_a_stored_run_loads_and_its_live_members_match(store, capsys):
    path = stored.store(TINY, progress=False)
    assert path.parent == store and path.exists()
    h = stored.stored_run(TINY, live=2)
    out = capsys.readouterr().out
    assert "[stored]" in out and "members 0..1 re-run now match their stored records bitwise" \
        in out
    assert h.stored and h.n_members == 3 and h.live.n_members == 2
    fresh = TINY.train(progress=False)       # what the stored entry must hold
    for k, v in fresh.metrics.items():
        np.testing.assert_array_equal(h.metrics[k], v)


def test_the_entry_is_keyed_by_the_whole_configuration(store):
    stored.store(TINY, progress=False)
    assert stored.stored_path(TINY) != stored.stored_path(replace(TINY, steps=16))
    with pytest.raises(ValueError, match=r"no stored result.*scripts/store_results\.py"):
        stored.stored_run(replace(TINY, steps=16))


def _perturb(path, member, index, by, key="token_acc"):
    h, info = _read_entry(path)
    h.metrics[key] = h.metrics[key].copy()
    h.metrics[key][member, index] += by
    save_history(h, path, meta=info["meta"])


def test_a_changed_computation_is_caught_early(store):
    path = stored.store(TINY, progress=False)
    _perturb(path, 1, 1, 0.002)                     # member 1 at step 4: not what training gives
    with pytest.raises(stored.StoredMismatch,
                       match=r"'token_acc' differs at step 4 by 0\.002 \(> atol=0\.001 over the "
                             r"first 100 steps.*store_results"):
        stored.stored_run(TINY, live=2)
    stored.stored_run(TINY, live=1)                 # member 0 is still right


def test_a_different_ending_is_caught_late_drift_is_allowed(store, capsys):
    path = stored.store(TINY, progress=False)
    _perturb(path, 0, -1, 0.05)                     # the last step, within drift: allowed
    stored.stored_run(TINY, live=1, until=4)
    assert "to 0.05 at the last (drift 0.1)" in capsys.readouterr().out
    _perturb(path, 0, -1, 0.1)                      # 0.15 in all: the run ends differently
    with pytest.raises(stored.StoredMismatch,
                       match=r"'token_acc' differs at the last step \(12\) by 0\.15 "
                             r"\(> drift=0\.1\)"):
        stored.stored_run(TINY, live=1, until=4)


def test_a_slightly_different_training_is_caught(store):
    """A learning rate 10 % higher, entered as if it were the stored one: the strict part
    (atol 1e-3) sees it within TINY's 12 steps (1 % is 2e-4 there; on chapter 4's model
    0.1 % is 0.005 by step 100)."""
    path = stored.store(replace(TINY, lr=TINY.lr * 1.1), progress=False)
    path.rename(stored.stored_path(TINY))
    h, info = _read_entry(stored.stored_path(TINY))
    save_history(h, stored.stored_path(TINY),
                 meta={"stored_config": stored.config_record(TINY)})
    with pytest.raises(stored.StoredMismatch, match=r"differs at step \d+ by"):
        stored.stored_run(TINY, live=1)


def test_compare_members_names_a_missing_key_and_bad_tolerances():
    a = {"loss": np.zeros((1, 3))}
    with pytest.raises(stored.StoredMismatch, match="recorded no 'loss' of shape \\(1, 3\\)"):
        stored.compare_members(a, {}, [0, 1, 2])
    with pytest.raises(ValueError, match="drift must be"):
        stored.compare_members(a, a, [0, 1, 2], drift=-0.1)
    with pytest.raises(TypeError, match="until must be an int"):
        stored.compare_members(a, a, [0, 1, 2], until=1.5)
    assert stored.compare_members(a, a, [0, 1, 2]) == (0.0, 0.0)


def test_an_entry_stored_for_another_config_is_refused(store):
    path = stored.store(TINY, progress=False)
    h, info = _read_entry(path)
    meta = json.loads(json.dumps(info["meta"]))
    meta["stored_config"]["steps"] = 99
    save_history(h, path, meta=meta)
    with pytest.raises(ValueError, match="stored for another configuration"):
        stored.stored_run(TINY)


def test_full_mode_and_smoke_runs_train_instead(store, monkeypatch, capsys):
    monkeypatch.setenv("ATTN_MODE", "full")
    h = stored.stored_run(TINY)                     # nothing stored: trained (and cached)
    assert not getattr(h, "stored", False) and h.n_members == 3
    assert "[cache]" in capsys.readouterr().out
    with pytest.raises(ValueError, match="ATTN_MODE=fast"):
        stored.store(TINY, progress=False)


@pytest.mark.parametrize("live, err", [(0, ValueError), (True, TypeError), (1.0, TypeError),
                                       (4, ValueError)])
def test_bad_live_counts_are_refused(store, live, err):
    stored.store(TINY, progress=False)
    with pytest.raises(err, match="live must"):
        stored.stored_run(TINY, live=live)


def test_bad_arguments_name_themselves(store):
    with pytest.raises(TypeError, match="config must be an experiment config"):
        stored.stored_path({"steps": 3})
    with pytest.raises(ValueError, match="atol"):
        stored.stored_run(TINY, atol=-1.0)


def test_first_members_keep_each_members_seeds():
    assert TINY.first_members(2).seeds == (0, 1)
    run = ch5_multihead.stored_configs()[0]
    first = run.first_members(3)
    assert first.head_seeds == run.head_seeds[:3] and first.data_seeds == run.data_seeds[:3]
    with pytest.raises(ValueError, match=r"n must be an int in \[1, 3\]; got 4"):
        TINY.first_members(4)


def test_every_run_the_chapters_load_stored_is_stored():
    configs = ch4_copy.stored_configs() + ch5_multihead.stored_configs()
    for cfg in configs:
        path = stored.stored_path(cfg)
        assert path.exists(), f"{path.name} missing: run python scripts/store_results.py"
        h, info = _read_entry(path)
        assert info["meta"]["stored_config"] == json.loads(json.dumps(cfg.cache_config()))
        assert h.n_members == len(getattr(cfg, "seeds", getattr(cfg, "head_seeds", ())))


def test_chapter5_stored_configs_name_a_wrong_config():
    with pytest.raises(TypeError, match="cfg must be a RescueConfig"):
        ch5_multihead.combination_configs(TINY, ["good"] * 16)
    with pytest.raises(TypeError, match="cfg must be a RescueConfig"):
        ch5_multihead.screen_configs(TINY)
    with pytest.raises(ValueError, match="labels must have one entry per candidate"):
        ch5_multihead.combination_configs(ch5_multihead.RESCUE.fast, ["good"] * 3)
