"""The guard's decisions as pure functions: which Host, Origin and proofs `ctxview serve` takes."""

from __future__ import annotations

from ctxview.serve.guard import Guard, Tickets, header_token, is_loopback

TOKEN = "t0ken-" + "a" * 37


def refusal(guard: Guard, host: str | None = "127.0.0.1:8000", origin: str | None = None,
            token: str | None = TOKEN, ticket_ok: bool = False) -> str | None:  # fmt: skip
    return guard.refusal(host, origin, token, None, None, ticket_ok)


def test_loopback_bind_answers_to_its_loopback_names_only() -> None:
    g = Guard.for_server("127.0.0.1", 8000, token=TOKEN)
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LocalHost:8000"):
        assert refusal(g, host) is None, host
    for host in ("127.0.0.1", "127.0.0.1:8001", "evil.test:8000", "localhost.evil.test:8000",
                 "10.0.0.2:8000", "", None, "127.0.0.1:8000@evil.test"):  # fmt: skip
        reason = refusal(g, host)
        assert reason is not None and "Host" in reason, host
    for origin in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
        assert refusal(g, origin=origin) is None, origin
    for origin in ("http://127.0.0.1:8001", "https://127.0.0.1:8000", "null", "http://evil.test",
                   "http://127.0.0.1:8000/x", "file://", "ws://127.0.0.1:8000"):  # fmt: skip
        assert "refused" in (refusal(g, origin=origin) or ""), origin


def test_token_proofs() -> None:
    g = Guard.for_server("127.0.0.1", 8000, token=TOKEN)
    assert "token" in (refusal(g, token=None) or "")
    assert "token" in (refusal(g, token=TOKEN[:-1] + "b") or "")
    assert "token" in (refusal(g, token="") or "")
    assert "token" in (refusal(g, token="é" * 5) or "")  # not ASCII: refused, not a crash
    assert refusal(g, token=None, ticket_ok=True) is None
    assert g.refusal("127.0.0.1:8000", None, None, TOKEN, None, False) is None  # the cookie
    assert g.refusal("127.0.0.1:8000", None, None, None, TOKEN, False) is None  # the header
    assert header_token(f"token {TOKEN}") == TOKEN == header_token(f"Bearer {TOKEN}")
    assert header_token(f"Basic {TOKEN}") is None and header_token(None) is None
    # Host and Origin hold even without a token (--no-token).
    open_guard = Guard.for_server("127.0.0.1", 8000, token=None)
    assert refusal(open_guard, token=None) is None
    assert refusal(open_guard, host="evil.test:8000", token=None) is not None
    assert refusal(open_guard, origin="http://evil.test", token=None) is not None


def test_other_binds_public_url_and_allowed_hosts() -> None:
    lan = Guard.for_server("192.168.1.4", 8000, token=TOKEN)
    assert refusal(lan, "192.168.1.4:8000") is None
    assert refusal(lan, "localhost:8000") is not None  # not bound to loopback
    wide = Guard.for_server("0.0.0.0", 8000, "http://box.example:8000", token=TOKEN)
    for host in ("10.1.2.3:8000", "[fe80::1]:8000", "box.example:8000", "127.0.0.1:8000"):
        assert refusal(wide, host) is None, host
    assert refusal(wide, origin="http://10.1.2.3:8000", host="10.1.2.3:8000") is None
    assert refusal(wide, "10.1.2.3:9000") is not None and refusal(wide, "evil.test:8000")
    proxied = Guard.for_server("127.0.0.1", 8000, "https://ctx.example.org", token=TOKEN)
    assert refusal(proxied, "ctx.example.org", "https://ctx.example.org") is None
    assert refusal(proxied, "ctx.example.org", "http://ctx.example.org") is not None
    extra = Guard.for_server("127.0.0.1", 80, extra_hosts=["viewer.lan", "other:9000"],
                             token=TOKEN)  # fmt: skip
    assert refusal(extra, "viewer.lan", "http://viewer.lan") is None  # port 80: left out
    assert refusal(extra, "other:9000", "https://other:9000") is None
    assert refusal(extra, "viewer.lan:81") is not None


def test_tickets_are_one_time_and_expire() -> None:
    tickets = Tickets(seconds=10)
    a = tickets.mint(now=0)
    assert tickets.use(a, now=5) and not tickets.use(a, now=5)
    b = tickets.mint(now=0)
    assert not tickets.use(b, now=11)
    assert not tickets.use("", now=0) and not tickets.use(None) and not tickets.use("nope")


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.4", "localhost.test"))
