"""One proxied exchange as the rows the store keeps. Pure (no I/O): the recorder process calls
it and writes what it returns.

A request the model answers is stored the way the import of Claude Code's own records stores
them (`importers/api_requests.py`): its system+tools shape once under its hash, each message
once in canonical form (no cache marks, content as a block list), the request as the leading
messages it keeps of the session's previous one plus the hashes it adds, its cache
breakpoints as paths. What canonical form loses, `layout` keeps: which messages had their
content as a string or a one-block list (`forms`), a message that still differs (`patch`),
which parts the body had. The rebuilt body is checked against the body as forwarded before
anything is stored; should it differ, the body itself is kept (`body_raw`). Either way
`rebuild` gives back a body JSON-equal to what the upstream received."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ctxview.context import requests as req
from ctxview.context.request_wire import apply_forms as _apply_forms
from ctxview.context.request_wire import assemble, decode_body
from ctxview.context.request_wire import rebuild as rebuild  # the commands' name for it
from ctxview.importers import api_requests as api
from ctxview.proxy import headers as hdr
from ctxview.proxy import keying, protocols
from ctxview.proxy.answers import Answer
from ctxview.store.proxy_records import PROXY_N, ProxyRow

MAX_RAW = 64 << 20  # an unparsed body kept up to this size (its sha and size always)


@dataclass
class Exchange:
    """What the server saw of one request and its answer."""

    method: str
    path: str  # as forwarded, query included
    upstream: str
    protocol: str
    request_headers: list[tuple[str, str]]
    body: bytes
    started: float  # wall clock
    status: int | None = None
    response_headers: list[tuple[str, str]] | None = None
    first_byte_ms: float | None = None
    total_ms: float | None = None
    outcome: str = "complete"  # complete | cut | incomplete | upstream-failed
    note: str | None = None
    answer: Answer | None = None
    # `--elide`, `--cache auto`: whether the body was changed before the forward (`body` is then
    # what the upstream received), and the elided texts by id, which the recorder stores.
    rewritten: bool = False
    elided: dict[int, str] = field(default_factory=dict)
    # Its record's id, given when it starts: a spool entry recorded twice (a recorder killed
    # between the store's commit and the entry's removal) is the same row again.
    rid: str = field(default_factory=lambda: f"px_{uuid.uuid4().hex}")
    # The body read again from where it is kept (the recorder's spool file): given, `build`
    # lets go of `body` once it is parsed and reads it again only to keep it as it came.
    reread: Callable[[], bytes] | None = field(default=None, repr=False, compare=False)


@dataclass
class Thread:
    """A session's last recorded request, in this process: what the next one keeps of it."""

    prev_id: str | None = None
    prev_hashes: list[str] = field(default_factory=list)
    shapes: set[str] = field(default_factory=set)


@dataclass
class Recorded:
    session: str
    title: str
    row: ProxyRow
    rows: api.Rows | None  # the api_* rows, for a request the model answers
    hashes: list[str]  # its messages, for the thread
    shape: str | None
    texts: dict[int, str] = field(default_factory=dict)  # elided blocks, to store as results


def _header(pairs: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in pairs if k.lower() == name), "")


def parse(ex: Exchange) -> Any:
    """The body as JSON, or None when it is not JSON (or says it is something else)."""
    return _parse(ex.request_headers, ex.body)


def _parse(headers: list[tuple[str, str]], data: bytes) -> Any:
    ctype = _header(headers, "content-type").lower()
    if ctype and "json" not in ctype:
        return None
    raw = decode_body(data, _header(headers, "content-encoding"))
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def find_marks(value: Any, path: list[Any], out: list[dict[str, Any]]) -> None:
    """Every `cache_control` in `value` as Claude Code's `cacheControl` lists them."""
    if isinstance(value, dict):
        if "cache_control" in value:
            out.append({"path": list(path), "value": value["cache_control"]})
        for k, v in value.items():
            if k != "cache_control":
                find_marks(v, [*path, k], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            find_marks(v, [*path, i], out)


def build(ex: Exchange, thread_of: Any, seq: int = 0,
          chains: Mapping[str, str] | None = None) -> Recorded:  # fmt: skip
    """The rows for `ex` as request `seq` of its session (the recorder renumbers them once it
    knows the session). `thread_of(session) -> Thread` gives the session's thread (the
    recorder's memory of it); the thread is not changed here. `chains`: the session of each
    Responses answer seen so far, by its id (`keying.session_key`).

    With `ex.reread`, the body's bytes are taken out of `ex` (its `body` is b"" after) and let
    go of once parsed: a 10 MB body held as bytes, parsed, and as each message's stored text at
    once made the recorder's peak five times the body."""
    data = ex.body
    size, sha = len(data), hashlib.sha256(data).hexdigest()
    body = _parse(ex.request_headers, data)
    reread = ex.reread
    if reread is not None:
        ex.body = data = b""
    else:
        reread = lambda: ex.body  # noqa: E731
    lower = {k.lower(): v for k, v in ex.request_headers}
    session = (
        keying.session_key(ex.protocol, lower, body, chains)
        if body is not None
        else _fallback_session(lower)
    )
    thread: Thread = thread_of(session)
    rid = ex.rid
    answer = ex.answer
    answer_json = _dumps(answer.body) if answer and answer.body is not None else None
    usage = answer.usage() if answer else None
    parts = protocols.split(ex.protocol, body) if body is not None else None
    rows: api.Rows | None = None
    layout: dict[str, Any] | None = None
    raw: bytes | None = None
    hashes: list[str] = []
    shape_hash: str | None = None
    if parts is not None and protocols.recorded(ex.protocol):
        rows, layout, hashes, shape_hash = _request_rows(ex, body, parts, thread, rid, usage, seq)
        if rows is None:
            raw = reread()  # what canonical form could not carry: kept as it came
    else:
        raw = reread()[:MAX_RAW]
    note = ex.note
    if body is None and size:
        note = (note + " " if note else "") + "The body is not JSON; kept as it came."
    row = ProxyRow(
        session=session, seq=seq, request_id=rid,
        api_n=PROXY_N + seq if rows is not None else None, protocol=ex.protocol,
        method=ex.method, path=ex.path, upstream=ex.upstream, started=ex.started,
        first_byte_ms=ex.first_byte_ms, total_ms=ex.total_ms, status=ex.status,
        outcome=ex.outcome, note=note,
        request_headers=json.dumps(hdr.kept(ex.request_headers), ensure_ascii=False),
        response_headers=(json.dumps(hdr.kept(ex.response_headers), ensure_ascii=False)
                          if ex.response_headers is not None else None),
        body_bytes=size, body_sha256=sha, parsed=int(rows is not None),
        layout=json.dumps(layout) if layout is not None else None, body_raw=raw,
        answer=answer_json, answer_raw=answer.raw if answer else None,
        usage=_dumps(usage) if usage is not None else None,
    )  # fmt: skip
    title = keying.title(ex.protocol, body) if body is not None else ""
    return Recorded(session, title, row, rows, hashes, shape_hash, ex.elided)


def _fallback_session(lower: dict[str, str]) -> str:
    """A request whose body is not JSON: the client's session when a header names it."""
    sid = keying.claude_code_session(lower, None)
    if sid:
        return f"cc-{sid}"
    sid = keying.codex_session(lower)
    return f"cx-{sid}" if sid else "px-unparsed"


def _digest_text(text: str) -> str:
    """`req.digest` of the value `text` is the canonical JSON of, hashed a slice at a time:
    its UTF-8 whole would be one more copy of a message as large as the body."""
    h = hashlib.sha256()
    keying.sha256_update(h, text)
    return h.hexdigest()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _request_rows(ex: Exchange, body: Any, parts: protocols.Parts, thread: Thread, rid: str,
                  usage: Any, seq: int) -> tuple[api.Rows | None, dict[str, Any], list[str], str | None]:  # fmt: skip
    marks: list[dict[str, Any]] = []
    shaped_in = {"system": parts.system if parts.has_system else [],
                 "tools": parts.tools if parts.has_tools else [],
                 "messages": parts.messages}  # fmt: skip
    find_marks(shaped_in, [], marks)
    shape = {"system": req.strip_cache(shaped_in["system"]),
             "tools": req.strip_cache(shaped_in["tools"])}  # fmt: skip
    shape_hash = req.digest(shape)
    canon = [req.canonical(m) for m in parts.messages]
    # Each message's text made once, for its hash and, past what the session's previous request
    # had, to be stored (a text the previous one had is let go of at once).
    hashes: list[str] = []
    texts: list[str] = []
    keep = 0
    for i, m in enumerate(canon):
        text = req.canonical_json(m)
        hashes.append(_digest_text(text))
        if keep == i and i < len(thread.prev_hashes) and thread.prev_hashes[i] == hashes[i]:
            keep += 1
        else:
            texts.append(text)
        del text
    # What canonical form loses, found by building the body back as the reader will.
    built, missed = req.build(shape, canon, marks)
    layout: dict[str, Any] = {"has": [parts.has_system, parts.has_tools, parts.has_messages]}
    forms: dict[str, str] = {}
    patch: dict[str, Any] = {}
    for i, (got, sent) in enumerate(zip(built["messages"], parts.messages, strict=True)):
        if got == sent:
            continue
        g, s = got.get("content"), sent.get("content")
        fixed = None
        if isinstance(s, str) and isinstance(g, list):
            forms[str(i)], fixed = "s", _apply_forms([got], {"forms": {"0": "s"}})[0]
        elif isinstance(s, list) and isinstance(g, str):
            forms[str(i)], fixed = "l", _apply_forms([got], {"forms": {"0": "l"}})[0]
        if fixed != sent:
            forms.pop(str(i), None)
            patch[str(i)] = copy.deepcopy(sent)
    if forms:
        layout["forms"] = forms
    if patch:
        layout["patch"] = patch
    again = assemble(ex.protocol, layout, built, parts.params)
    if missed or again != body:
        return None, layout, hashes, None
    rows = api.Rows()
    if shape_hash not in thread.shapes:
        rows.shapes.append((shape_hash, req.canonical_json(shape)))
    # The kept messages were stored with the request before; the rest now (INSERT OR IGNORE).
    rows.blobs.extend(zip(hashes[keep:], texts, strict=True))
    stamp = datetime.fromtimestamp(ex.started, UTC).isoformat()
    rows.requests.append({
        "n": PROXY_N + seq, "id": rid, "timestamp": stamp,
        "querySource": f"proxy:{ex.protocol}", "shapeHash": shape_hash,
        "base": thread.prev_id if keep else None, "keep": keep, "tail": hashes[keep:],
        "params": parts.params, "cacheControl": marks, "requestDigest": None,
    })  # fmt: skip
    if isinstance(usage, dict):
        rows.usage.append((rid, req.canonical_json(usage)))
    return rows, layout, hashes, shape_hash
