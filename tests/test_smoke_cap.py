"""ATTN_MAX_STEPS, the smoke run's cap: every training run stops at the cap (the same numbers
as the first steps of the full run) on batches of at most SMOKE_BATCH, nothing is cached or
loaded as a real result, and the claims are shown, labelled, but not asserted."""

from __future__ import annotations

import functools
import os
import re

import numpy as np
import pytest

from attn_core import cache
from attn_core.claims import Claims
from attn_core.config import SMOKE_BATCH, env_max_steps, env_smoke_batch
from attn_core.data import KeywordTask
from attn_core.models import AttentionClassifier
from attn_core.stored import step_cap
from attn_core.training import train


@pytest.mark.parametrize("raw, want", [(None, None), ("", None), ("  ", None), ("3", 3),
                                       (" 12 ", 12)])
def test_env_max_steps(env, raw, want):
    env("ATTN_MAX_STEPS", raw)
    assert env_max_steps() == want


@pytest.mark.parametrize("raw, want", [(None, 16), ("", 16), ("4", 4), (" 32 ", 32),
                                       ("off", None), ("OFF", None)])
def test_env_smoke_batch(env, raw, want):
    env("ATTN_SMOKE_BATCH", raw)
    assert env_smoke_batch() == want


@pytest.mark.parametrize("var, read, allowed", [
    ("ATTN_MAX_STEPS", env_max_steps, r"an int >= 1 .*or unset"),
    ("ATTN_SMOKE_BATCH", env_smoke_batch, r"an int >= 1 .* or off ")])
@pytest.mark.parametrize("raw", ["0", "-1", "2.5", "8.0", "two", "none", "1e3"])
def test_a_bad_smoke_variable_is_named_with_what_it_allows(env, var, read, allowed, raw):
    env(var, raw)
    with pytest.raises(ValueError, match=rf"^{var} must be {allowed}.*got " +
                       re.escape(repr(raw))):
        read()


def _run(steps=6):
    fn = functools.partial(AttentionClassifier, vocab=10, embed=4, hidden=4)
    return train(fn, KeywordTask(6, 10), [0, 1], steps=steps, eval_every=2, batch_size=4,
                 progress=False, workers=1)


def test_every_run_stops_at_the_cap_with_the_full_runs_first_steps(monkeypatch):
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    full = _run()
    monkeypatch.setenv("ATTN_MAX_STEPS", "3")
    capped = _run()
    assert capped.train_loss.shape == (2, 3) and capped.config["steps"] == 3
    assert capped.eval_steps.tolist() == [0, 2, 3]
    assert np.array_equal(capped.train_loss, full.train_loss[:, :3])
    assert np.array_equal(capped.metrics["loss"][:, :2], full.metrics["loss"][:, :2])
    assert _run(steps=2).train_loss.shape == (2, 2)      # under the cap: unchanged


def test_a_smoke_run_trains_and_evaluates_on_batches_of_at_most_smoke_batch(monkeypatch):
    seen = []

    class Recording(KeywordTask):
        def sample(self, generator, batch_size):
            seen.append(batch_size)
            return super().sample(generator, batch_size)

    fn = functools.partial(AttentionClassifier, vocab=10, embed=4, hidden=4)

    def run(batch, eval_batch):
        seen.clear()
        h = train(fn, Recording(6, 10), [0], steps=3, eval_every=2, batch_size=batch,
                  eval_batch_size=eval_batch, progress=False, workers=1)
        return h, sorted(set(seen))

    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    assert run(40, 50)[1] == [40, 50]                                   # no cap: as asked
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    assert SMOKE_BATCH == 16
    h, sizes = run(40, 50)
    assert sizes == [SMOKE_BATCH] and h.config["batch_size"] == SMOKE_BATCH   # both batches
    assert run(8, 12)[1] == [8, 12]                                     # under it: unchanged
    monkeypatch.setenv("ATTN_SMOKE_BATCH", "20")
    assert run(40, 50)[1] == [20]
    monkeypatch.setenv("ATTN_SMOKE_BATCH", "off")
    assert run(40, 50)[1] == [40, 50]


def test_step_cap_trains_a_prefix_of_the_real_run_at_its_batches(monkeypatch):
    # the stored results' live checks compare a capped run with the first steps of their
    # record: the cap must not change the batches (ATTN_SMOKE_BATCH=off inside step_cap)
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    monkeypatch.delenv("ATTN_SMOKE_BATCH", raising=False)
    fn = functools.partial(AttentionClassifier, vocab=10, embed=4, hidden=4)

    def run(steps):
        return train(fn, KeywordTask(6, 10), [0], steps=steps, eval_every=2, batch_size=40,
                     progress=False, workers=1)

    full = run(6)
    with step_cap(3):
        prefix = run(6)
    assert prefix.config["batch_size"] == 40
    assert np.array_equal(prefix.train_loss, full.train_loss[:, :3])
    assert "ATTN_MAX_STEPS" not in os.environ and "ATTN_SMOKE_BATCH" not in os.environ


def test_a_smoke_run_is_never_cached_nor_loaded(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path))
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    real = cache.cached_history("smoke", {"a": 1}, _run)               # a real, saved result
    assert len(list(tmp_path.glob("smoke-*.npz"))) == 1
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    calls = []
    h = cache.cached_history("smoke", {"a": 1}, lambda: calls.append(1) or _run())
    assert calls == [1] and not h.cached                              # trained, not loaded
    assert h.train_loss.shape[1] == 2 and real.train_loss.shape[1] == 6
    cache.cached_history("smoke", {"a": 2}, _run)
    assert len(list(tmp_path.glob("smoke-*"))) == 1                    # nothing new saved
    assert "[smoke] smoke: at most 2 steps and 16 examples a batch (ATTN_MAX_STEPS), not " \
        "cached" in " ".join(capsys.readouterr().out.split())          # one line, wrapped


def test_claims_of_a_smoke_run_are_shown_labelled_but_not_asserted(monkeypatch, capsys):
    c = Claims("Chapter X")
    c.check("P1", "a number that is too small", kind="identity", measured=0.1, op=">=", threshold=0.5)
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    with pytest.raises(AssertionError, match="1 of 1 claims of Chapter X fail"):
        c.assert_all()
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    c.assert_all()
    out = capsys.readouterr().out
    assert "smoke run (ATTN_MAX_STEPS=2): the 1 claims of Chapter X were not checked" in out
    assert "SMOKE RUN, ATTN_MAX_STEPS=2: not checked" in c.table()
    assert "SMOKE RUN, ATTN_MAX_STEPS=2: not checked" in c.html()


def test_index_of_finds_an_evaluation_and_maps_the_budget_in_a_smoke_run(monkeypatch):
    from attn_core.training import History
    h = History(seeds=np.arange(1), data_seeds=np.arange(1), train_loss=np.zeros((1, 4)),
                eval_steps=np.array([0, 2, 4]), metrics={}, probes={})
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    assert h.index_of(2) == 1 and h.index_of(0) == 0
    with pytest.raises(ValueError, match=r"step must be a step this run was evaluated at "
                                         r"\(\[0, 2, 4\]\); got 300"):
        h.index_of(300)
    with pytest.raises(TypeError, match="step must be an int"):
        h.index_of(2.0)
    monkeypatch.setenv("ATTN_MAX_STEPS", "4")
    assert h.index_of(300) == 2                       # past the cap: the last evaluation
    with pytest.raises(ValueError, match="got 3"):
        h.index_of(3)                                 # below the cap: not evaluated


def _chapter_presets():
    """Every chapter module's presets that have a smoke function (a new chapter included)."""
    import importlib
    import pkgutil

    import attn_core.chapters
    from attn_core.config import Preset
    names = sorted(m.name for m in pkgutil.iter_modules(attn_core.chapters.__path__)
                   if re.fullmatch(r"ch\d+_\w+", m.name))
    assert len(names) >= 6, names
    for name in names:
        module = importlib.import_module(f"attn_core.chapters.{name}")
        for attr, value in vars(module).items():
            if isinstance(value, Preset) and value.smoke is not None:
                yield f"{name}.{attr}", value


@pytest.mark.parametrize("mode", ["fast", "full"])
def test_every_chapters_smoke_preset_is_a_valid_config_at_the_same_shapes(monkeypatch, mode):
    """A preset's smoke function makes a config the chapter can build (its own checks run
    in __post_init__), with fewer or as many members, and its model at the same shapes."""
    import dataclasses
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    presets = dict(_chapter_presets())
    assert len(presets) >= 10
    for name, preset in presets.items():
        whole = preset.fast if mode == "fast" else preset.full
        cut = preset.get(mode)                       # raises if the smoke config is invalid
        assert type(cut) is type(whole), name
        if hasattr(whole, "seeds"):
            assert 1 <= len(cut.seeds) <= len(whole.seeds), name
            assert tuple(cut.seeds) == tuple(whole.seeds)[:len(cut.seeds)], name
        shapes = ("length", "vocab", "embed", "hidden", "dim", "d_model", "heads", "d_ff",
                  "batch_size", "steps", "copy")
        for field in dataclasses.fields(whole):
            if field.name in shapes:
                assert getattr(cut, field.name) == getattr(whole, field.name), (name, field)


def test_the_test_command_smoke_runs_every_chapter_in_its_order():
    """Stage 3 of scripts/run_tests.sh: every chapter's notebook runs in full mode under the
    cap (chapter 1 through the Colab rehearsal's --smoke), each once, and pytest-xdist keeps
    the given order (longest first) instead of starting the files with the most tests."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    script = (root / "scripts" / "run_tests.sh").read_text()
    stage = script[script.index('stage "3/3'):script.index('stage "all checks passed')]
    command = " ".join(stage[stage.index("timed "):].split("\\\n"))
    assert "ATTN_MODE=full ATTN_MAX_STEPS=2" in " ".join(command.split())
    # the smoke runs' kernels build the figures without drawing them (the JupyterLab test
    # and the Colab rehearsal take MPLBACKEND out of their kernels' environments)
    assert "MPLBACKEND=agg" in command.split()
    assert "--dist loadfile --no-loadscope-reorder" in " ".join(command.split())
    assert '"${stage3[@]}"' in command and "python scripts/stage3_tests.py" in stage
    import subprocess
    import sys
    targets = subprocess.run([sys.executable, str(root / "scripts" / "stage3_tests.py")],
                             capture_output=True, text=True, check=True).stdout.split()
    listed = re.findall(r"notebooks/(\d\d_\w+)\.ipynb", " ".join(targets))
    chapters = sorted(p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(listed) == [c for c in chapters if not c.startswith("01_")]
    assert len(listed) == len(set(listed))
    assert targets[0] == "notebooks/03_ibm1.ipynb" and targets[-1] == "tests/test_built_book.py"
    assert targets[1:4] == ["tests/test_jupyterlab.py", "tests/test_browser.py",
                            "tests/test_colab_rehearsal.py"]


def test_chapter3s_smoke_run_cuts_the_corpus_and_the_seeds_not_the_shapes(monkeypatch):
    """Chapter 3's full-mode smoke run: the first seed and at most SMOKE_PAIRS pairs (its
    count tables, EM and proxy velocities run over the whole corpus), every shape kept;
    a real run keeps the papers' corpus."""
    from attn_core.chapters.ch3_ibm1 import SMOKE_PAIRS, TRANSLATION
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    whole = TRANSLATION.get("full")
    assert whole.n_pairs == 20000 and len(whole.seeds) == 5
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    cut = TRANSLATION.get("full")
    assert cut.n_pairs == SMOKE_PAIRS < whole.n_pairs and cut.seeds == whole.seeds[:1]
    assert (cut.vocab, cut.length, cut.hidden) == (whole.vocab, whole.length, whole.hidden)
    assert TRANSLATION.get("fast").n_pairs == TRANSLATION.fast.n_pairs  # not raised
