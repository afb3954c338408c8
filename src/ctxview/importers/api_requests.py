"""Claude Code's own record of every API request (2.1.3xx session JSONL), rebuilt exactly.

Claude Code writes its requests delta-encoded:

- `api-request-shape`: `shapeHash` and `shape` = the request's `system` blocks and `tools`;
- `api-request-blob`: `hash` and `message` = one message of a request;
- `api-request`: `keep` (the leading messages of its `base` request it keeps; of the previous
  one when `base` is absent and `keep` is 0 nothing is kept), `tail` (the hashes of the messages
  it appends), `shapeHash`, `params`, `cacheControl` (paths and values of the cache
  breakpoints), `querySource`, `requestDigest`.

Found by running the pinned 2.1.328 against a scripted server (tests/agents/test_claude_requests.py):

- a message's hash is SHA-256 of its canonical JSON (keys sorted, no spaces, UTF-8 as is) with
  every `cache_control` removed and a string `content` written as one text block;
- a `tail` hash without a blob record is a message of the transcript itself (a tool result, a
  prompt, the assistant's own message with its split records merged), matched by that hash;
- on the wire a user or system message whose content is one plain text block is a string;
  assistant messages keep their block list; `cacheControl` paths of `messages` are applied to
  that content (a string first becomes one text block);
- `system` as sent has one more block first, `x-anthropic-billing-header: …`, that the shape
  leaves out (its `cacheControl` paths count the shape's blocks);
- `requestDigest` is the hash of `{system, tools, messages}` merged with `params`, the messages
  in canonical form (block lists) with the cache marks on, the billing header left out.

The request model and its rebuilding are `context/requests.py`; here the records are collected
as the transcript is read and written as the store's rows.
"""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ctxview.context.requests import canonical, canonical_json, digest
from ctxview.store.requests import RequestRecords, RequestRow
from ctxview.store.writer import Writer

KINDS = frozenset({"api-request", "api-request-shape", "api-request-blob"})


# Records of the same releases that carry nothing to rebuild a request from (counted, not listed).
QUIET_KINDS = frozenset({"tools-used", "atis-latch", "queue-operation", "last-prompt",
                         "attachment"})  # fmt: skip


COST_KIND = "cost-state"


_POOL = 512  # transcript messages kept in memory for a later request's tail


_SINCE = 64  # of them, the ones since the last request saved with the parser's state


@dataclass
class Rows:
    """What one record adds to the store."""

    shapes: list[tuple[str, str]] = field(default_factory=list)  # (hash, shape JSON)
    blobs: list[tuple[str, str]] = field(default_factory=list)  # (hash, canonical message JSON)
    requests: list[dict[str, Any]] = field(default_factory=list)
    usage: list[tuple[str, str]] = field(default_factory=list)  # (request id, usage JSON)
    cost: str | None = None  # the latest cost-state record, JSON

    def __bool__(self) -> bool:
        return bool(self.shapes or self.blobs or self.requests or self.usage or self.cost)


class Collector:
    """Follows a transcript's records; returns the rows to store for each. Transcript messages
    are kept (the last `_POOL`) so a request's tail can name them; a hash named before its
    message appears waits in `wanted`."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state or {}
        self.wanted: set[str] = set(state.get("wanted", []))
        self.n = int(state.get("n", 0))  # requests stored so far (the next one's place)
        self.stored: set[str] = set()  # hashes written by this run (a repeat is skipped)
        self.pool: OrderedDict[str, dict[str, Any]] = OrderedDict()
        # Transcript messages not hashed yet: hashing waits for a request that needs them, so a
        # transcript without request records costs no hashing.
        self.raw: deque[dict[str, Any]] = deque(state.get("since", []), maxlen=_POOL)
        # The transcript messages since the last request: the next request's tail names them,
        # so they are saved with the state (the next import may be another process).
        self.since: list[dict[str, Any]] = list(state.get("since", []))
        self._asst: tuple[str, list[Any]] | None = None  # assistant message being merged

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"wanted": sorted(self.wanted), "n": self.n}
        if self.n and self.since:  # only once the file is known to carry request records
            out["since"] = self.since[-_SINCE:]
        return out

    def _keep(self, rows: Rows, h: str, message: dict[str, Any]) -> None:
        if h not in self.stored:
            self.stored.add(h)
            rows.blobs.append((h, canonical_json(message)))
        self.wanted.discard(h)

    def _hash_raw(self) -> None:
        while self.raw:
            m = canonical(self.raw.popleft())
            h = digest(m)
            self.pool[h] = m
            self.pool.move_to_end(h)
        while len(self.pool) > _POOL:
            self.pool.popitem(last=False)

    def _offer(self, rows: Rows, message: dict[str, Any]) -> None:
        self.raw.append(message)
        self.since.append(message)
        if len(self.since) > 2 * _SINCE:
            del self.since[:-_SINCE]
        if self.wanted:
            self._hash_raw()
            for h in [h for h in self.wanted if h in self.pool]:
                self._keep(rows, h, self.pool[h])

    def feed(self, rec: dict[str, Any]) -> Rows:
        rows = Rows()
        kind = rec.get("type")
        if kind in ("user", "assistant"):
            self._transcript(rec, rows)
        elif kind == "api-request-shape":
            rows.shapes.append((str(rec["shapeHash"]), canonical_json(rec["shape"])))
        elif kind == "api-request-blob":
            self._keep(rows, str(rec["hash"]), canonical(rec["message"]))
        elif kind == "api-request":
            self._hash_raw()
            for h in rec.get("tail") or []:
                if h in self.stored:
                    continue
                if h in self.pool:
                    self._keep(rows, h, self.pool[h])
                else:
                    self.wanted.add(h)
            rows.requests.append({**rec, "n": self.n})
            self.since = []
            self.n += 1
        elif kind == COST_KIND:
            rows.cost = canonical_json({k: v for k, v in rec.items()
                                        if k not in ("type", "sessionId")})  # fmt: skip
        return rows

    def _transcript(self, rec: dict[str, Any], rows: Rows) -> None:
        msg = rec.get("message")
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            return
        if msg["role"] == "assistant":
            mid = str(msg.get("id") or "")
            blocks = b if isinstance(b := msg.get("content"), list) else []
            if self._asst is not None and self._asst[0] == mid and mid:
                self._asst[1].extend(blocks)
            else:
                self._asst = (mid, list(blocks))
            self._offer(rows, {"role": "assistant", "content": list(self._asst[1])})
            if rec.get("requestRef") and isinstance(msg.get("usage"), dict):
                rows.usage.append((str(rec["requestRef"]), canonical_json(msg["usage"])))
            return
        self._asst = None
        self._offer(rows, {"role": "user", "content": msg.get("content")})


def _ts(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def stored_rows(rows: Rows) -> RequestRecords:
    """What one record added, as the store's request tables hold it."""
    return RequestRecords(
        shapes=rows.shapes, blobs=rows.blobs, usage=rows.usage, cost=rows.cost,
        requests=[RequestRow(
            r["n"], str(r.get("id") or ""), _ts(r.get("timestamp")), r.get("querySource"),
            r.get("shapeHash"), r.get("base"), int(r.get("keep") or 0),
            json.dumps(r.get("tail") or []), canonical_json(r.get("params") or {}),
            canonical_json(r.get("cacheControl") or []), r.get("requestDigest"))
            for r in rows.requests])  # fmt: skip


async def write_rows(writer: Writer, session: str, rows: Rows) -> None:
    """Store what one record added (inside the import's batch)."""
    await writer.write_requests(session, stored_rows(rows))
