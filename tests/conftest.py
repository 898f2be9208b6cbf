import os

import matplotlib
import pytest

matplotlib.use("Agg")  # tests draw figures without a display
# A stored run that its live members do not reproduce fails the tests (a reader's session
# explains it and goes on instead: attn_core.config.env_stored).
os.environ.setdefault("ATTN_STORED", "strict")


@pytest.fixture
def book_style():
    """The book's figure style (as a chapter sets it), restored afterwards: for the tests
    that measure a figure's text at the book's column (plotting.rendered_text_pt)."""
    import matplotlib as mpl

    from attn_core.plotting import set_style

    with mpl.rc_context():
        set_style()
        yield


@pytest.fixture
def env(monkeypatch):
    """``env(name, raw)``: set the environment variable ``name`` to ``raw`` for this test,
    or remove it when ``raw`` is None."""
    def set_or_unset(name: str, raw: str | None) -> None:
        if raw is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, raw)
    return set_or_unset


#: The unit stage's longest tests (``--durations``, 2026-11-26: the platform matrix 22 and
#: 12 s, the Dask cluster's group ~45 s in one process, two fresh processes 10 s), collected
#: first so that pytest-xdist hands them out first: started last, they left one core idle at
#: the end of the stage. Only the order changes, never which tests run.
LONG_FIRST = ("tests/test_stored_portable.py::test_every_live_check",
              "tests/test_cluster.py::",
              "tests/test_engine.py::test_same_seed_bitwise_same_numbers_in_two_fresh")


def _rank(nodeid: str) -> int:
    return next((i for i, p in enumerate(LONG_FIRST) if nodeid.startswith(p)), len(LONG_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: the rest keep their order


def wait_for_render(timeout_s: float = 900.0) -> None:
    """When the test command renders the HTML beside this test run (``ATTN_RENDER_STATUS``
    names the file its exit status will be written to), wait for it; a failed render fails
    the test that needs the HTML. Without the variable: return at once."""
    import time
    from pathlib import Path

    path = os.environ.get("ATTN_RENDER_STATUS")
    if not path:
        return
    status, deadline = Path(path), time.monotonic() + timeout_s
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"ATTN_RENDER_STATUS: {path} was not written within {timeout_s:.0f} s "
                        f"(the render beside this run did not finish)")
        time.sleep(0.5)
    code = status.read_text().strip()
    if code != "0":
        pytest.fail(f"the book's render failed (exit status {code}; its output is in "
                    f"_build/build.log)")


@pytest.fixture
def reported():
    """The package's bookkeeping lines ([cache], [stored]), which it keeps instead of
    printing: ``reported()`` returns those kept since its last call (or the test's start),
    joined by newlines, as ``capsys.readouterr().out`` does for printed text."""
    from attn_core import config

    seen = [len(config.report(show=False))]

    def read() -> str:
        lines = config.report(show=False)
        new, seen[0] = lines[seen[0]:], len(lines)
        return "\n".join(new)
    return read
