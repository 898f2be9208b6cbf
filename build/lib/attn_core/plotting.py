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

import io
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .checks import check_bool, check_real, check_str

__all__ = ["FRAME_BUDGET_BYTES", "fig_to_png", "figure_slider", "heatmap", "set_style"]

#: Above this many bytes of PNG in one slider, :func:`figure_slider` warns: every frame is
#: embedded in the page, so a slider of 100 frames at ~40 KB each already weighs 4 MB.
FRAME_BUDGET_BYTES = 5 * 1024 * 1024

#: Figure resolution used throughout the book (on screen and in the slider frames).
DPI = 100


def set_style() -> None:
    """Apply the book's figure style: seaborn "whitegrid", readable fonts, 100 dpi.

    Call it once at the top of each notebook. It only changes matplotlib's ``rcParams``,
    so it is safe to call repeatedly.
    """
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update(
        {
            "figure.dpi": DPI,
            "savefig.dpi": DPI,
            "figure.figsize": (6.0, 3.5),
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 10,
            "xtick.labelsize": 10,
            "ytick.labelsize": 10,
            "figure.autolayout": False,
            "figure.constrained_layout.use": True,
        }
    )


def fig_to_png(fig: Figure, *, dpi: int | None = None) -> bytes:
    """Render a matplotlib figure to PNG bytes (tight bounding box).

    The figure is *not* closed; see :func:`figure_slider` for a caller that closes it.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    dpi = DPI if dpi is None else check_real("dpi", dpi, 0.0, low_open=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=dpi)
    return buf.getvalue()


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

    frames: list[bytes] = []
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
