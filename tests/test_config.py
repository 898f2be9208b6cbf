"""The book-wide switches: mode, presets, device, seeds, threads, and every environment variable."""

import os
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core import config
from attn_core.config import (Preset, available_cores, describe, env_cache, env_mode, env_threads,
                              env_workers, get_device, get_mode, set_seed, set_threads)

BAD_COUNTS = ["abc", "", " ", "2.0", "0", "-1", "1e3", "1_000", "two", "0x2"]


@pytest.fixture
def four_cores(monkeypatch):
    """Pretend this process may use 4 cores (the warnings depend on the core count)."""
    monkeypatch.setattr(config, "available_cores", lambda: 4)


def test_mode_from_environment(monkeypatch):
    monkeypatch.setenv("ATTN_MODE", "full")
    assert get_mode() == "full" and env_mode() == "full" and Preset("a", "b").get() == "b"
    monkeypatch.setenv("ATTN_MODE", "FAST")
    assert get_mode() == "fast" and env_mode() == "fast" and Preset(1, 2).get() == 1
    assert Preset(1, 2).get("full") == 2
    monkeypatch.setenv("ATTN_MODE", "auto")
    assert env_mode() == "auto"
    assert get_mode() == ("full" if torch.cuda.is_available() else "fast")
    monkeypatch.delenv("ATTN_MODE")
    assert env_mode() == "auto"
    assert get_mode("FULL") == "full"


def test_pick_is_gone():
    assert not hasattr(config, "pick")


@pytest.mark.parametrize("value", ["garbage", "", "quick", "fast full"])
def test_bad_attn_mode_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("ATTN_MODE", value)
    with pytest.raises(ValueError, match=r"ATTN_MODE must be one of \('fast', 'full', 'auto'\)"):
        env_mode()
    with pytest.raises(ValueError, match="ATTN_MODE must be one of"):
        get_mode()
    with pytest.raises(ValueError, match="ATTN_MODE must be one of"):
        Preset(1, 2).get()


def test_bad_mode_argument_names_mode(monkeypatch):
    monkeypatch.setenv("ATTN_MODE", "fast")
    with pytest.raises(ValueError, match=r"^mode must be one of .*'turbo'"):
        get_mode("turbo")
    with pytest.raises(TypeError, match="^mode must be a string"):
        get_mode(3)


@pytest.mark.parametrize("value", BAD_COUNTS)
def test_bad_attn_threads(monkeypatch, value):
    monkeypatch.setenv("ATTN_THREADS", value)
    with pytest.raises(ValueError, match=r"ATTN_THREADS must be an int >= 1 \(one torch thread "
                                         r"per process\); got " + re.escape(repr(value))):
        env_threads()
    with pytest.raises(ValueError, match="ATTN_THREADS must be an int >= 1"):
        set_threads()


def test_attn_threads_values(monkeypatch, four_cores):
    monkeypatch.delenv("ATTN_THREADS", raising=False)
    assert env_threads() == 1
    for value, n in (("1", 1), ("4", 4), (" 2 ", 2)):
        monkeypatch.setenv("ATTN_THREADS", value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # at or below the core count: no warning
            assert env_threads() == n


def test_attn_threads_above_cores_warns(monkeypatch, four_cores):
    monkeypatch.setenv("ATTN_THREADS", "1000")
    with pytest.warns(RuntimeWarning, match=r"ATTN_THREADS=1000 is more than the 4 CPU core"):
        assert env_threads() == 1000   # still used


def test_import_fails_naming_attn_threads():
    env = {**os.environ, "ATTN_THREADS": "abc"}
    r = subprocess.run([sys.executable, "-c", "import attn_core"], env=env, capture_output=True,
                       text=True, cwd=Path(config.__file__).parent.parent, timeout=120)
    assert r.returncode != 0
    assert "ValueError: ATTN_THREADS must be an int >= 1" in r.stderr and "'abc'" in r.stderr


@pytest.mark.parametrize("value", BAD_COUNTS)
def test_bad_attn_workers(monkeypatch, value):
    monkeypatch.setenv("ATTN_WORKERS", value)
    with pytest.raises(ValueError, match=r"ATTN_WORKERS must be an int >= 1 \(worker processes"):
        env_workers()


def test_attn_workers(monkeypatch, four_cores):
    monkeypatch.delenv("ATTN_WORKERS", raising=False)
    assert env_workers() == 4          # default: the cores this process may use
    monkeypatch.setenv("ATTN_WORKERS", "3")
    assert env_workers() == 3
    monkeypatch.setenv("ATTN_WORKERS", "9")
    with pytest.warns(RuntimeWarning, match=r"ATTN_WORKERS=9 is more than the 4 CPU core"):
        assert env_workers() == 9


def test_available_cores():
    n = available_cores()
    assert isinstance(n, int) and 1 <= n <= (os.cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        assert n == len(os.sched_getaffinity(0))


def test_attn_cache_default_and_paths(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ATTN_CACHE", raising=False)
    assert env_cache() == tmp_path / ".cache" / "attn_core"
    monkeypatch.setenv("ATTN_CACHE", "")
    assert env_cache() == tmp_path / ".cache" / "attn_core"
    monkeypatch.setenv("ATTN_CACHE", "~/results")
    assert env_cache() == tmp_path / "results"
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "x"))
    assert env_cache() == tmp_path / "x"


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "False", "no", " off "])
def test_attn_cache_off(monkeypatch, value):
    monkeypatch.setenv("ATTN_CACHE", value)
    assert env_cache() is None


@pytest.mark.parametrize("value", [" ", "\t", "None", "none", "NULL", "null", " /tmp/x", "dir "])
def test_attn_cache_refuses_stray_folder_names(monkeypatch, tmp_path, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTN_CACHE", value)
    with pytest.raises(ValueError, match=r"ATTN_CACHE must be 'off' .* or a folder path"):
        env_cache()
    assert list(tmp_path.iterdir()) == []


def test_device():
    assert get_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        assert get_device().type == "cpu"
        with pytest.raises(ValueError, match="CUDA"):
            get_device("cuda")


def test_set_seed_reproduces_all_generators():
    set_seed(3)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    set_seed(3)
    assert a == (random.random(), np.random.rand(), torch.rand(1).item())
    with pytest.raises(ValueError, match="seed must be >= 0"):
        set_seed(-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        set_seed(1.5)


def test_threads(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("ATTN_THREADS", "1")
        assert set_threads() == 1
        monkeypatch.delenv("ATTN_THREADS")
        assert set_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match=r"n \(threads\) must be an int >= 1"):
        set_threads(0)
    with pytest.raises(TypeError, match=r"n \(threads\) must be an int"):
        set_threads(1.5)
    with pytest.raises(TypeError, match=r"n \(threads\) must be an int"):
        set_threads(True)


def test_describe_names_mode_and_device(monkeypatch):
    monkeypatch.setenv("ATTN_MODE", "Fast")
    line = describe("fast")
    assert line.startswith("attn_core: fast mode on CPU, ") and "thread" in line
    assert torch.__version__ in line and len(line) <= 80   # fits the book's column


def test_a_preset_smoke_function_applies_only_in_a_smoke_run(monkeypatch):
    from dataclasses import dataclass as dc

    @dc(frozen=True)
    class C:
        seeds: tuple = (0, 1, 2, 3)

    p = Preset(fast=C(), full=C(seeds=tuple(range(20))), smoke=config.first_seeds(2))
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    assert p.get("fast").seeds == (0, 1, 2, 3) and len(p.get("full").seeds) == 20
    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    assert p.get("fast").seeds == (0, 1) and p.get("full").seeds == (0, 1)
    assert Preset(fast=C(), full=C()).get("fast").seeds == (0, 1, 2, 3)   # no smoke: kept
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        config.first_seeds(0)


def test_wrap_line_wraps_each_line_to_the_column_and_keeps_names_whole():
    from attn_core.config import LINE_WIDTH, wrap_line

    text = "[stored] transformer-learned, uniform attention: " + "word " * 20 + "\nshort"
    out = wrap_line(text).splitlines()
    assert max(map(len, out)) <= LINE_WIDTH and out[-1] == "short"
    assert all(line.startswith("  ") for line in out[1:-1])        # continuations indented
    assert "transformer-learned," in out[0]                         # not broken at a hyphen
    assert wrap_line("x" * 10) == "x" * 10
    with pytest.raises(TypeError, match="text must be a str"):
        wrap_line(3)


def test_bookkeeping_lines_are_kept_not_printed_and_summarised(capsys, monkeypatch):
    """#55: the [cache] and [stored] lines go to attn_core.report(), not onto the page; the
    chapter's claims print one quiet line that counts them."""
    from attn_core import config
    from attn_core.claims import Claims

    monkeypatch.setattr(config, "_REPORT", [])        # this test's lines only
    config.report_line("[cache] demo: reused the result computed on 2026-11-28 (3 s)")
    config.report_line("[cache] other: computed in 2 s (saved)")
    config.report_line("[stored] demo: member 0 of 3 retrained, match   bitwise")
    assert capsys.readouterr().out == ""
    assert config.report(show=False) == [
        "[cache] demo: reused the result computed on 2026-11-28 (3 s)",
        "[cache] other: computed in 2 s (saved)",
        "[stored] demo: member 0 of 3 retrained, match bitwise"]     # spaces collapsed
    summary = config.report_summary()
    assert "reused from the cache" in summary and "attn_core.report() lists them" in summary
    assert "1 stored, re-checked live" in summary and "2026" not in summary
    lines = config.report()
    assert capsys.readouterr().out.count("[cache]") == sum(x.startswith("[cache]")
                                                           for x in lines)
    c = Claims("Demo")
    c.check("D1", "one", kind="identity", measured=1, op="==", threshold=1)
    c.assert_all()
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("all 1 claims of Demo hold") and "\n".join(out[1:]) == summary
    with pytest.raises(TypeError, match="text must be a non-empty str"):
        config.report_line("  ")
    with pytest.raises(TypeError, match="show must be True or False"):
        config.report(show="yes")
