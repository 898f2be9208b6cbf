"""scripts/nbclient_wakeup.py: a channel's get_msg(timeout) becomes polls of at most one
slice each, up to the same deadline, so a missed wake-up costs one slice, not the timeout."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from pathlib import Path
from queue import Empty

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "nbclient_wakeup", Path(__file__).resolve().parents[1] / "scripts" / "nbclient_wakeup.py")
wakeup = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(wakeup)


class Channel:
    """A channel whose message is queued from the start but whose poll only notices it
    when a poll ends by its timeout -- the missed wake-up."""

    def __init__(self, polls_before_seen: int):
        self.left = polls_before_seen
        self.timeouts = []

    async def get_msg(self, timeout=None):
        self.timeouts.append(timeout)
        if self.left > 0:
            self.left -= 1
            raise Empty
        return {"msg_type": "execute_reply"}


def run(coro):
    return asyncio.run(coro)


def test_each_poll_waits_at_most_one_slice_and_the_message_is_returned():
    ch = Channel(polls_before_seen=3)
    get = wakeup.sliced(Channel.get_msg, slice_seconds=0.5)
    assert run(get(ch, timeout=300)) == {"msg_type": "execute_reply"}
    assert len(ch.timeouts) == 4 and all(0 < t <= 0.5 for t in ch.timeouts)


def test_no_timeout_polls_in_slices_forever():
    ch = Channel(polls_before_seen=5)
    assert run(wakeup.sliced(Channel.get_msg, 2.0)(ch, timeout=None))["msg_type"] == \
        "execute_reply"
    assert ch.timeouts == [2.0] * 6


def test_the_deadline_still_raises_empty():
    class Never:
        def __init__(self):
            self.timeouts = []

        async def get_msg(self, timeout=None):
            self.timeouts.append(timeout)
            await asyncio.sleep(timeout)
            raise Empty(f"no message in poll {len(self.timeouts)}")

    get = wakeup.sliced(Never.get_msg, slice_seconds=0.02)
    ch = Never()
    t0 = time.monotonic()
    # the last poll's own Empty, re-raised once the deadline has passed
    with pytest.raises(Empty, match=rf"^no message in poll \d+$") as raised:
        run(get(ch, timeout=0.1))
    assert time.monotonic() - t0 < 1.0  # the deadline, not one slice per call forever
    assert str(raised.value) == f"no message in poll {len(ch.timeouts)}"
    assert len(ch.timeouts) >= 3 and all(t <= 0.02 for t in ch.timeouts)


@pytest.mark.parametrize("bad", [0, -1.0, True, "1"])
def test_slice_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match=r"^slice_seconds must be a number > 0; got"):
        wakeup.sliced(Channel.get_msg, bad)


def test_install_patches_jupyter_clients_async_channel_once():
    from jupyter_client.channels import AsyncZMQSocketChannel

    original = AsyncZMQSocketChannel.get_msg
    try:
        wakeup.install()
        patched = AsyncZMQSocketChannel.get_msg
        assert patched.__wrapped__ is original
        wakeup.install()
        assert AsyncZMQSocketChannel.get_msg is patched
    finally:
        AsyncZMQSocketChannel.get_msg = original
