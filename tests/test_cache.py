"""The results cache: exact round trip without pickle, one atomic file per entry, broken or
rewritten entries detected and recomputed, computed results never lost, names confined to the
cache folder, only its own temporary files ever deleted, keys that follow the config, the mode,
the whole package's source and the code of a reader's variant of a config."""

import copy
import dataclasses
import functools
import importlib.util
import json
import os
import re
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from attn_core import cache
from attn_core.chapters import ch1_gated as ch1
from attn_core.models import AttentionClassifier
from attn_core.training import History

STEPS, EVAL_EVERY = 5, 2
SCHEDULE = [0, 2, 4, 5]   # range(0, 5, 2) and the last step


def _history(seconds=1.25) -> History:
    """A small History of the schema in training.py, with distinct values in every field."""
    rng = np.random.default_rng(0)
    S, E = 2, len(SCHEDULE)
    return History(
        seeds=np.array([3, 8]), data_seeds=np.array([5, 7]),
        train_loss=rng.random((S, STEPS), dtype=np.float32),
        eval_steps=np.array(SCHEDULE),
        metrics={"loss": rng.random((S, E), dtype=np.float32),
                 "accuracy": rng.random((S, E)).astype(np.float64)},
        probes={"attention": rng.random((S, E, 6), dtype=np.float32),
                "test.hits": rng.integers(0, 9, (S, E, 2, 3)).astype(np.int32),
                "correct": rng.random((S, E)) > 0.5},
        model=None, execution="looped", seconds=seconds,
        config={"steps": STEPS, "batch_size": 4, "optimizer": "sgd", "lr": 0.1,
                "eval_every": EVAL_EVERY, "device": "cpu"})


def _assert_same_history(a: History, b: History) -> None:
    """Every field equal, arrays with the same dtype and shape (model and cache flags aside)."""
    for f in ("seeds", "data_seeds", "train_loss", "eval_steps"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape, f
        np.testing.assert_array_equal(x, y, err_msg=f)
    for group in ("metrics", "probes"):
        x, y = getattr(a, group), getattr(b, group)
        assert sorted(x) == sorted(y), group
        for k in x:
            assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape, (group, k)
            np.testing.assert_array_equal(x[k], y[k], err_msg=f"{group}[{k}]")
    assert (a.execution, a.seconds, a.config) == (b.execution, b.seconds, b.config)


def _small_run():
    """A real (tiny) training run, to check the engine's Histories fit the cache's schema."""
    from attn_core.data import KeywordTask
    from attn_core.models import AttentionClassifier
    from attn_core.training import train

    fn = functools.partial(AttentionClassifier, vocab=10, embed=4, hidden=4)
    return train(fn, KeywordTask(6, 10), [0, 1], data_seeds=[5, 7], steps=4, eval_every=3,
                 batch_size=4, progress=False, optimizer="sgd")


class Counter:
    """A compute function that counts its calls."""

    def __init__(self, make=_history):
        self.calls, self.make = 0, make

    def __call__(self):
        self.calls += 1
        return self.make()


def _entries(folder):
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------------------ round trip
def test_roundtrip_every_field(tmp_path):
    h = _history()
    cache.save_history(h, tmp_path / "run")
    back = cache.load_history(tmp_path / "run")
    _assert_same_history(back, h)
    assert back.model is None and back.cached and back.saved_at
    assert cache.load_history(tmp_path / "run.npz").config == h.config  # either spelling
    assert _entries(tmp_path) == ["run.npz"]   # one file: no sidecar, no temp files


def test_roundtrip_check_catches_swaps_and_zeros():
    """The comparison above is strict enough to see a zeroed metric or swapped seeds."""
    h = _history()
    zeroed = copy.deepcopy(h)
    zeroed.metrics["loss"] = np.zeros_like(h.metrics["loss"])
    swapped = copy.deepcopy(h)
    swapped.seeds, swapped.data_seeds = h.data_seeds, h.seeds
    recast = copy.deepcopy(h)
    recast.probes["attention"] = h.probes["attention"].astype(np.float64)
    for bad, field in ((zeroed, r"metrics\[loss\]"), (swapped, "seeds"),
                       (recast, "'probes', 'attention'")):
        with pytest.raises(AssertionError, match=field):
            _assert_same_history(bad, h)


def test_real_training_run_roundtrips(tmp_path):
    h = _small_run()
    cache.save_history(h, tmp_path / "real")
    _assert_same_history(cache.load_history(tmp_path / "real"), h)


def test_names_with_dots_keep_their_name(tmp_path):
    cache.save_history(_history(), tmp_path / "sen-m1.5")
    assert _entries(tmp_path) == ["sen-m1.5.npz"]
    _assert_same_history(cache.load_history(tmp_path / "sen-m1.5"), _history())


# ------------------------------------------------------------------------ one atomic file
def test_one_file_holds_arrays_and_metadata(tmp_path):
    h = _history()
    cache.save_history(h, tmp_path / "run", meta={"name": "run", "note": "x"})
    with np.load(tmp_path / "run.npz", allow_pickle=False) as z:
        meta = z["__meta__"]
        assert meta.shape == () and meta.dtype.kind == "U"
        info = json.loads(str(meta))
        names = set(z.files) - {"__meta__"}
    assert names == {"seeds", "data_seeds", "train_loss", "eval_steps", "metrics/loss",
                     "metrics/accuracy", "probes/attention", "probes/test.hits", "probes/correct"}
    assert info["arrays"]["probes/attention"] == {"shape": [2, 4, 6], "dtype": "<f4"}
    assert info["config"] == h.config and info["meta"]["note"] == "x"
    cache.save_history(h, tmp_path / "run")          # overwriting leaves one file
    assert _entries(tmp_path) == ["run.npz"]


def test_no_object_array_is_ever_written(tmp_path):
    """The one write path (entries and the parts of interrupted runs) refuses what np.savez
    would pickle, and leaves nothing behind."""
    with pytest.raises(TypeError, match=r"arrays \['b'\] hold Python objects"):
        cache._write_atomic(tmp_path / "x.npz", {"a": np.zeros(2),
                                                 "b": np.array([{}], dtype=object)})
    assert list(tmp_path.iterdir()) == []


def test_object_arrays_are_refused(tmp_path):
    h = _history()
    h.probes["words"] = np.full((2, 4), "a", dtype=object)
    with pytest.raises(TypeError, match=r"'probes/words' has dtype object"):
        cache.save_history(h, tmp_path / "run")
    assert _entries(tmp_path) == []


def test_save_refuses_a_history_breaking_its_schema(tmp_path):
    h = _history()
    h.metrics["loss"] = h.metrics["loss"][:, :3]
    with pytest.raises(ValueError, match=r"metric 'loss' must have shape \(S, E\) = \(2, 4\)"):
        cache.save_history(h, tmp_path / "run")
    assert _entries(tmp_path) == []


# --------------------------------------------------------------------------- broken entries
def _rewrite(path, change):
    """Load an entry's arrays and metadata, let ``change(arrays, info)`` edit them, save again."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    info = json.loads(str(arrays.pop("__meta__")))
    change(arrays, info)
    with open(path, "wb") as f:
        np.savez(f, __meta__=np.array(json.dumps(info)), **arrays)


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _set(key, value, record=False):
    def change(arrays, info):
        arrays[key] = value(arrays[key])
        if record:   # keep the recorded schema in step, so only the consistency checks can tell
            info["arrays"][key] = {"shape": list(arrays[key].shape),
                                   "dtype": arrays[key].dtype.str}
    return change


def _object_array(arrays, info):
    arrays["probes/attention"] = np.array([[None] * 4] * 2, dtype=object)
    info["arrays"]["probes/attention"] = {"shape": [2, 4], "dtype": "|O"}


CORRUPTIONS = {
    "truncated": _truncate,
    "empty": lambda p: p.write_bytes(b""),
    "not an npz": lambda p: p.write_text("hello"),
    "bad metadata JSON": lambda p: _rewrite_meta(p, "{not json"),
    "metadata not an object": lambda p: _rewrite_meta(p, "[1, 2]"),
    "no metadata": lambda p: _rewrite_raw(p, lambda a: a.pop("__meta__")),
    "missing array": lambda p: _rewrite(p, lambda a, i: a.pop("metrics/loss")),
    "missing metadata key": lambda p: _rewrite(p, lambda a, i: i.pop("config")),
    "unrecorded array": lambda p: _rewrite(p, lambda a, i: a.update(extra=np.zeros(2))),
    "wrong shape": lambda p: _rewrite(p, _set("metrics/loss", lambda v: v[:, :2])),
    "wrong dtype": lambda p: _rewrite(p, _set("train_loss", lambda v: v.astype(np.float64))),
    "metric shape (recorded)": lambda p: _rewrite(p, _set("metrics/accuracy",
                                                          lambda v: v[:, :3], True)),
    "probe shape (recorded)": lambda p: _rewrite(p, _set("probes/attention",
                                                         lambda v: v[:1], True)),
    "seeds shape (recorded)": lambda p: _rewrite(p, _set("seeds", lambda v: v[:1], True)),
    "int seeds as float (recorded)": lambda p: _rewrite(p, _set("data_seeds",
                                                                lambda v: v * 1.0, True)),
    "train_loss steps != config steps": lambda p: _rewrite(
        p, lambda a, i: i["config"].update(steps=STEPS + 1)),
    "eval_steps off schedule (recorded)": lambda p: _rewrite(p, _set("eval_steps",
                                                                     lambda v: v + 1, True)),
    "object array": lambda p: _rewrite_raw(p, lambda a: _object_array_raw(a)),
    "numbers rewritten, digest kept": lambda p: _rewrite_numbers(p),
    "digest not a string": lambda p: _rewrite(p, lambda a, i: i.update(digest=5)),
}


def _rewrite_numbers(path):
    """Issue 35's entry: accuracy 1.0 and a NaN loss curve, written by the cache's own writer
    (a valid zip of the recorded names, shapes and dtypes) with the metadata it had, digest
    included."""
    with np.load(path, allow_pickle=False) as z:
        payload = {k: z[k] for k in z.files}
    payload["metrics/accuracy"] = np.ones_like(payload["metrics/accuracy"])
    payload["train_loss"] = np.full_like(payload["train_loss"], np.nan)
    cache._write_atomic(path, payload)


def _rewrite_meta(path, text):
    _rewrite_raw(path, lambda a: a.update(__meta__=np.array(text)))


def _rewrite_raw(path, change):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)   # allow_pickle is np.savez's default: object arrays get pickled


def _object_array_raw(arrays):
    info = json.loads(str(arrays["__meta__"]))
    _object_array(arrays, info)
    arrays["__meta__"] = np.array(json.dumps(info))


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_load_history_rejects_broken_entries(tmp_path, corruption):
    path = tmp_path / "run.npz"
    cache.save_history(_history(), path)
    CORRUPTIONS[corruption](path)
    with pytest.raises(ValueError,
                       match=re.escape(f"{path} is not a valid attn_core cache entry")):
        cache.load_history(path)


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_broken_entry_is_moved_aside_and_recomputed(tmp_path, monkeypatch, corruption):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    compute = Counter()
    cache.cached_history("demo", {"x": 1}, compute, verbose=False)
    (path,) = tmp_path.glob("demo-*.npz")
    CORRUPTIONS[corruption](path)
    broken = path.read_bytes()
    with pytest.warns(RuntimeWarning, match=re.escape(str(path))):
        h = cache.cached_history("demo", {"x": 1}, compute, verbose=False)
    assert compute.calls == 2 and not h.cached
    _assert_same_history(h, _history())
    (aside,) = tmp_path.glob(f"{path.name}.corrupt-*")    # moved aside, next to the entry
    assert aside.read_bytes() == broken
    _assert_same_history(cache.load_history(path), _history())   # saved again, and sound
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.cached_history("demo", {"x": 1}, compute, verbose=False).cached
    assert compute.calls == 2


def test_entry_saved_under_another_key_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    cache.cached_history("demo", {"x": 1}, Counter(), verbose=False)
    (a,) = tmp_path.glob("demo-*.npz")
    b = tmp_path / f"demo-{cache.cache_key('demo', {'x': 2})}.npz"
    a.rename(b)     # the arrays of x=1 under the file name of x=2
    compute = Counter()
    with pytest.warns(RuntimeWarning, match=re.escape(str(b))):
        assert not cache.cached_history("demo", {"x": 2}, compute, verbose=False).cached
    assert compute.calls == 1


# ------------------------------------------------------------------- results are never lost
def test_unwritable_cache_folder_warns_and_returns_the_result(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("I am a file")      # fails for root too, unlike a read-only folder
    monkeypatch.setenv("ATTN_CACHE", str(not_a_folder))
    compute = Counter()
    with pytest.warns(RuntimeWarning, match=re.escape(str(not_a_folder)) + ".*ATTN_CACHE=off"):
        h = cache.cached_history("demo", {}, compute, verbose=False)
    assert compute.calls == 1 and not h.cached
    _assert_same_history(h, _history())
    assert not_a_folder.read_text() == "I am a file"


def test_disk_error_on_save_warns_and_returns_the_result(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", disk_full)
    with pytest.warns(RuntimeWarning, match=re.escape(str(tmp_path)) + ".*ATTN_CACHE=off"):
        h = cache.cached_history("demo", {}, Counter(), verbose=False)
    _assert_same_history(h, _history())
    assert _entries(tmp_path) == []   # the temp file is gone too


def test_bad_attn_cache_fails_before_computing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compute = Counter()
    for value in ("None", " ", "null"):
        monkeypatch.setenv("ATTN_CACHE", value)
        with pytest.raises(ValueError, match="ATTN_CACHE must be 'off'"):
            cache.cached_history("demo", {}, compute, verbose=False)
    assert compute.calls == 0 and _entries(tmp_path) == []   # no stray folder named None


# ------------------------------------------------------------------------- the cache proper
def test_cached_history_computes_once(tmp_path, monkeypatch, reported):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    compute = Counter()
    a = cache.cached_history("demo", {"steps": 4}, compute)
    b = cache.cached_history("demo", {"steps": 4}, compute)
    c = cache.cached_history("demo", {"steps": 5}, compute)   # another config: computed again
    assert compute.calls == 2
    _assert_same_history(a, b)
    assert not a.cached and b.cached and not c.cached
    out = reported()
    assert "computed in" in out and "reused the result computed on" in out
    assert str(tmp_path) not in out   # no machine path in what the book prints
    entries = sorted(tmp_path.glob("demo-*"))
    assert len(entries) == 2 and all(p.suffix == ".npz" for p in entries)
    with np.load(entries[0], allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))["meta"]
    assert meta["name"] == "demo" and meta["experiment_config"] in ({"steps": 4}, {"steps": 5})


def test_cache_off(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTN_CACHE", "off")
    assert cache.cache_dir() is None
    compute = Counter()
    for _ in range(2):
        cache.cached_history("demo", {}, compute, verbose=False)
    assert compute.calls == 2 and _entries(tmp_path) == []


def _old(*paths):
    """Make files two hours old (a killed writer's leftovers are an hour old or more)."""
    old = time.time() - 2 * 3600
    for p in paths:
        os.utime(p, (old, old))


def test_only_the_caches_own_stale_temp_files_are_removed(tmp_path, monkeypatch):
    """Issue 35: the cache folder may be a reader's folder. Only the cache's own temporaries
    (``<name>-<key>.npz.<token>.tmp``, a part's in a ``.parts`` folder) an hour old go."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    key = cache.cache_key("other", {"x": 1})
    stale = tmp_path / f"other-{key}.npz.k3j_9x2a.tmp"            # a killed writer's
    fresh = tmp_path / f"other-{key}.npz.z3w4q8r1.tmp"            # a writer at work now
    parts = tmp_path / f"other-{key}.parts"
    parts.mkdir()
    stale_part = parts / "fit0-group1-0123456789abcdef.npz.ab12cd34.tmp"
    foreign = [tmp_path / "notes.tmp",                             # a reader's files
               tmp_path / "x.npz.tmp", tmp_path / f"other-{key}.npz.tmp",
               tmp_path / f"other-{key}.npz.k3j_9x2a.tmp.bak",
               tmp_path / f"other-{key[:-1]}.npz.k3j_9x2a.tmp",
               tmp_path / "my results.npz.k3j_9x2a.tmp", parts / "notes.tmp",
               parts / "fit0-group1-0123456789abcdef.npz.tmp"]
    for f in [stale, fresh, stale_part] + foreign:
        f.write_bytes(b"half")
    (tmp_path / f"other-{key}.npz.dir45678.tmp").mkdir()             # not a file: kept
    _old(stale, stale_part, tmp_path / f"other-{key}.npz.dir45678.tmp", *foreign)
    cache.cached_history("demo", {}, Counter(), verbose=False)
    assert not stale.exists() and not stale_part.exists()
    assert fresh.exists() and all(f.exists() for f in foreign)
    assert (tmp_path / f"other-{key}.npz.dir45678.tmp").is_dir()


def test_the_temp_file_pattern_is_what_the_cache_writes(tmp_path, monkeypatch):
    """The names the removal matches are the names the writes make (an entry's, a part's):
    a change of either (a new key length, training's part names) fails here, not silently."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    made = []
    mkstemp = tempfile.mkstemp

    def record(*args, **kwargs):
        fd, name = mkstemp(*args, **kwargs)
        made.append(Path(name))
        return fd, name

    monkeypatch.setattr(cache.tempfile, "mkstemp", record)
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 1$"):
        cache.cached_history("resume", {"n": 8}, _resumable_run(_Interrupt(at_seed=1)))
    cache.cached_history("demo.v2", {"x": 1}, Counter(), verbose=False)
    entries = [p for p in made if p.parent == tmp_path]
    parts = [p for p in made if p.parent.suffix == ".parts"]
    assert len(entries) == 1 and len(parts) == 1
    assert cache._ENTRY_TMP.fullmatch(entries[0].name), entries[0].name
    assert cache._PART_TMP.fullmatch(parts[0].name), parts[0].name
    assert cache._PARTS_DIR.fullmatch(parts[0].parent.name), parts[0].parent.name


@pytest.mark.parametrize("name", ["../evil", "a/b", "/abs", "..", ".hidden", "", "a b", "-x",
                                  "x\0y", "é", "x" * 201])
def test_names_are_confined_to_the_cache_folder(tmp_path, monkeypatch, name):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "cache"))
    compute = Counter()
    with pytest.raises(ValueError, match=r"^name must be 1-200 characters from \[A-Za-z0-9._-\]"):
        cache.cached_history(name, {}, compute, verbose=False)
    with pytest.raises(ValueError, match=r"^name must be"):
        cache.cache_key(name, {})
    assert compute.calls == 0 and _entries(tmp_path) == []


def test_key_depends_on_config_name_and_mode(monkeypatch):
    monkeypatch.setenv("ATTN_MODE", "fast")
    k = cache.cache_key("a", {"x": 1})
    assert k == cache.cache_key("a", {"x": 1})
    assert k != cache.cache_key("a", {"x": 2}) and k != cache.cache_key("b", {"x": 1})
    monkeypatch.setenv("ATTN_MODE", "full")
    assert k != cache.cache_key("a", {"x": 1})
    with pytest.raises(TypeError, match="config must be a dict"):
        cache.cache_key("a", [1])
    with pytest.raises(TypeError, match="name must be a string"):
        cache.cache_key(3, {})


def test_key_covers_every_source_file_of_the_package(tmp_path, monkeypatch):
    pkg = tmp_path / "attn_core"
    (pkg / "chapters").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "chapters" / "__init__.py").write_text("")
    monkeypatch.setattr(cache, "_PACKAGE", pkg)
    keys = [cache.cache_key("a", {})]
    (pkg / "chapters" / "ch1.py").write_text("X = 1\n")           # a new file in a subpackage
    keys.append(cache.cache_key("a", {}))
    (pkg / "chapters" / "ch1.py").write_text("X = 2\n")           # an edit there
    keys.append(cache.cache_key("a", {}))
    (pkg / "chapters" / "ch1.py").rename(pkg / "chapters" / "ch2.py")   # a rename
    keys.append(cache.cache_key("a", {}))
    (pkg / "notes.txt").write_text("not source")                  # not a .py file: same key
    keys.append(cache.cache_key("a", {}))
    assert len(set(keys[:4])) == 4 and keys[4] == keys[3]



# ------------------------------------------------------------- interrupted runs resume
class _Interrupt:
    """A probe that interrupts training (as a kernel interrupt or a Colab disconnect would)
    when it first sees one chosen member, and records which members it saw."""

    def __init__(self, at_seed=None):
        self.at_seed, self.seen = at_seed, []

    def __call__(self, model, batch):
        import torch
        seed = int(model.seeds[0]) if hasattr(model, "seeds") else None
        self.seen.append(seed)
        if seed == self.at_seed:
            raise KeyboardInterrupt(f"interrupted at member {seed}")
        return {"x0": batch["x"][:, :1].float().sum(-1)}


def _resumable_run(probe, workers=1, seeds=(0, 1, 2, 3)):
    from attn_core.data import KeywordTask
    from attn_core.models import AttentionClassifier
    from attn_core.training import train

    fn = functools.partial(AttentionClassifier, vocab=10, embed=4, hidden=4)
    return lambda: train(fn, KeywordTask(6, 10), list(seeds), steps=4, eval_every=2,
                         batch_size=4, progress=False, execution="looped", workers=workers,
                         probes=[probe])


def _assert_same_numbers(a, b):
    """Every recorded array bitwise equal (seconds and cache flags may differ)."""
    for f in ("seeds", "data_seeds", "train_loss", "eval_steps"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for group in ("metrics", "probes"):
        x, y = getattr(a, group), getattr(b, group)
        assert sorted(x) == sorted(y), group
        for k in x:
            assert x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]), (group, k)


def _assert_same_model(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sorted(sa) == sorted(sb)
    for k in sa:
        assert np.array_equal(sa[k].numpy(), sb[k].numpy()), k


@pytest.mark.parametrize("workers", [1, 2])
def test_an_interrupted_run_resumes_with_its_finished_members(tmp_path, monkeypatch, workers,
                                                             reported):
    from attn_core.models import AttentionClassifier

    assert hasattr(AttentionClassifier(vocab=10, embed=4, hidden=4, seeds=[0]), "seeds")
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "cache"))
    reference = _resumable_run(_Interrupt())()              # never interrupted, not cached
    first = _Interrupt(at_seed=2)
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 2$"):
        cache.cached_history("resume", {"n": 1}, _resumable_run(first))
    parts = sorted((tmp_path / "cache").glob("resume-*.parts/*.npz"))
    assert len(parts) == 2                                  # members 0 and 1 finished, kept
    assert not list((tmp_path / "cache").glob("resume-*.npz"))
    reported()
    second = _Interrupt()
    h = cache.cached_history("resume", {"n": 1}, _resumable_run(second, workers=workers))
    assert "resumed an interrupted run (2 finished group(s) reused" in reported()
    if workers == 1:                                        # the probe ran in this process
        assert set(second.seen) == {2, 3}                   # 0 and 1 were not trained again
    _assert_same_numbers(h, reference)                      # bitwise the uninterrupted run
    _assert_same_model(h.model, reference.model)
    assert not list((tmp_path / "cache").glob("resume-*.parts"))   # parts gone once saved
    assert len(list((tmp_path / "cache").glob("resume-*.npz"))) == 1


def test_a_damaged_part_is_trained_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    reference = _resumable_run(_Interrupt())()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 2$"):
        cache.cached_history("resume", {"n": 2}, _resumable_run(_Interrupt(at_seed=2)))
    parts = sorted(tmp_path.glob("resume-*.parts/*.npz"))
    parts[0].write_bytes(b"not a zip file")
    second = _Interrupt()
    with pytest.warns(RuntimeWarning, match=r"saved part .* cannot be used.*training that "
                                             r"group again"):
        h = cache.cached_history("resume", {"n": 2}, _resumable_run(second))
    assert set(second.seen) == {0, 2, 3}
    _assert_same_numbers(h, reference)



def _change_part(key, value):
    """An edit of a part's arrays: ``arrays[key] = value(arrays[key])``."""
    return lambda arrays: arrays.update({key: value(arrays[key])})


def _rewrite_part(path, change):
    """Edit a part's arrays (``change(arrays)``) and record their digest anew: a part sound in
    itself that records the wrong things, as a changed engine could write it."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    info = json.loads(str(arrays.pop("__meta__")))
    change(arrays)
    info["digest"] = cache._content_digest(arrays)
    cache._write_atomic(path, {"__meta__": np.array(json.dumps(info)), **arrays})


#: A part of an interrupted run (one member; steps=4, eval_every=2: 3 evaluations) whose arrays
#: load but do not record what its group must, and the reason its warning gives.
WRONG_PARTS = {
    "metric of 4 evaluations": (
        _change_part("metrics/accuracy", lambda v: np.concatenate([v, v[:, -1:]], 1)),
        "metrics/accuracy has shape (1, 4), not (1, 3)"),
    "train_loss one step short": (
        _change_part("train_loss", lambda v: v[:, :3]),
        "train_loss has shape (1, 3), not (1, 4)"),
    "probe for two members": (
        _change_part("probes/x0", lambda v: np.concatenate([v, v])),
        "probes/x0 has shape (2, 3, 1), not (1, 3, 1)"),
    "probe of another trailing shape": (
        _change_part("probes/x0", lambda v: np.stack([v, v], -1)),
        "it records probes/x0 as float32 (S, E) + (1, 2); a group trained now records it as "
        "float32 (S, E) + (1,)"),
    "missing metric": (
        lambda arrays: arrays.pop("metrics/accuracy"),
        "it records metrics/accuracy as nothing; a group trained now records it as float32"),
    "metric as float64": (
        _change_part("metrics/loss", lambda v: v.astype(np.float64)),
        "it records metrics/loss as float64"),
}


def _part_warnings(record):
    return [str(w.message) for w in record if "the saved part" in str(w.message)]


@pytest.mark.parametrize("wrong", list(WRONG_PARTS))
def test_a_part_recording_the_wrong_arrays_is_trained_again(tmp_path, monkeypatch, reported,
                                                            wrong):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    reference = _resumable_run(_Interrupt())()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 2$"):
        cache.cached_history("resume", {"n": 6}, _resumable_run(_Interrupt(at_seed=2)))
    part = sorted(tmp_path.glob("resume-*.parts/*.npz"))[0]     # member 0's part
    change, why = WRONG_PARTS[wrong]
    _rewrite_part(part, change)
    reported()
    second = _Interrupt()
    with pytest.warns(RuntimeWarning) as record:
        h = cache.cached_history("resume", {"n": 6}, _resumable_run(second))
    (message,) = _part_warnings(record)                      # one warning, naming the part
    assert message.startswith(f"[cache] resume: the saved part {part} of an interrupted run "
                              f"cannot be used (")
    assert why in message and message.endswith("; training that group again")
    assert set(second.seen) == {0, 2, 3}                     # member 0 trained again
    assert "resumed an interrupted run (1 finished group(s) reused" in reported()
    _assert_same_numbers(h, reference)                       # bitwise the uninterrupted run
    _assert_same_model(h.model, reference.model)


@pytest.mark.parametrize("bad", [0, 1])
def test_parts_that_disagree_with_every_group_loaded_are_trained_again(tmp_path, monkeypatch,
                                                                      bad):
    """Interrupted after every group finished (the entry not yet saved): with nothing trained
    now to compare with, group 0 is trained again and every part that differs from it too."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    reference = _resumable_run(_Interrupt())()

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt("interrupted while saving")

    with monkeypatch.context() as m:
        m.setattr(cache, "save_history", interrupt)
        with pytest.raises(KeyboardInterrupt, match=r"^interrupted while saving$"):
            cache.cached_history("resume", {"n": 7}, _resumable_run(_Interrupt()))
    parts = sorted(tmp_path.glob("resume-*.parts/*.npz"))
    assert len(parts) == 4
    _rewrite_part(parts[bad], WRONG_PARTS["missing metric"][0])
    second = _Interrupt()
    with pytest.warns(RuntimeWarning) as record:
        h = cache.cached_history("resume", {"n": 7}, _resumable_run(second))
    messages = _part_warnings(record)     # part 0's first, then the bad part's (if not 0)
    assert len(messages) == bad + 1
    assert f"saved part {parts[0]} " in messages[0]
    assert "the saved parts of this run record different metrics or probes" in messages[0]
    if bad:
        assert f"saved part {parts[1]} " in messages[1]
        assert "it records metrics/accuracy as nothing" in messages[1]
    assert set(second.seen) == set(range(bad + 1))
    _assert_same_numbers(h, reference)
    _assert_same_model(h.model, reference.model)


def test_parts_are_kept_per_computation_and_need_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 1$"):
        cache.cached_history("resume", {"n": 3}, _resumable_run(_Interrupt(at_seed=1)))
    # another configuration does not see them
    other = _Interrupt()
    cache.cached_history("resume", {"n": 4}, _resumable_run(other))
    assert set(other.seen) == {0, 1, 2, 3}
    # with the cache off nothing is kept
    before = sorted(tmp_path.glob("*.parts"))
    monkeypatch.setenv("ATTN_CACHE", "off")
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 1$"):
        cache.cached_history("resume", {"n": 5}, _resumable_run(_Interrupt(at_seed=1)))
    assert sorted(tmp_path.glob("*.parts")) == before


def test_the_printed_name_can_differ_from_the_key(tmp_path, monkeypatch, reported):
    """label= names the result in the printed lines only: the key (and the file) stay the
    cache name's (chapter 6 prints its uniform runs as such; their stored key is fixed)."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    cache.cached_history("demo", {"steps": 4}, Counter(), label="demo, uniform attention")
    cache.cached_history("demo", {"steps": 4}, Counter())
    out = reported().splitlines()
    assert out[0].startswith("[cache] demo, uniform attention: computed in ")
    assert out[1].startswith("[cache] demo: reused the result computed on ")
    assert [p.name.split("-")[0] for p in tmp_path.glob("demo-*")] == ["demo"]
    with pytest.raises(TypeError, match="label"):
        cache.cached_history("demo", {"steps": 4}, Counter(), label=3)


# ------------------------------------------------------------- content digests (issue 35)
def test_an_entry_without_a_digest_is_recomputed_once(tmp_path, monkeypatch):
    """An entry that records no digest (written before digests were, or by something else)
    cannot be told from a rewritten one: the cache moves it aside and recomputes it once.
    load_history, which reads any file save_history wrote, reads it all the same."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    compute = Counter()
    cache.cached_history("demo", {"x": 1}, compute, verbose=False)
    (path,) = tmp_path.glob("demo-*.npz")
    _rewrite(path, lambda a, i: i.pop("digest"))
    _assert_same_history(cache.load_history(path), _history())
    with pytest.warns(RuntimeWarning, match=re.escape(str(path)) + ".*records no content "
                                            "digest.*moved aside.*recomputing"):
        assert not cache.cached_history("demo", {"x": 1}, compute, verbose=False).cached
    assert compute.calls == 2 and len(list(tmp_path.glob(f"{path.name}.corrupt-*"))) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.cached_history("demo", {"x": 1}, compute, verbose=False).cached
    assert compute.calls == 2


def test_a_rewritten_entry_is_not_loaded_as_computed(tmp_path, monkeypatch):
    """Issue 35, finding 4: an entry rewritten with accuracy 1.0 and a NaN loss curve, a valid
    zip of the recorded schema, was loaded as computed. Now: one warning line, moved aside,
    recomputed."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    compute = Counter()
    cache.cached_history("demo", {"x": 1}, compute, verbose=False)
    (path,) = tmp_path.glob("demo-*.npz")
    _rewrite_numbers(path)
    with pytest.warns(RuntimeWarning) as record:
        h = cache.cached_history("demo", {"x": 1}, compute, verbose=False)
    (message,) = [str(w.message) for w in record]
    assert "\n" not in message and "its arrays are not the ones saved" in message
    assert compute.calls == 2 and not h.cached and np.isfinite(h.train_loss).all()
    _assert_same_history(h, _history())
    (aside,) = tmp_path.glob(f"{path.name}.corrupt-*")
    with np.load(aside, allow_pickle=False) as z:
        assert np.isnan(z["train_loss"]).all()        # the rewritten file, kept aside


@pytest.mark.parametrize("how", ["numbers", "no digest"])
def test_a_rewritten_part_is_trained_again(tmp_path, monkeypatch, how):
    """A part of an interrupted run rewritten with other numbers (its digest kept), or with no
    digest, is warned about, removed and its group trained again: the result is bitwise the
    uninterrupted run's."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    reference = _resumable_run(_Interrupt())()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted at member 2$"):
        cache.cached_history("resume", {"n": 9}, _resumable_run(_Interrupt(at_seed=2)))
    part = sorted(tmp_path.glob("resume-*.parts/*.npz"))[0]
    with np.load(part, allow_pickle=False) as z:
        payload = {k: z[k] for k in z.files}
    if how == "numbers":
        payload["train_loss"] = np.full_like(payload["train_loss"], np.nan)
        payload["metrics/accuracy"] = np.ones_like(payload["metrics/accuracy"])
    else:
        info = json.loads(str(payload["__meta__"]))
        del info["digest"]
        payload["__meta__"] = np.array(json.dumps(info))
    cache._write_atomic(part, payload)
    second = _Interrupt()
    with pytest.warns(RuntimeWarning) as record:
        h = cache.cached_history("resume", {"n": 9}, _resumable_run(second))
    (message,) = _part_warnings(record)
    why = "its arrays are not the ones saved" if how == "numbers" else "records no content digest"
    assert f"saved part {part} " in message and why in message
    assert set(second.seen) == {0, 2, 3}
    _assert_same_numbers(h, reference)
    _assert_same_model(h.model, reference.model)


# -------------------------------------------------- a reader's variant of a config (issue 35)
TINY = ch1.KeywordConfig(length=6, vocab=8, embed=4, hidden=4, steps=4, eval_every=2,
                         eval_batch_size=16, batch_size=8, seeds=(0, 1))


@dataclasses.dataclass(frozen=True)
class UniformKeyword(ch1.KeywordConfig):
    """The move the book invites: the same fields, uniform attention in place of learned."""

    def model_fn(self, task):
        return functools.partial(AttentionClassifier, vocab=task.model_vocab, embed=self.embed,
                                 hidden=self.hidden, attention="uniform")


def test_a_variant_with_the_same_fields_gets_its_own_result(tmp_path, monkeypatch, reported):
    """Issue 35, finding 1: a subclass that overrides model_fn and keeps the fields had the
    base's key, and run() returned the base's History as 'reused'."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    variant = UniformKeyword(**dataclasses.asdict(TINY))
    assert variant.cache_name() == TINY.cache_name() and variant.cache_config() == \
        TINY.cache_config()
    base = TINY.run(progress=False)
    reported()
    mine = variant.run(progress=False)
    assert "computed in" in reported() and not mine.cached
    np.testing.assert_allclose(mine.probes["attn_key"], 1 / 6, rtol=1e-6)   # uniform: its own
    assert not np.allclose(base.probes["attn_key"][:, -1], 1 / 6, rtol=1e-6)
    again = variant.run(progress=False)                 # the same variant: its own entry
    assert again.cached and "reused the result" in reported()
    _assert_same_numbers(again, mine)
    back = TINY.run(progress=False)                     # and the base keeps its own
    assert back.cached
    _assert_same_numbers(back, base)
    assert len(list(tmp_path.glob("keyword-learned-*.npz"))) == 2


def test_package_configs_keep_their_keys(tmp_path, monkeypatch):
    """A config class of the package adds nothing to the key (its code is in the package's
    digest): its entry is the one cache_key(name, config) names, as before issue 35."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    assert cache.code_identity(ch1.KeywordConfig) == (None, None)
    TINY.run(progress=False)
    key = cache.cache_key(TINY.cache_name(), TINY.cache_config())
    assert [p.name for p in tmp_path.glob("*.npz")] == [f"keyword-learned-{key}.npz"]
    code, why = cache.code_identity(UniformKeyword)
    assert why is None and code["class"] == f"{__name__}.UniformKeyword"
    assert cache.cache_key("a", {}, code) != cache.cache_key("a", {})


def _cell(source, number, namespace):
    """Run ``source`` as IPython runs a notebook cell (its compiler caches the cell's text in
    linecache under a name of its own, which is how inspect reads it back)."""
    from IPython.core.compilerop import CachingCompiler

    compiler = CachingCompiler()
    name = compiler.cache(source, number)
    exec(compiler(source, name, "exec"), namespace)


VARIANT_CELL = """
import functools
from dataclasses import dataclass
from attn_core.chapters.ch1_gated import KeywordConfig
from attn_core.models import AttentionClassifier

@dataclass(frozen=True)
class Variant(KeywordConfig):
    def model_fn(self, task):
        return functools.partial(AttentionClassifier, vocab=task.model_vocab,
                                 embed=self.embed, hidden=self.hidden, attention=ATTENTION)
"""


def test_a_notebook_variant_is_keyed_by_its_source(tmp_path, monkeypatch, reported):
    """In a notebook (IPython's cells), the same variant run again -- even from a cell run
    anew -- reuses its own entry; once its override's source changes, it is another entry."""
    pytest.importorskip("IPython")
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    user = {"__name__": "__main__"}
    fields = dataclasses.asdict(TINY)
    _cell("ATTENTION = 'uniform'\n" + VARIANT_CELL, 1, user)
    first = user["Variant"](**fields).run(progress=False)
    assert not first.cached
    np.testing.assert_allclose(first.probes["attn_key"], 1 / 6, rtol=1e-6)
    _cell("ATTENTION = 'uniform'\n" + VARIANT_CELL, 2, user)         # the same cell again
    again = user["Variant"](**fields).run(progress=False)
    assert again.cached
    _assert_same_numbers(again, first)
    changed = VARIANT_CELL.replace("attention=ATTENTION", "attention='learned'")
    _cell("ATTENTION = 'uniform'\n" + changed, 3, user)              # the override changed
    learned = user["Variant"](**fields).run(progress=False)
    assert not learned.cached
    _assert_same_numbers(learned, TINY.run(progress=False, cache=False))
    _cell("ATTENTION = 'learned'\n" + VARIANT_CELL, 4, user)         # a global it reads
    assert not user["Variant"](**fields).run(progress=False).cached
    assert "not cached" not in reported()
    assert len(list(tmp_path.glob("keyword-learned-*.npz"))) == 3


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_key_follows_the_code_that_runs(tmp_path, monkeypatch):
    """A variant in a file, its helper function, and the file edited after it was imported:
    the key follows what runs (bytecode) as well as what the file says (source), so code
    that was not reloaded never takes the edited code's key."""
    monkeypatch.syspath_prepend(str(tmp_path))
    source = textwrap.dedent("""
        import functools
        from dataclasses import dataclass
        from attn_core.chapters.ch1_gated import KeywordConfig
        from attn_core.models import AttentionClassifier

        def attention():
            return "uniform"

        @dataclass(frozen=True)
        class Variant(KeywordConfig):
            def model_fn(self, task):
                return functools.partial(AttentionClassifier, vocab=task.model_vocab,
                                         embed=self.embed, hidden=self.hidden,
                                         attention=attention())
        """)
    file = tmp_path / "reader_variant.py"
    file.write_text(source)
    old = _load_module(file, "reader_variant")
    keys = [cache.code_identity(old.Variant)]
    file.write_text(source.replace('return "uniform"', 'return "learned"  # edited'))
    keys.append(cache.code_identity(old.Variant))       # edited, not reloaded
    new = _load_module(file, "reader_variant")
    keys.append(cache.code_identity(new.Variant))       # reloaded
    assert all(why is None for _, why in keys)
    assert len({code["code"] for code, _ in keys}) == 3
    assert {code["class"] for code, _ in keys} == {"reader_variant.Variant"}


TYPED_AT_A_PROMPT = """
@dataclass(frozen=True)
class Typed(KeywordConfig):
    def model_fn(self, task):
        return partial(AttentionClassifier, vocab=task.model_vocab, embed=self.embed,
                       hidden=self.hidden, attention="uniform")
"""


@pytest.mark.parametrize("where, why", [
    ("method", "Typed.model_fn's source cannot be read"),
    ("helper", "Typed.model_fn uses helper, whose source cannot be read"),
    ("value", "Typed.model_fn uses SEED, a Generator the cache cannot identify"),
])
def test_code_that_cannot_be_read_is_not_cached(tmp_path, monkeypatch, reported, where, why):
    """A class typed where its source is not kept (``python -c``, a plain Python prompt): its
    runs are computed every time, never saved, and the first one says why, once."""
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "cache"))
    user = {"__name__": "__main__", "dataclass": dataclasses.dataclass,
            "KeywordConfig": ch1.KeywordConfig, "partial": functools.partial,
            "AttentionClassifier": AttentionClassifier}
    source = TYPED_AT_A_PROMPT
    if where == "method":
        exec(compile(source, "<string>", "exec"), user)     # what `python -c` compiles
    else:
        exec(compile("def helper():\n    return 'uniform'\n", "<stdin>", "exec"), user)
        user["SEED"] = np.random.default_rng(0)
        use = "helper()" if where == "helper" else "'uniform' if SEED else None"
        file = tmp_path / "typed.py"                       # the class in a file
        file.write_text("from dataclasses import dataclass\n" + source.replace('"uniform"', use))
        exec(compile(file.read_text(), str(file), "exec"), user)
    config = user["Typed"](**dataclasses.asdict(TINY))
    assert cache.code_identity(user["Typed"]) == (None, why)
    runs = [config.run(progress=False) for _ in range(2)]
    out = reported().replace("\n  ", " ").splitlines()   # lines unwrapped
    assert out[0] == f"[cache] keyword-learned: not cached -- {why}"
    assert len(out) == 3 and all(line.startswith("[cache] keyword-learned: computed in ")
                                 for line in out[1:])
    assert not any(h.cached for h in runs) and not (tmp_path / "cache").exists()
    np.testing.assert_allclose(runs[1].probes["attn_key"], 1 / 6, rtol=1e-6)


def test_code_identity_checks_its_argument():
    with pytest.raises(TypeError, match="cls must be a class"):
        cache.code_identity(TINY)
    with pytest.raises(TypeError, match="config_class must be a class or None"):
        cache.cached_history("demo", {}, Counter(), config_class=TINY)
    with pytest.raises(TypeError, match="code must be a dict or None"):
        cache.cache_key("demo", {}, code="abc")
