"""The stored results' platform matrix (issue #28): on every platform a correct install can
give this CPU -- each ATEN_CPU_CAPABILITY it has x 1 and 2 torch threads, each in a fresh
process -- every live check of chapters 4-7 passes within its measured envelope, and every
changed model (a learning rate 1 % off, another initialisation or data seed, the biases
dropped or the layer norm moved, no end token, another evaluation set) fails it, against
chapter 4's control and chapter 6's small positions. Each platform trains the first
``UPTO`` steps (scripts/platform_matrix.py). Here "native-1", the reader's default, trains
only the changed models (the strict book build runs its live checks in full) and each
other CPU capability, at two threads, only the live checks; ``python scripts/platform_matrix.py``
trains both on every platform, one and two threads, and prints the margin."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "platform_matrix", Path(__file__).resolve().parents[1] / "scripts" / "platform_matrix.py")
matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(matrix)

PLATFORMS = matrix.platforms()
#: The platforms the test command trains: the reader's default (native-1, the changed models)
#: and each other CPU capability at two threads, which differs from the records' platform in
#: both the vector code and the reduction order. The capability is what moves the numbers:
#: in the full matrix of 2026-11-26 (book/setup.md) the two-thread rows gave their one-thread
#: rows' largest ratio to within 0.01 (native 0.24 vs 0.25, default 0.33 vs 0.33). The other
#: rows are trained by ``python scripts/platform_matrix.py`` (run whenever the stored results
#: are made again: CONTRIBUTING.md), not on every test run.
CHECKED = [name for name in PLATFORMS
           if name == "native-1" or (name.endswith("-2") and not name.startswith("native"))]


@pytest.mark.parametrize("name", CHECKED)
def test_every_live_check_passes_and_every_changed_model_fails(name):
    # the changed models are trained once, on the reader's default platform (a change lands
    # 20+ envelopes away, the platforms differ by under one: scripts/platform_matrix.py
    # trains them on every platform); the live checks on every other platform, native-1's
    # in the strict book build
    native = name == "native-1"
    result = matrix.run_platform(name, PLATFORMS[name], matrix.UPTO, live=not native,
                                 changed=native)
    print(result["log"])
    failed = [c for c in result["live"] if not c["ok"]]
    assert not failed, f"{name}: live checks beyond their envelope: {failed}"
    missed = [c["change"] for c in result["changed"] if c["ok"]]
    assert not missed, f"{name}: changed models that pass the check: {missed}"
    if native:
        assert not result["live"] and len(result["changed"]) == 2 * (len(matrix.CHANGES) + 1)
        least = min(c["envelope_ratio"] for c in result["changed"])
        assert least > 1
        print(f"{name}: smallest changed-model ratio {least:.3g}")
    else:
        assert len(result["live"]) == 25 and not result["changed"]
        worst = max(c["envelope_ratio"] for c in result["live"])
        assert worst <= 1
        print(f"{name}: largest live ratio {worst:.3g}")


def test_the_matrix_covers_the_capabilities_of_this_cpu():
    names = set(PLATFORMS)
    assert {"native-1", "native-2", "default-1", "default-2"} <= names
    capabilities = {n.rsplit("-", 1)[0] for n in names}
    assert {n.rsplit("-", 1)[0] for n in CHECKED} == capabilities     # each one trained
    assert "native-1" in CHECKED and len(CHECKED) == len(capabilities)
    assert all(PLATFORMS[n]["ATTN_THREADS"] in ("1", "2") for n in names)


def test_summary_reports_the_margin_and_fails_a_missed_change():
    live = [{"ok": True, "envelope_ratio": 0.25}]
    changed = [{"ok": False, "envelope_ratio": 5.0}]
    row = {"name": "x", "platform": {"capability": "AVX2", "threads": 1}, "seconds": 1,
           "live": live, "changed": changed}
    ok, text = matrix.summary([row])
    assert ok and "margin 20x" in text
    ok, _ = matrix.summary([{**row, "changed": [{"ok": True, "envelope_ratio": 0.5}]}])
    assert not ok
