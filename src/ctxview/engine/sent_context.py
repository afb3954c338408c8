"""The context as sent (src/ctxview/context/state.py), kept in step with every event a session
writes: a stride the elision window takes at a request's start is written just before the event
that starts it, a compaction that became due just after the step; after a resume or another
writer's events, rebuilt from the store when next asked for."""

from __future__ import annotations

import json
import time

from ctxview.context.state import ContextState, load_texts
from ctxview.rules.config import Config
from ctxview.store.reader import Reader
from ctxview.store.records import Body, Event
from ctxview.store.writer import Writer


class SentContext:
    """One session's context as sent, and the writing of its steps."""

    def __init__(self, writer: Writer, session_id: str, config: Config) -> None:
        self.writer = writer
        self.session_id = session_id
        self.config = config
        self.state = ContextState(config)
        self.stale = False  # not fed during a batch (see `write`): rebuild first

    async def write(self, events: list[Event], bodies: list[Body] | None = None) -> None:
        """Write one step, keeping the context as sent in step with it: a stride the window takes
        at a request's start is written just before the event that starts it, and a compaction
        that became due (`compaction.above_tokens`) just after the step."""
        state = self.state
        if state.inert and self.writer.batching:
            # An import: with no elision and no compaction threshold the state adds no event,
            # so it is not kept in step (a tenth of the import's time); `context()` rebuilds it
            # from the store if it is ever asked for.
            self.stale = True
            await self.writer.append(self.session_id, events, bodies or [],
                                     fts_max_chars=self.config["fts.max_chars"])  # fmt: skip
            return
        out: list[Event] = []
        due = False
        for ev in events:
            if state.starts_request(ev) and (stride := self.stride_event(ev.ts)):
                out.append(stride)
            # Results' texts are not held in memory (an import may be huge): `context()` loads
            # the ones it sends from the store.
            due = state.feed(ev) or due
            out.append(ev)
        if due:
            out.append(Event(ts=out[-1].ts, kind="compact_due", data=json.dumps({
                "request": len(state.requests), "tokens": state.tokens(),
                "above_tokens": state.above_tokens})))  # fmt: skip
        await self.writer.append(self.session_id, out, bodies or [],
                                 fts_max_chars=self.config["fts.max_chars"])  # fmt: skip

    def stride_event(self, ts: float) -> Event | None:
        """Move the elision window for the next request; the `elide` event when it elided."""
        state = self.state
        rids = state.advance()
        if not rids:
            return None
        data = {"request": len(state.requests) + 1, "boundary": state.boundary, "rids": rids}
        return Event(ts=ts, kind="elide", data=json.dumps(data))

    async def step(self) -> None:
        if self.stale:
            self.state = ContextState(self.config)
            await self.replay()
            self.stale = False
        if stride := self.stride_event(time.time()):
            await self.writer.append(self.session_id, [stride])
        await load_texts(self.state.msgs, self._shown_texts)

    async def _shown_texts(self, rids: list[int]) -> dict[int, str]:
        """Results' shown text from the store (after a resume, the state holds sizes only)."""
        await self.writer.flush()
        out: dict[int, str] = {}
        async with await Reader.open(self.writer.path) as reader:
            for i in range(0, len(rids), 500):
                out.update(await reader.shown(self.session_id, rids[i : i + 500]))
        return out

    async def replay(self) -> None:
        await self.writer.flush()
        async with await Reader.open(self.writer.path) as reader:
            after = 0
            while page := await reader.events(self.session_id, after=after, limit=5000):
                for ev in page:
                    self.state.feed(ev)
                after = page[-1].seq
