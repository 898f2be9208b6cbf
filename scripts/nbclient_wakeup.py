"""Notebook execution without a missed wake-up: poll the kernel's channels in short slices.

Seen here (2026-11-23, the Colab rehearsal, chapter 1): nbclient sends a cell, the kernel runs
it and replies, and nbclient then sits idle until the cell's whole timeout has passed -- 300
s, to the millisecond after the kernel's "idle" message -- before it reads the reply and goes
on without an error. Both processes idle, the reply already queued: the wake-up of the await
on the ZMQ socket (jupyter_client's ``AsyncZMQSocketChannel.get_msg`` -> pyzmq's asyncio
``poll``) was missed, and only the poll's timeout looked at the socket again. It happened on
the ipywidgets ``interact`` cell, in 2 of ~8 rehearsals run next to other work (and with a
1200 s timeout it would cost 20 minutes).

:func:`install` makes every ``get_msg(timeout)`` of the asynchronous channels a series of
polls of at most :data:`SLICE` seconds up to the same deadline. A new poll checks the
socket's events at once (pyzmq ``_add_recv_event``), so a missed wake-up costs at most one
slice. Used by ``scripts/execute_notebooks.py`` (the book's execution; jupyter-cache's worker
processes are forked after it, so they inherit it) and ``scripts/colab_rehearsal.py``.
"""

from __future__ import annotations

import time
from queue import Empty

#: Longest single wait on a channel, in seconds.
SLICE = 1.0


def sliced(get_msg, slice_seconds: float = SLICE):
    """``get_msg(self, timeout=None)`` (async) waiting at most ``slice_seconds`` per poll, up
    to ``timeout`` in all (None: forever); raises :class:`queue.Empty` at the deadline."""
    if isinstance(slice_seconds, bool) or not isinstance(slice_seconds, (int, float)) \
            or not slice_seconds > 0:
        raise ValueError(f"slice_seconds must be a number > 0; got {slice_seconds!r}")

    async def get_msg_in_slices(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await get_msg(self, timeout=slice_seconds if left is None
                                     else min(slice_seconds, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    get_msg_in_slices.__wrapped__ = get_msg
    return get_msg_in_slices


def install() -> None:
    """Patch jupyter_client's asynchronous channels (idempotent)."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    if not hasattr(AsyncZMQSocketChannel.get_msg, "__wrapped__"):
        AsyncZMQSocketChannel.get_msg = sliced(AsyncZMQSocketChannel.get_msg)
