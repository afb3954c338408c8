"""A recall of a text the proxy elided, which may come before the text is in the store.

The proxy decides a stub's id from the text alone (`rules.elide.content_id`) and forwards the
request at once; its recorder process stores the text after the exchange ends. A model that is
quick to ask for it (a scripted one, or any on a busy machine) can recall the id before then:
such an id waits for its text, up to `LATE_SECONDS`. Any other id is answered at once, found or
not: the store hands those out only for what it already holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ctxview.rules.elide import is_content_id

T = TypeVar("T")

# Well past the recorder's own time: a 10 MB exchange costs it about 200 ms of CPU, and a
# recorder that died is started again after 1 s.
LATE_SECONDS = 5.0
FIRST_PAUSE, LAST_PAUSE = 0.02, 0.25


async def stored(rid: int, look: Callable[[], Awaitable[T | None]],
                 seconds: float = LATE_SECONDS) -> T | None:  # fmt: skip
    """`look()`, again until it finds something if `rid` is a proxy's id, for up to `seconds`."""
    found = await look()
    if found is not None or not is_content_id(rid):
        return found
    deadline = time.monotonic() + seconds
    pause = FIRST_PAUSE
    while found is None and (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(pause, left))
        pause = min(pause * 2, LAST_PAUSE)
        found = await look()
    return found
