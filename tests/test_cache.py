"""The results cache: round trip without pickle, keys follow the config, atomic writes, off switch."""

import functools
import json

import numpy as np
import pytest

from attn_core import cache
from attn_core.data import KeywordTask
from attn_core.metrics import keyword_probe
from attn_core.models import AttentionClassifier
from attn_core.training import train


def _small_run():
    fn = functools.partial(AttentionClassifier, vocab=10, embed=4, hidden=4)
    return train(fn, KeywordTask(6, 10), [0, 1], steps=4, eval_every=2, batch_size=4,
                 probes={"": keyword_probe}, progress=False, optimizer="sgd")


def test_roundtrip(tmp_path):
    h = _small_run()
    cache.save_history(h, tmp_path / "run")
    back = cache.load_history(tmp_path / "run")
    np.testing.assert_array_equal(back.train_loss, h.train_loss)
    np.testing.assert_array_equal(back.eval_steps, h.eval_steps)
    assert set(back.metrics) == set(h.metrics) and set(back.probes) == set(h.probes)
    for k in h.probes:
        np.testing.assert_array_equal(back.probes[k], h.probes[k])
    assert back.model is None and back.cached
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "run.npz"]  # no temp files


def test_cached_history_computes_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return _small_run()

    a = cache.cached_history("demo", {"steps": 4}, compute)
    b = cache.cached_history("demo", {"steps": 4}, compute)
    c = cache.cached_history("demo", {"steps": 5}, compute)   # another config: computed again
    assert len(calls) == 2
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    assert not a.cached and b.cached and not c.cached
    out = capsys.readouterr().out
    assert "computed now" in out and "loaded the result computed at" in out
    meta = json.loads(next(tmp_path.glob("demo-*.json")).read_text())
    assert meta["experiment_config"] in ({"steps": 4}, {"steps": 5})


def test_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_CACHE", "off")
    assert cache.cache_dir() is None
    calls = []
    for _ in range(2):
        cache.cached_history("demo", {}, lambda: calls.append(1) or _small_run(), verbose=False)
    assert len(calls) == 2


def test_key_depends_on_config_and_name():
    k = cache.cache_key("a", {"x": 1})
    assert k == cache.cache_key("a", {"x": 1})
    assert k != cache.cache_key("a", {"x": 2}) and k != cache.cache_key("b", {"x": 1})
    with pytest.raises(ValueError, match="name"):
        cache.cache_key("", {})
    with pytest.raises(TypeError, match="config"):
        cache.cache_key("a", [1])
