"""The book-wide switches: mode, presets, device, seeds, threads."""

import random

import numpy as np
import pytest
import torch

from attn_core.config import Preset, describe, get_device, get_mode, pick, set_seed, set_threads


def test_mode_from_environment(monkeypatch):
    monkeypatch.setenv("ATTN_MODE", "full")
    assert get_mode() == "full" and pick(1, 2) == 2 and Preset("a", "b").get() == "b"
    monkeypatch.setenv("ATTN_MODE", "fast")
    assert get_mode() == "fast" and pick(1, 2) == 1
    monkeypatch.setenv("ATTN_MODE", "auto")
    assert get_mode() == ("full" if torch.cuda.is_available() else "fast")
    assert get_mode("FULL") == "full"


def test_unknown_mode_is_rejected(monkeypatch):
    with pytest.raises(ValueError, match="mode must be one of"):
        get_mode("turbo")
    monkeypatch.setenv("ATTN_MODE", "quick")
    with pytest.raises(ValueError, match="mode"):
        get_mode()
    with pytest.raises(TypeError, match="mode"):
        get_mode(3)


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
    with pytest.raises(ValueError, match="seed"):
        set_seed(-1)
    with pytest.raises(TypeError, match="seed"):
        set_seed(1.5)


def test_threads():
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads"):
        set_threads(0)
    with pytest.raises(TypeError, match="threads"):
        set_threads(1.5)


def test_describe_names_mode_and_device():
    line = describe("fast")
    assert "mode=fast" in line and "device=" in line and "threads=" in line
