"""Who may read a session through `ctxview serve`: a secret token, the served origin, the bound
host.

textual-serve (aiohttp) checks neither `Origin` nor `Host` and has no authentication, so any web
page in the user's browser (a cross-site WebSocket), a DNS-rebinding page, or any local user could
connect to `/ws` and get the app's screens. `GuardedServer` puts one aiohttp middleware in front
of every route (the page, `/ws`, `/static`, `/download`):

- `Host` must be the bound address (127.0.0.1, localhost or [::1] with the port when bound to
  loopback): a rebinding page's requests carry its own domain name.
- An `Origin`, when sent (browsers always send one on a WebSocket and on cross-origin requests),
  must be the served origin: another page, even on another loopback port, is refused.
- A proof of the token: `?token=` (the URL printed at start), the cookie set on that first load
  (HttpOnly, SameSite=Strict, named after the port, since cookies do not keep ports apart), an
  `Authorization: token …` header, or, for `/ws/{ticket}`, a one-time ticket minted into the page
  (textual.js appends `?width=…` to the page's websocket URL, so the proof rides in the path).

The decisions are pure functions of the request's parts (`Guard.refusal`); aiohttp is at the edge.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("ctxview.serve")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
TICKET_SECONDS = 300.0  # a page opens its websocket on load; a ticket is for that moment


def is_loopback(host: str) -> bool:
    """Only this machine can reach it: localhost, 127.0.0.0/8, ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bracket(host: str) -> str:
    """A host as it appears in a URL or a Host header (IPv6 in brackets), lower case."""
    host = host.lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _netlocs(host: str, port: int, scheme: str = "http") -> set[str]:
    """How a browser writes host:port in Host and Origin: the default port is left out."""
    name = _bracket(host)
    return {name} if port == _default_port(scheme) else {f"{name}:{port}"}


def split_netloc(netloc: str) -> tuple[str, int | None] | None:
    """`host[:port]` (IPv6 in brackets) → (host without brackets, port or None); None if it is
    not one."""
    try:
        parts = urlsplit(f"//{netloc}")
        return (parts.hostname or "", parts.port)
    except ValueError:
        return None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


@dataclass(frozen=True)
class Guard:
    """What this server accepts. Build it with `Guard.for_server`."""

    token: str | None  # None: --no-token
    port: int
    hosts: frozenset[str]  # Host header values (host[:port], lower case)
    origins: frozenset[str]  # scheme://host[:port]
    any_ip_host: bool = False  # bound to a wildcard: any IP literal on our port is us
    cookie_name: str = ""

    @classmethod
    def for_server(cls, host: str, port: int, public_url: str | None = None,
                   extra_hosts: Iterable[str] = (), token: str | None = None) -> Guard:  # fmt: skip
        """The names this server answers to: the bound address (its loopback equivalents when
        bound to loopback), the public URL's, and each `--allow-host`."""
        hosts: set[str] = set()
        origins: set[str] = set()
        wildcard = host in WILDCARDS
        names = [host] if not wildcard else []
        if is_loopback(host) or wildcard:
            names += ["127.0.0.1", "localhost", "::1"]
        if wildcard:
            import socket

            names += [socket.gethostname(), socket.getfqdn()]
        for extra in extra_hosts:
            parsed = split_netloc(extra)
            if parsed is None or not parsed[0]:
                continue
            name, given_port = parsed
            if given_port is not None and given_port != port:
                hosts |= _netlocs(name, given_port)
                origins |= {f"http://{n}" for n in _netlocs(name, given_port)}
                origins |= {f"https://{n}" for n in _netlocs(name, given_port, "https")}
            else:
                names.append(name)
        for name in names:
            for netloc in _netlocs(name, port):
                hosts.add(netloc)
                origins.add(f"http://{netloc}")
        if public_url:
            parts = urlsplit(public_url)
            if parts.hostname:
                scheme = parts.scheme.lower() or "http"
                p = parts.port or _default_port(scheme)
                for netloc in _netlocs(parts.hostname, p, scheme):
                    hosts.add(netloc)
                    origins.add(f"{scheme}://{netloc}")
        return cls(token=token, port=port, hosts=frozenset(hosts), origins=frozenset(origins),
                   any_ip_host=wildcard, cookie_name=f"ctxview-token-{port}")  # fmt: skip

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        value = host_header.strip().lower()
        if value in self.hosts:
            return True
        if self.any_ip_host:
            # A rebinding page's requests name the attacker's domain; an IP literal cannot.
            parsed = split_netloc(value)
            return parsed is not None and _is_ip_literal(parsed[0]) and parsed[1] == self.port
        return False

    def origin_allowed(self, origin: str) -> bool:
        value = origin.strip().lower()
        if value in self.origins:
            return True
        parts = urlsplit(value) if "://" in value else None
        if parts is None or parts.scheme != "http" or parts.path or parts.query:
            return False
        return self.any_ip_host and self.host_allowed(parts.netloc)

    def token_matches(self, given: str | None) -> bool:
        if self.token is None:
            return True
        if not given:
            return False
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def refusal(self, host: str | None, origin: str | None, query_token: str | None,
                cookie_token: str | None, header_token: str | None,
                ticket_ok: bool) -> str | None:  # fmt: skip
        """Why this request is refused (one sentence for the client; the log adds who), or
        None to let it through."""
        if not self.host_allowed(host):
            return (
                f"The Host header {host!r} is not this server's address "
                "(a DNS-rebinding page would send its own name); use --allow-host to add one."
            )
        if origin is not None and not self.origin_allowed(origin):
            return f"Requests from the page at {origin} are refused: it is not this server's."
        if self.token is None or ticket_ok:
            return None
        if any(self.token_matches(t) for t in (query_token, cookie_token, header_token) if t):
            return None
        return (
            "This ctxview serve needs its token: open the address it printed when it started "
            "(…/?token=…)."
        )


def header_token(authorization: str | None) -> str | None:
    """`Authorization: token X` (as Jupyter takes it) or `Bearer X`."""
    if not authorization:
        return None
    kind, _, value = authorization.strip().partition(" ")
    return value.strip() if kind.lower() in ("token", "bearer") else None


@dataclass
class Tickets:
    """One-time proofs minted into each served page for its websocket (the token itself never
    goes into a websocket URL)."""

    seconds: float = TICKET_SECONDS
    _live: dict[str, float] = field(default_factory=dict)

    def mint(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        for t, until in list(self._live.items()):
            if until < now:
                del self._live[t]
        ticket = secrets.token_urlsafe(24)
        self._live[ticket] = now + self.seconds
        return ticket

    def use(self, ticket: str | None, now: float | None = None) -> bool:
        if not ticket:
            return False
        now = time.monotonic() if now is None else now
        for live, until in list(self._live.items()):
            if hmac.compare_digest(live, ticket):
                del self._live[live]
                return until >= now
        return False


# --- aiohttp at the edge ----------------------------------------------------------------------

Handler = Callable[[Any], Awaitable[Any]]

SAFE_HEADERS: Mapping[str, str] = {
    # The page's URL may hold the token: never send it on as a Referer.
    "Referrer-Policy": "no-referrer",
    # No other site may frame the app (and click through a user's session).
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def make_middleware(guard: Guard, tickets: Tickets, secure_cookie: bool = False) -> Any:
    from aiohttp import web

    @web.middleware
    async def guard_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        ticket = request.match_info.get("ticket")
        query_token = request.query.get("token")
        reason = guard.refusal(
            host=request.headers.get("Host"),
            origin=request.headers.get("Origin"),
            query_token=query_token,
            cookie_token=request.cookies.get(guard.cookie_name),
            header_token=header_token(request.headers.get("Authorization")),
            ticket_ok=ticket is not None and tickets.use(ticket),
        )
        if reason is not None:
            peer = request.remote or "?"
            log.warning("refused %s %s from %s: %s", request.method, request.path, peer, reason)
            raise web.HTTPForbidden(text=reason + "\n", headers=dict(SAFE_HEADERS))
        response: web.StreamResponse = await handler(request)
        if not response.prepared:  # a websocket is already under way
            response.headers.update(SAFE_HEADERS)
            if request.path == "/":
                response.headers["Cache-Control"] = "no-store"  # it holds a ticket
            if guard.token is not None and guard.token_matches(query_token):
                # Reloads and the page's own requests prove it with the cookie from now on.
                response.set_cookie(guard.cookie_name, guard.token, httponly=True,
                                    samesite="Strict", path="/", secure=secure_cookie)  # fmt: skip
        return response

    return guard_middleware


# ctxview's own page (textual-serve's, with every asset served here: no font from another
# site, a title, an icon; see its comment) and the icon.
PAGE = Path(__file__).with_name("page")  # serve/page/
FAVICON = PAGE / "favicon.svg"


def make_server_class() -> type:
    """`textual_serve.server.Server` with the guard in front of every route, a one-time ticket in
    each page's websocket URL, ctxview's own page and icon, and everything it says on stderr
    (never stdout)."""
    import asyncio
    import signal

    import aiohttp_jinja2
    from aiohttp import web
    from aiohttp.abc import AbstractAccessLogger
    from textual_serve.server import Server

    class AccessLogger(AbstractAccessLogger):
        """Method, path and status, never the query (it may hold the token)."""

        def log(self, request: web.BaseRequest, response: web.StreamResponse,
                time: float) -> None:  # fmt: skip
            self.logger.info('%s "%s %s" %s', request.remote, request.method, request.path,
                             response.status)  # fmt: skip

    class GuardedServer(Server):
        def __init__(self, command: str, *, host: str, port: int, title: str,
                     public_url: str | None, guard: Guard) -> None:  # fmt: skip
            super().__init__(command, host=host, port=port, title=title, public_url=public_url,
                             templates_path=PAGE)  # fmt: skip
            self.guard = guard
            self.tickets = Tickets()

        def start_url(self) -> str:
            base = f"{self.public_url.rstrip('/')}/"
            return f"{base}?token={self.guard.token}" if self.guard.token else base

        def initialize_logging(self) -> None:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("ctxview serve: %(message)s"))
            root = logging.getLogger()
            root.handlers[:] = [handler]
            root.setLevel(logging.DEBUG if self.debug else logging.INFO)

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            secure = self.public_url.startswith("https")
            app.middlewares.append(make_middleware(self.guard, self.tickets, secure))
            app.router.add_get("/ws/{ticket}", self.handle_websocket, name="websocket-ticket")
            # The page names its icon; a browser asks /favicon.ico of a page that names none.
            app.router.add_get("/favicon.svg", self.handle_favicon, name="favicon")
            app.router.add_get("/favicon.ico", self.handle_favicon)
            return app

        async def handle_favicon(self, request: web.Request) -> web.StreamResponse:
            return web.Response(body=FAVICON.read_bytes(), content_type="image/svg+xml",
                                headers={"Cache-Control": "max-age=86400"})  # fmt: skip

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            context = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]  # set by aiohttp_jinja2.template's functools.wraps
            ticket = self.tickets.mint()
            context["app_websocket_url"] = f"{context['app_websocket_url']}/{ticket}"
            context["favicon_url"] = f"{self.public_url.rstrip('/')}/favicon.svg"
            return aiohttp_jinja2.render_template("app_index.html", request, context)

        async def on_startup(self, app: web.Application) -> None:
            print(f"ctxview serve: open {self.start_url()}  (Ctrl+C to quit)", file=sys.stderr,
                  flush=True)  # fmt: skip

        def serve(self, debug: bool = False) -> None:
            # textual-serve copies each app's stderr to sys.stdout: our stdout stays empty.
            sys.stdout = sys.stderr
            self.debug = debug
            self.initialize_logging()
            try:
                loop = asyncio.get_event_loop()
            except Exception:
                loop = asyncio.new_event_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, self.request_exit)
                loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            except NotImplementedError:
                pass
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False,
                        loop=loop, print=lambda *args: None,
                        access_log_class=AccessLogger)  # fmt: skip

    return GuardedServer
