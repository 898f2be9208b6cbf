"""Figure style and sliders that keep working in the static HTML book.

The book is published as plain HTML with no Python kernel behind it, so an
``ipywidgets.interact`` slider that re-runs Python on every move would be dead on the page.
:func:`figure_slider` avoids that: it draws *every* frame up front, stores each one as a
PNG inside an :class:`ipywidgets.Stack`, and links the slider to the stack *in the browser*
(``ipywidgets.jslink``). The widget state embedded in the page is then enough for the
slider to flip between the pre-rendered frames with no kernel at all.

Typical use in a notebook::

    from attn_core.plotting import figure_slider, set_style

    set_style()

    def draw(step):
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(history[step])
        return fig

    figure_slider(steps, draw, description="step")
"""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib
import matplotlib.colors
import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .checks import check_bool, check_real, check_str

__all__ = ["COLUMN_PX", "FRAME_BUDGET_BYTES", "MIN_TEXT_PT", "block_diagram", "fig_to_png",
           "figure_slider", "heatmap", "rendered_text_pt", "set_style"]

#: Above this many bytes of PNG in one slider, :func:`figure_slider` warns: every frame is
#: embedded in the page, so a slider of 100 frames at ~40 KB each already weighs 4 MB.
FRAME_BUDGET_BYTES = 5 * 1024 * 1024

#: Figure resolution used throughout the book (on screen and in the slider frames).
DPI = 100

#: The width, in CSS pixels, of the book's text column where figures are shown: measured on
#: the built book (sphinx-book-theme, output area of a code cell) at a 1280 px desktop window
#: and at a 390 px phone. A figure wider than the column is scaled down to fit it.
COLUMN_PX = {"desktop": 688, "phone": 358}

#: The smallest text a figure may show once scaled to the column, in points (CSS: 1 pt =
#: 4/3 px), on a desktop and on a phone; :func:`rendered_text_pt` measures it.
MIN_TEXT_PT = 9.0

#: The book's figure width, in inches: at 100 dpi and 12 pt the smallest text is still
#: 9 pt on a phone (a wider figure is shrunk to the 358 px column and its text with it:
#: 12 pt text allows 497 px, the figure plus savefig's 0.1 in pad on each side).
WIDTH_IN = 4.6


#: What ``seaborn.set_theme(context="notebook", style="whitegrid", palette="colorblind")``
#: sets, written out (seaborn 0.13.2; ``tests/test_plotting.py`` compares them): importing
#: seaborn, and pandas with it, cost 0.65 s of every process that draws. Left out: seaborn's
#: default image colour map ("rocket", its own; every image of the book names its map).
_WHITEGRID = {
    "axes.axisbelow": True, "axes.edgecolor": ".8", "axes.grid": True,
    "axes.labelcolor": ".15", "axes.linewidth": 1.25, "font.sans-serif": [
        "Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "grid.color": ".8", "grid.linewidth": 1.0, "lines.solid_capstyle": "round",
    "patch.edgecolor": "w", "patch.force_edgecolor": True, "text.color": ".15",
    "xtick.bottom": False, "xtick.color": ".15", "xtick.major.size": 6.0,
    "xtick.major.width": 1.25, "xtick.minor.size": 4.0, "xtick.minor.width": 1.0,
    "ytick.color": ".15", "ytick.left": False, "ytick.major.size": 6.0,
    "ytick.major.width": 1.25, "ytick.minor.size": 4.0, "ytick.minor.width": 1.0,
    # seaborn's "colorblind" palette
    "axes.prop_cycle": matplotlib.cycler(color=[
        "#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4",
        "#949494", "#ece133", "#56b4e9"]),
}


#: The book's own settings over that style: its dpi, figure width and readable fonts.
_BOOK = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.figsize": (WIDTH_IN, 3.2),
    "font.size": 12,
    "axes.titlesize": 13,
    "axes.labelsize": 12.5,
    "legend.fontsize": 12,
    "legend.title_fontsize": 12,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "figure.titlesize": 13,
    "figure.autolayout": False,
    "figure.constrained_layout.use": True,
}


def set_style() -> None:
    """Apply the book's figure style: seaborn "whitegrid", readable fonts, 100 dpi.

    Call it once at the top of each notebook; it is safe to call repeatedly. Besides
    matplotlib's ``rcParams`` it asks IPython (when running in one) to record, with every
    figure it displays, the size of its smallest text once the figure is fitted to the
    book's column (:func:`rendered_text_pt`), in the output's metadata
    (``attn_text_pt``), where the book's tests read it.
    """
    plt.rcParams.update(_WHITEGRID)
    plt.rcParams.update(_BOOK)
    _record_text_size_in_ipython()


def _text_artists(fig: Figure):
    from matplotlib.text import Text

    ticks: dict = {}          # per axes, its tick labels (asked once: each ask re-ticks)
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        # tick labels of ticks outside the axis range are never drawn
        ax = t.axes
        if ax is not None:
            if ax not in ticks:
                ticks[ax] = ({id(x) for x in ax.get_xticklabels()},
                             {id(y) for y in ax.get_yticklabels()})
            xs, ys = ticks[ax]
            if id(t) in xs or id(t) in ys:
                x, y = t.get_position()
                lo_x, hi_x = sorted(ax.get_xlim())
                lo_y, hi_y = sorted(ax.get_ylim())
                if id(t) in xs and not lo_x - 1e-9 <= x <= hi_x + 1e-9:
                    continue
                if id(t) in ys and not lo_y - 1e-9 <= y <= hi_y + 1e-9:
                    continue
        yield t


def rendered_text_pt(fig: Figure, *, dpi: int | None = None) -> dict:
    """The size, in points, of a figure's smallest text once shown in the book's column.

    The figure is saved as the book saves it (``dpi``, tight bounding box), shown at its
    natural size or scaled down to :data:`COLUMN_PX` when wider, so text of ``s`` points
    appears at ``s * min(1, column / width)`` points. Returns ``{"desktop": pt, "phone": pt,
    "smallest": text}`` (the text of the smallest label, to find it); a figure without text
    gives ``inf``. :data:`MIN_TEXT_PT` is the book's bound."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    dpi = DPI if dpi is None else check_real("dpi", dpi, 0.0, low_open=True)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width_px = fig.get_tightbbox(renderer).width * dpi + 2 * 0.1 * dpi  # savefig's pad
    return _text_pt(fig, width_px, dpi)


def _text_pt(fig: Figure, width_px: float, dpi: float) -> dict:
    """:func:`rendered_text_pt` for a figure already drawn ``width_px`` pixels wide at
    ``dpi`` (e.g. the PNG that :func:`fig_to_png` or the notebook's formatter just made):
    no second drawing."""
    texts = list(_text_artists(fig))
    if not texts:
        return {"desktop": float("inf"), "phone": float("inf"), "smallest": ""}
    small = min(texts, key=lambda t: t.get_fontsize())
    size = float(small.get_fontsize())
    # s pt at `dpi` is s * dpi / 72 image pixels; a CSS pixel is 0.75 pt
    out = {where: round(float(size * dpi / 72 * min(1.0, col / width_px) * 0.75), 2)
           for where, col in COLUMN_PX.items()}
    out["smallest"] = small.get_text()[:40]
    return out


def _png_width_dpi(data) -> tuple[int, float | None]:
    """A PNG's width in pixels and its resolution in dots per inch (its pHYs chunk, which
    matplotlib writes; None without one). ``data``: the bytes, or their base64 text."""
    if isinstance(data, str):
        data = base64.b64decode(data)
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG image")
    width = int.from_bytes(data[16:20], "big")
    at = 8
    while at + 8 <= len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind = data[at + 4:at + 8]
        if kind == b"pHYs" and data[at + 16] == 1:        # unit: metres
            return width, round(int.from_bytes(data[at + 8:at + 12], "big") * 0.0254, 1)
        if kind == b"IDAT":
            break
        at += 12 + length
    return width, None


def _png_text_pt(fig: Figure, png) -> dict:
    """:func:`rendered_text_pt` of ``fig`` measured on ``png``, the image just made of it
    (bytes or base64 text): its width, and its resolution where it records one."""
    width, dpi = _png_width_dpi(png)
    return _text_pt(fig, width, dpi or DPI)


def _record_text_size_in_ipython() -> None:
    """Wrap IPython's PNG formatter for figures so that each displayed figure carries its
    :func:`rendered_text_pt` in the output's metadata. The inline backend installs its own
    formatter when it loads (and again on ``%matplotlib inline``), so the wrapper is also
    re-applied before every cell runs."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return
    try:   # load the backend now (matplotlib loads it lazily): it installs its formatter
        plt._get_backend_mod()
    except AttributeError:
        pass
    _wrap_png_formatter(ip)
    if not getattr(ip, "_attn_text_hook", False):
        ip.events.register("pre_run_cell", lambda *args: _wrap_png_formatter(ip))
        ip._attn_text_hook = True


def _wrap_png_formatter(ip) -> None:
    png = ip.display_formatter.formatters.get("image/png")
    if png is None:
        return
    try:
        draw = png.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(draw, "_attn_records_text", False):
        return

    def with_text_size(fig, *args, **kwargs):
        data = _inline_png(draw, fig, *args, **kwargs)
        if data is None:
            return None
        png = data[0] if isinstance(data, tuple) else data
        try:                # measured on the PNG just made: the figure is not drawn again
            sizes = _png_text_pt(fig, png)
        except (ValueError, TypeError, IndexError):
            sizes = rendered_text_pt(fig)
        meta = {"attn_text_pt": {k: v for k, v in sizes.items()
                                 if k != "smallest" and v != float("inf")},
                "attn_smallest_text": sizes["smallest"]}
        if isinstance(data, tuple):        # (data, metadata) already
            data, more = data
            meta = {**more, **meta}
        return data, meta

    with_text_size._attn_records_text = True  # type: ignore[attr-defined]
    png.for_type(Figure, with_text_size)


def _inline_png(draw, fig, *args, **kwargs):
    """What ``draw``, IPython's PNG formatter for figures, returns for ``fig``; where it is
    IPython's own ``print_figure`` (tight box, the figure's dpi), made with one drawing of
    the figure (:func:`_tight_png_one_draw`) instead of savefig's two."""
    import functools

    from IPython.core import pylabtools

    kw = getattr(draw, "keywords", None) or {}
    if (isinstance(draw, functools.partial) and draw.func is pylabtools.print_figure
            and not draw.args and not args and not kwargs
            and set(kw) <= {"fmt", "base64", "bbox_inches"} and kw.get("fmt") == "png"
            and kw.get("bbox_inches", "tight") == "tight"):
        if not fig.axes and not fig.lines:
            return None                           # as print_figure: nothing to show
        png = _tight_png_one_draw(fig, fig.dpi)
        if png is not None:
            return base64.b64encode(png).decode("ascii") if kw.get("base64") else png
    return draw(fig, *args, **kwargs)


def fig_to_png(fig: Figure, *, dpi: int | None = None) -> bytes:
    """Render a matplotlib figure to PNG bytes (tight bounding box).

    The figure is *not* closed; see :func:`figure_slider` for a caller that closes it.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    dpi = DPI if dpi is None else check_real("dpi", dpi, 0.0, low_open=True)
    png = _tight_png_one_draw(fig, dpi)
    if png is None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight", dpi=dpi)
        png = buf.getvalue()
    return png


def _tight_png_one_draw(fig: Figure, dpi: float) -> bytes | None:
    """``savefig(bbox_inches="tight")`` with one drawing instead of two: the figure is drawn
    once on its Agg canvas, its tight box (padded by ``savefig.pad_inches``) is cut out of
    the pixels, and the cut is written as matplotlib writes a PNG. savefig draws the figure
    a first time only to find that box, then again shifted into it by a fraction of a pixel
    (the same image, each line or letter within a pixel of where savefig puts it). A third
    of a slider frame's time, measured.
    None where this shortcut does not apply -- a canvas other than Agg, a box reaching past
    the figure's edge (savefig would enlarge the canvas), a transparent or non-default
    savefig setting -- and the caller saves the usual way."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        return None
    rc = plt.rcParams
    if (rc["savefig.transparent"] or rc["savefig.facecolor"] != "auto"
            or rc["savefig.edgecolor"] != "auto"
            or rc["savefig.bbox"] not in (None, "tight")):
        return None
    old_dpi = fig.dpi
    try:
        fig.dpi = dpi
        FigureCanvasAgg.draw(canvas)
        box = fig.get_tightbbox(canvas.get_renderer())
        w_in, h_in = fig.get_size_inches()
        if box is None or box.x0 < 0 or box.y0 < 0 or box.x1 > w_in or box.y1 > h_in:
            return None     # something drawn past the figure's edge: savefig shows it
        box = box.padded(rc["savefig.pad_inches"])
        pixels = np.asarray(canvas.buffer_rgba())
        # savefig's canvas: int(width * dpi) x int(height * dpi) pixels, the figure's
        # face colour where the padding reaches past the figure's edge
        width, height = int(box.width * dpi), int(box.height * dpi)
        face = np.round(np.array(matplotlib.colors.to_rgba(fig.patch.get_facecolor()))
                        * 255).astype(np.uint8)
        cut = np.empty((height, width, 4), dtype=np.uint8)
        cut[:] = face
        # the figure's pixel at the cut's (0, 0). savefig shifts the figure by the box's
        # fractional corner, so no whole-pixel cut equals its image everywhere (lines snap
        # to pixels either way, images resample); rounding x and raising y gave the
        # smallest difference over 16 figures (mean 1.4 of 255 a channel, at most 4.4)
        left = int(np.round(box.x0 * dpi))
        top = int(np.ceil(pixels.shape[0] - box.y1 * dpi))
        r0, c0 = max(top, 0), max(left, 0)
        r1 = min(top + height, pixels.shape[0])
        c1 = min(left + width, pixels.shape[1])
        cut[r0 - top:r1 - top, c0 - left:c1 - left] = pixels[r0:r1, c0:c1]
        buf = io.BytesIO()
        matplotlib.image.imsave(buf, cut, format="png", dpi=dpi)   # as savefig writes
        return buf.getvalue()
    finally:
        fig.dpi = old_dpi


def figure_slider(
    values: Sequence[Any],
    draw: Callable[[Any], Figure],
    description: str = "",
    labels: Sequence[str] | None = None,
    readout: bool = True,
):
    """A slider over pre-rendered figures that works in the static (kernel-less) book.

    Parameters
    ----------
    values:
        The values to show, in slider order (e.g. training steps, or a hyper-parameter).
    draw:
        ``draw(value) -> matplotlib.figure.Figure``. Called once per value, up front; each
        figure is rendered to PNG and then closed, so it is not displayed a second time by
        the notebook's inline backend.
    description:
        Label shown left of the slider.
    labels:
        Optional text shown for each value (defaults to ``str(value)``); must have one
        entry per value.
    readout:
        Whether the slider shows the current label.

    Returns
    -------
    ipywidgets.VBox
        ``VBox([slider, stack])``: a :class:`~ipywidgets.SelectionSlider` whose ``index`` is
        linked in the browser (``jslink``) to the ``selected_index`` of an
        :class:`~ipywidgets.Stack` holding one :class:`~ipywidgets.Image` per value.

    Notes
    -----
    Every frame is embedded in the page (about 40 KB for a 5x3-inch figure at 100 dpi);
    a :class:`UserWarning` is issued when the total exceeds :data:`FRAME_BUDGET_BYTES`.
    In a smoke run (``ATTN_MAX_STEPS``), never published, only the first and last values
    are drawn.
    """
    import ipywidgets as widgets  # imported here: attn_core itself does not need a frontend

    if isinstance(values, (str, bytes)):
        raise TypeError("values must be a sequence of values, not a string")
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"values must be a sequence; got {type(values).__name__}") from None
    if len(values) == 0:
        raise ValueError("values must contain at least one value; got an empty sequence")
    if not callable(draw):
        raise TypeError(f"draw must be callable (value -> Figure); got {type(draw).__name__}")
    check_str("description", description)
    check_bool("readout", readout)
    if labels is None:
        labels = [str(v) for v in values]
    else:
        if isinstance(labels, (str, bytes)):
            raise TypeError("labels must be a sequence of strings, not a single string")
        try:
            labels = list(labels)
        except TypeError:
            raise TypeError(f"labels must be a sequence of strings; got "
                            f"{type(labels).__name__}") from None
        bad = [label for label in labels if not isinstance(label, str)]
        if bad:
            raise TypeError(f"labels must be strings (one per value); got "
                            f"{type(bad[0]).__name__} {bad[0]!r}")
        if len(labels) != len(values):
            raise ValueError(
                f"labels must have one entry per value: got {len(labels)} labels "
                f"for {len(values)} values"
            )
    if len(set(labels)) != len(labels):
        raise ValueError("labels (or str(values) when labels is None) must be distinct")
    from .config import env_max_steps
    if env_max_steps() is not None and len(values) > 2:
        # a smoke run (ATTN_MAX_STEPS) proves plumbing and is never published: its slider
        # draws the first and last values (the code path of every frame, at two values)
        values, labels = [values[0], values[-1]], [labels[0], labels[-1]]

    frames: list[bytes] = []
    smallest = {where: float("inf") for where in COLUMN_PX}
    for value in values:
        fig = draw(value)
        if not isinstance(fig, Figure):
            if fig is not None and hasattr(fig, "figure"):
                plt.close(fig.figure)
            raise TypeError(
                f"draw({value!r}) must return a matplotlib Figure; got {type(fig).__name__}"
            )
        try:
            frames.append(fig_to_png(fig))
            sizes = _png_text_pt(fig, frames[-1])
            smallest = {w: min(smallest[w], sizes[w]) for w in COLUMN_PX}
        finally:
            plt.close(fig)

    total = sum(len(f) for f in frames)
    if total > FRAME_BUDGET_BYTES:
        warnings.warn(
            f"figure_slider embeds {len(frames)} frames totalling {total / 2**20:.1f} MB in the "
            f"page (budget {FRAME_BUDGET_BYTES / 2**20:.0f} MB); use fewer values, smaller "
            "figures or a lower dpi",
            UserWarning,
            stacklevel=2,
        )

    # A figure wider than the page's column shrinks to fit it (aspect kept); the widgets'
    # default 2 px margin would otherwise push it 4 px past the column (a scrollbar).
    images = [widgets.Image(value=png, format="png",
                            layout=widgets.Layout(max_width="100%", height="auto", margin="0"))
              for png in frames]
    stack = widgets.Stack(children=images, selected_index=0)
    slider = widgets.SelectionSlider(
        options=labels,
        index=0,
        description=description,
        readout=readout,
        continuous_update=True,
        layout=widgets.Layout(width="min(100%, 32rem)"),
        style={"description_width": "initial"},
    )
    link = widgets.jslink((slider, "index"), (stack, "selected_index"))
    box = widgets.VBox([slider, stack])
    box.add_class("attn-figure-slider")  # lets tests (and CSS) find the book's sliders
    # the smallest text of any frame, fitted to the column (rendered_text_pt), for the tests
    for where, pt in smallest.items():
        if pt != float("inf"):
            box.add_class(f"attn-text-pt-{where}-{pt:.1f}")
    # Keep a Python reference so the Link widget stays alive with the box.
    box._attn_link = link  # type: ignore[attr-defined]
    return box


def heatmap(ax, matrix, *, colorbar: bool = False, **imshow_kwargs):
    """``ax.imshow(matrix)`` for attention maps and count tables, without the style's grid lines
    (which would cut through the cells). Returns the image; ``colorbar=True`` adds one.

    ``matrix``: a non-empty 2-D array of numbers (NaN cells are drawn blank), or an (M, N, 3|4)
    RGB(A) image."""
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes; got {type(ax).__name__}")
    check_bool("colorbar", colorbar)
    try:
        arr = np.asarray(matrix.detach().cpu() if hasattr(matrix, "detach") else matrix)
    except (TypeError, ValueError):
        raise TypeError(f"matrix must be a 2-D array of numbers; got a ragged or mixed "
                        f"{type(matrix).__name__}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"matrix must be an array of numbers; got dtype {arr.dtype}")
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4))) or arr.size == 0:
        raise ValueError(f"matrix must be a non-empty 2-D array (or an M x N x 3|4 image); got "
                         f"shape {arr.shape}")
    im = ax.imshow(arr, **{"cmap": "viridis", "aspect": "auto", **imshow_kwargs})
    ax.grid(False)
    # rows and columns are indices: ticks on whole numbers only (not 0.0, 2.5, ...)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    if colorbar:
        ax.figure.colorbar(im, ax=ax, shrink=0.8)
    return im


#: Fill colours of the kinds of box in :func:`block_diagram` (the colour-blind palette's
#: light tints): data in and out, recurrent or hidden states, attention, learned weights,
#: anything else.
DIAGRAM_COLORS = {"input": "#d6e6f5", "state": "#fde2c4", "attention": "#d5f0dc",
                  "output": "#f6d5e5", "weight": "#ececec", "other": "#ffffff"}


def block_diagram(boxes: dict, arrows: Sequence, *, size: tuple[float, float] | None = None,
                  title: str | None = None) -> Figure:
    """A model drawn as boxes and arrows, in the book's style (a chapter's model diagram).

    ``boxes``: ``{name: (x, y, label)}`` or ``{name: (x, y, label, kind)}``: the box's centre
    in the unit square (0..1 each way, y upwards), its text (mathtext allowed, ``"\\n"`` for
    lines) and its kind, a key of :data:`DIAGRAM_COLORS` (default ``"other"``).
    ``arrows``: ``(from, to)`` or ``(from, to, label)`` pairs of box names; an arrow runs
    from edge to edge and its label sits at its middle. ``size``: inches (default the
    book's width, 3.4 high). Returns the figure (no axes shown)."""
    if not isinstance(boxes, dict) or not boxes:
        raise TypeError("boxes must be a non-empty dict {name: (x, y, label[, kind])}")
    w, h = (WIDTH_IN, 3.4) if size is None else size
    check_real("size[0] (width, inches)", w, 0.0, low_open=True)
    check_real("size[1] (height, inches)", h, 0.0, low_open=True)
    fig, ax = plt.subplots(figsize=(w, h))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    texts = {}
    for name, spec in boxes.items():
        if not isinstance(spec, tuple) or len(spec) not in (3, 4):
            plt.close(fig)
            raise TypeError(f"boxes[{name!r}] must be (x, y, label) or (x, y, label, kind); "
                            f"got {spec!r}")
        x, y, label = spec[:3]
        kind = spec[3] if len(spec) == 4 else "other"
        if kind not in DIAGRAM_COLORS:
            plt.close(fig)
            raise ValueError(f"boxes[{name!r}]: kind must be one of {sorted(DIAGRAM_COLORS)}; "
                             f"got {kind!r}")
        for what, v in (("x", x), ("y", y)):
            if not isinstance(v, (int, float)) or not 0 <= v <= 1:
                plt.close(fig)
                raise ValueError(f"boxes[{name!r}]: {what} must be a number in [0, 1]; "
                                 f"got {v!r}")
        texts[name] = ax.text(x, y, label, ha="center", va="center", fontsize=12,
                              bbox=dict(boxstyle="round,pad=0.35", fc=DIAGRAM_COLORS[kind],
                                        ec="0.25", lw=1.0), zorder=3)
    for arrow in arrows:
        if not isinstance(arrow, tuple) or len(arrow) not in (2, 3):
            plt.close(fig)
            raise TypeError(f"each arrow must be (from, to) or (from, to, label); got {arrow!r}")
        a, b = arrow[:2]
        for end in (a, b):
            if end not in texts:
                plt.close(fig)
                raise ValueError(f"arrow {arrow!r} names {end!r}, which is not a box "
                                 f"(boxes: {sorted(texts)})")
        ax.annotate("", xy=(0.5, 0.5), xycoords=texts[b], xytext=(0.5, 0.5),
                    textcoords=texts[a],
                    arrowprops=dict(arrowstyle="-|>", color="0.25", lw=1.2, shrinkA=2,
                                    shrinkB=2, patchA=texts[a].get_bbox_patch(),
                                    patchB=texts[b].get_bbox_patch()), zorder=2)
        if len(arrow) == 3:
            (xa, ya), (xb, yb) = texts[a].get_position(), texts[b].get_position()
            ax.text((xa + xb) / 2, (ya + yb) / 2, arrow[2], ha="center", va="center",
                    fontsize=12, color="0.2", zorder=4,
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none"))
    if title:
        ax.set_title(title)
    return fig
