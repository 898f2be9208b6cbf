"""Behavioural tests for attn_core.plotting (style and the static-book figure slider)."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from ipywidgets.widgets.widget_link import Link  # noqa: E402

from attn_core import plotting  # noqa: E402
from attn_core.plotting import fig_to_png, figure_slider, set_style  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _draw(value):
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0, value, 2 * value])
    ax.set_title(f"value = {value}")
    return fig


@pytest.fixture(autouse=True)
def _close_all():
    plt.close("all")
    yield
    plt.close("all")


def _parts(box):
    assert isinstance(box, widgets.VBox)
    slider, stack = box.children
    assert isinstance(slider, widgets.SelectionSlider)
    assert isinstance(stack, widgets.Stack)
    return slider, stack


def _links_between(slider, stack):
    """Every live jslink widget whose source is the slider and target the stack."""
    found = []
    try:  # ipywidgets >= 8.1: the registry of live widgets
        from ipywidgets.widgets.widget import _instances as live
    except ImportError:  # pragma: no cover - older ipywidgets
        live = widgets.Widget.widgets
    for w in list(live.values()):
        if isinstance(w, Link):
            state = w.get_state()
            if state["source"] == [f"IPY_MODEL_{slider.model_id}", "index"] and state[
                "target"
            ] == [f"IPY_MODEL_{stack.model_id}", "selected_index"]:
                found.append(w)
    return found


def test_set_style_sets_dpi_and_grid():
    set_style()
    assert plt.rcParams["figure.dpi"] == plotting.DPI
    assert plt.rcParams["axes.grid"] is True
    set_style()  # idempotent


def test_fig_to_png_returns_png_and_keeps_figure_open():
    fig = _draw(1.0)
    png = fig_to_png(fig)
    assert png.startswith(PNG_MAGIC)
    assert plt.fignum_exists(fig.number)


def test_fig_to_png_rejects_non_figure():
    with pytest.raises(TypeError, match="fig"):
        fig_to_png("not a figure")


def test_one_frame_per_value_and_frames_differ():
    values = [0.5, 1.0, 2.0, 4.0]
    box = figure_slider(values, _draw, description="scale")
    slider, stack = _parts(box)
    assert len(stack.children) == len(values)
    assert all(isinstance(img, widgets.Image) and img.format == "png" for img in stack.children)
    pngs = [bytes(img.value) for img in stack.children]
    assert all(p.startswith(PNG_MAGIC) for p in pngs)
    assert len(set(pngs)) == len(values), "frames for different values must differ"
    assert slider.options == tuple(str(v) for v in values)
    assert slider.index == 0 and stack.selected_index == 0
    assert slider.description == "scale"
    assert "attn-figure-slider" in box._dom_classes


def test_custom_labels_and_readout():
    box = figure_slider([1, 2, 3], _draw, labels=["one", "two", "three"], readout=False)
    slider, _ = _parts(box)
    assert slider.options == ("one", "two", "three")
    assert slider.readout is False


def test_slider_is_jslinked_to_stack():
    box = figure_slider([1, 2, 3], _draw)
    slider, stack = _parts(box)
    links = _links_between(slider, stack)
    assert len(links) == 1
    state = links[0].get_state()
    assert state["_model_name"] == "LinkModel"  # a browser-side (js) link, not a Python one


def test_figures_are_closed_afterwards():
    figure_slider([1, 2, 3], _draw)
    assert plt.get_fignums() == []


def test_draw_is_called_once_per_value_in_order():
    seen = []

    def draw(v):
        seen.append(v)
        return _draw(len(v))

    figure_slider(["a", "bb", "ccc"], draw)
    assert seen == ["a", "bb", "ccc"]


def test_frame_i_is_the_figure_of_value_i():
    values = [4.0, 0.5, 2.0, 1.0]          # not sorted: the frames must follow this order
    box = figure_slider(values, _draw)
    _, stack = _parts(box)
    expected = []
    for v in values:
        fig = _draw(v)
        expected.append(fig_to_png(fig))
        plt.close(fig)
    assert [bytes(img.value) for img in stack.children] == expected


def test_empty_values_raise():
    with pytest.raises(ValueError, match="values"):
        figure_slider([], _draw)


def test_draw_not_callable_raises():
    with pytest.raises(TypeError, match="draw"):
        figure_slider([1, 2], "not callable")


def test_labels_length_mismatch_raises():
    with pytest.raises(ValueError, match="labels"):
        figure_slider([1, 2, 3], _draw, labels=["a", "b"])


def test_draw_returning_non_figure_raises_and_closes():
    def bad(v):
        fig, ax = plt.subplots()
        return ax

    with pytest.raises(TypeError, match="Figure"):
        figure_slider([1], bad)
    assert plt.get_fignums() == []


def test_warns_over_frame_budget(monkeypatch):
    monkeypatch.setattr(plotting, "FRAME_BUDGET_BYTES", 100)
    with pytest.warns(UserWarning, match="frames"):
        figure_slider([1, 2], _draw)


def test_heatmap_has_no_grid_lines_and_optional_colorbar():
    import numpy as np

    from attn_core.plotting import heatmap, set_style

    set_style()
    fig, ax = plt.subplots()
    im = heatmap(ax, np.eye(3), colorbar=True)
    assert im.get_array().shape == (3, 3)
    assert not any(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())
    assert len(fig.axes) == 2  # the image and its colorbar
    plt.close(fig)


@pytest.mark.parametrize("shape", [(20, 20), (4, 7), (41, 41)])
def test_heatmap_ticks_sit_on_whole_rows_and_columns(shape):
    # rows and columns are indices: a tick at 2.5 would name a row that does not exist
    import numpy as np

    from attn_core.plotting import heatmap, set_style

    set_style()
    fig, ax = plt.subplots(figsize=(4, 3))
    heatmap(ax, np.random.default_rng(0).random(shape))
    fig.canvas.draw()
    for ticks, n in ((ax.get_xticks(), shape[1]), (ax.get_yticks(), shape[0])):
        shown = [t for t in ticks if -0.5 <= t <= n - 0.5]
        assert shown and all(float(t).is_integer() for t in shown), ticks
    plt.close(fig)


def _layout(shape, fontsize):
    fig, axes = plt.subplots(*shape, figsize=(3.0 * shape[1] + 1.6, 2.6 * shape[0]))
    for ax in getattr(axes, "flat", [axes]):
        ax.plot(range(10), label="a line")
        ax.set_title("a title", fontsize=fontsize + 2)
        ax.set_xlabel("step")
        ax.tick_params(labelsize=fontsize)
        ax.legend(fontsize=fontsize + 1)
    return fig


def test_png_width_and_dpi_are_read_from_the_png():
    set_style()
    fig = _layout((1, 2), 10)
    png = fig_to_png(fig)
    width, dpi = plotting._png_width_dpi(png)
    assert width == plt.imread(io.BytesIO(png)).shape[1]
    assert dpi == plotting.DPI
    assert plotting._png_width_dpi(base64.b64encode(png).decode()) == (width, dpi)
    with pytest.raises(ValueError, match="not a PNG"):
        plotting._png_width_dpi(b"GIF89a" + png[6:])


@pytest.mark.parametrize("shape, fontsize", [((1, 1), 12), ((1, 3), 12), ((2, 2), 7)])
def test_text_size_from_the_png_is_the_text_size_of_a_fresh_drawing(shape, fontsize):
    set_style()
    fig = _layout(shape, fontsize)
    png = fig_to_png(fig)
    fast = plotting._text_pt(fig, plotting._png_width_dpi(png)[0], plotting.DPI)
    slow = plotting.rendered_text_pt(fig)
    assert fast["smallest"] == slow["smallest"]
    for where in plotting.COLUMN_PX:
        assert fast[where] == pytest.approx(slow[where], abs=0.02)
    # three panels in a row, or 7-pt ticks, come out below the book's bound on a phone
    assert (fast["phone"] < plotting.MIN_TEXT_PT) == (shape != (1, 1))


@pytest.mark.parametrize("as_text", [False, True])
def test_the_notebook_formatter_records_each_figures_text_size(as_text):
    from IPython.core.formatters import PNGFormatter

    class Shell:          # what _wrap_png_formatter uses of IPython's shell
        class display_formatter:
            formatters = {"image/png": PNGFormatter()}

    made = []

    def inline(fig):          # the inline backend's formatter: PNG bytes or base64 text
        made.append(fig_to_png(fig))
        return base64.b64encode(made[-1]).decode() if as_text else made[-1]

    png_formatter = Shell.display_formatter.formatters["image/png"]
    png_formatter.for_type(matplotlib.figure.Figure, inline)
    plotting._wrap_png_formatter(Shell)
    plotting._wrap_png_formatter(Shell)          # wrapped once, however often it is applied
    set_style()
    fig = _layout((1, 3), 12)
    data, meta = png_formatter(fig)
    assert len(made) == 1 and data == (base64.b64encode(made[0]).decode() if as_text
                                       else made[0])
    slow = plotting.rendered_text_pt(fig)
    for where in plotting.COLUMN_PX:
        assert meta["attn_text_pt"][where] == pytest.approx(slow[where], abs=0.02)
    assert meta["attn_smallest_text"] == slow["smallest"]


def test_a_smoke_run_draws_the_first_and_last_frames_only(monkeypatch):
    drawn = []

    def draw(v):
        drawn.append(v)
        return _draw(v)

    monkeypatch.setenv("ATTN_MAX_STEPS", "2")
    slider, stack = _parts(figure_slider([1, 2, 3, 4], draw, labels=["a", "b", "c", "d"]))
    assert drawn == [1, 4] and list(slider.options) == ["a", "d"]
    assert len(stack.children) == 2
    monkeypatch.delenv("ATTN_MAX_STEPS")
    drawn.clear()
    slider, stack = _parts(figure_slider([1, 2, 3, 4], draw))
    assert drawn == [1, 2, 3, 4] and len(stack.children) == 4


def _pixels(png: bytes):
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png))).astype(int)


def _savefig_png(fig, dpi=plotting.DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=dpi)
    return buf.getvalue()


def _figures():
    """Figures as the book draws them: plain, constrained layout with a colour bar and
    mathtext, two stacked panels with a legend, a 150-dpi figure saved at 100 dpi."""
    import numpy as np

    set_style()
    rng = np.random.default_rng(0)
    fig1, ax = plt.subplots(figsize=(3.3, 2.1))
    ax.plot(rng.random(12), label="a")
    ax.set(title="plain", xlabel="step")
    fig2, ax = plt.subplots(figsize=(4.6, 3.7), layout="constrained")
    im = ax.imshow(rng.random((9, 9)), cmap="magma")
    fig2.colorbar(im, ax=ax, label=r"$\beta^{uf}_{t,l}$")
    ax.set_title(r"attention $\alpha_{t,l}$")
    fig3, (a1, a2) = plt.subplots(2, 1, figsize=(4.2, 5.1), sharex=True)
    a1.plot(rng.random(30), label="one")
    a1.plot(rng.random(30), label="two")
    a1.legend()
    a2.semilogy(1 + rng.random(30))
    a2.set_xlabel("step")
    fig4, ax = plt.subplots(figsize=(2.9, 2.2), dpi=150, layout="constrained")
    ax.bar(range(5), rng.random(5))
    return [fig1, fig2, fig3, fig4]


@pytest.mark.parametrize("index", range(4))
def test_one_drawing_gives_savefigs_tight_png(index):
    """fig_to_png draws the figure once and cuts its tight box out: the image savefig's two
    drawings give -- the same size and resolution, what is drawn in the same place to
    within a pixel on every side, and the same pixels once aligned (savefig's drawing is
    shifted by a fraction of a pixel, so lines snap and images resample a little
    differently: at most ~4 of 255 a channel on average; a cut 2 pixels off gives ~9) --
    and the figure's dpi as it was."""
    import numpy as np

    fig = _figures()[index]
    dpi_before = fig.dpi
    fast = plotting._tight_png_one_draw(fig, plotting.DPI)
    assert fast is not None and fig.dpi == dpi_before
    slow = _savefig_png(fig)
    assert plotting._png_width_dpi(fast) == plotting._png_width_dpi(slow)
    a, b = _pixels(slow), _pixels(fast)
    assert a.shape == b.shape

    def drawn(img):                           # rows and columns holding anything drawn
        ink = (img != img[0, 0]).any(-1)
        rows, cols = np.flatnonzero(ink.any(1)), np.flatnonzero(ink.any(0))
        return np.array([rows[0], rows[-1], cols[0], cols[-1]])

    assert abs(drawn(a) - drawn(b)).max() <= 1
    best = min(abs(a[1:-1, 1:-1] - b[1 + dy:b.shape[0] - 1 + dy, 1 + dx:b.shape[1] - 1 + dx])
               .mean() for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    assert best < 5.0
    plt.close("all")


def test_fig_to_png_draws_once(monkeypatch):
    """fig_to_png takes the one-drawing path for the book's figures: savefig is not called
    and the figure is drawn once."""
    fig = _figures()[1]
    draws = []
    original = matplotlib.backends.backend_agg.FigureCanvasAgg.draw
    monkeypatch.setattr(matplotlib.backends.backend_agg.FigureCanvasAgg, "draw",
                        lambda self: draws.append(1) or original(self))
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda *a, **k: pytest.fail("savefig called"))
    assert fig_to_png(fig).startswith(PNG_MAGIC) and len(draws) == 1
    plt.close("all")


def test_what_one_drawing_cannot_show_is_saved_by_savefig():
    """Text past the figure's edge (savefig enlarges its canvas to show it) and a
    transparent savefig setting are left to savefig: fig_to_png gives its exact bytes."""
    set_style()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1])
    fig.text(1.05, 0.5, "outside the figure")
    fig2, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1])
    saved = []
    savefig = matplotlib.figure.Figure.savefig

    def counted(self, *args, **kwargs):
        saved.append(self)
        return savefig(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", counted)
        assert plotting._tight_png_one_draw(fig, plotting.DPI) is None
        png = fig_to_png(fig)
        with plt.rc_context({"savefig.transparent": True}):
            assert plotting._tight_png_one_draw(fig2, plotting.DPI) is None
            png2 = fig_to_png(fig2)
    assert saved == [fig, fig2]
    # savefig enlarged its canvas to the text past the figure's right edge
    assert plotting._png_width_dpi(png)[0] > 3 * plotting.DPI
    assert _pixels(png2)[0, 0, 3] == 0                     # transparent
    plt.close("all")


@pytest.mark.parametrize("as_text", [False, True])
def test_the_notebook_shows_ipythons_figure_drawn_once(as_text, monkeypatch):
    """With IPython's own formatter (print_figure, tight box) the notebook's PNG is made by
    one drawing: the image print_figure makes, and the canvas's print_figure (savefig's
    two drawings) is not called."""
    from functools import partial

    from IPython.core import pylabtools
    from IPython.core.formatters import PNGFormatter

    class Shell:
        class display_formatter:
            formatters = {"image/png": PNGFormatter()}

    png_formatter = Shell.display_formatter.formatters["image/png"]
    png_formatter.for_type(matplotlib.figure.Figure,
                           partial(pylabtools.print_figure, fmt="png", base64=as_text))
    plotting._wrap_png_formatter(Shell)
    fig = _figures()[1]
    expected = pylabtools.print_figure(fig, fmt="png")
    calls = []
    monkeypatch.setattr(matplotlib.backend_bases.FigureCanvasBase, "print_figure",
                        lambda *a, **k: calls.append(a))
    data, meta = png_formatter(fig)
    assert not calls
    png = base64.b64decode(data) if as_text else data
    assert isinstance(data, str) == as_text
    a, b = _pixels(expected), _pixels(png)
    assert a.shape == b.shape and abs(a - b).mean() < 5.0
    assert meta["attn_text_pt"] == {k: v for k, v in plotting._png_text_pt(fig, png).items()
                                    if k != "smallest"}
    empty = plt.figure()
    assert png_formatter(empty) is None
    plt.close("all")


def test_the_style_is_seaborns_whitegrid_without_importing_it():
    """set_style writes out what seaborn's set_theme("notebook", "whitegrid", "colorblind")
    sets (seaborn is not imported by attn_core: 0.65 s a process), every parameter but
    seaborn's own default image map; colours compared as RGBA."""
    import subprocess
    import sys

    from matplotlib.colors import to_rgba

    def settings(apply):
        with plt.rc_context():
            plt.rcdefaults()
            apply()
            return {k: plt.rcParams[k] for k in plt.rcParams}

    import seaborn as sns

    ours = settings(set_style)

    def seaborn_then_book():
        sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
        plt.rcParams.update(plotting._BOOK)

    theirs = settings(seaborn_then_book)

    def same(a, b):
        if hasattr(a, "by_key"):
            a, b = a.by_key(), b.by_key()
            return a.keys() == b.keys() and all(
                [to_rgba(x) for x in a[k]] == [to_rgba(y) for y in b[k]] for k in a)
        try:
            return a == b or to_rgba(a) == to_rgba(b)
        except (ValueError, TypeError):
            return str(a) == str(b)

    differ = [k for k in theirs if k != "image.cmap" and not same(ours[k], theirs[k])]
    assert differ == []
    code = ("import sys, attn_core.plotting as p; p.set_style(); "
            "print('seaborn' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
