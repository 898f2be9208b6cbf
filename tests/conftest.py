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
