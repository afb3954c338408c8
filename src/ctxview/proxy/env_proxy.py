"""The HTTP proxy the environment names for an upstream (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, a
proxy's credentials in ~/.netrc), looked up once per upstream origin.

aiohttp's `trust_env` looks both up again on every request, each time on a worker thread (two
hops, whose GIL handoffs held a 10 MB request's forward up for milliseconds), and takes an entry
of ~/.netrc matching the *upstream* as that request's own credentials: it sent them as
`Authorization: Basic` to the upstream, or, beside the client's own `Authorization`, failed the
request. The client's headers are the only credentials that reach the upstream."""

from __future__ import annotations

import asyncio

from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

# The proxy (None: direct), and its `Proxy-Authorization` (its credentials), or None.
Route = tuple[URL | None, str | None]


def lookup(url: URL) -> Route:
    """What aiohttp's `trust_env` would use for `url`'s proxy, without its netrc upstream auth."""
    try:
        via, auth = get_env_proxy_for_url(url)
    except LookupError:  # none named, or NO_PROXY names the host
        return None, None
    return via, (auth.encode() if auth is not None else None)


class EnvProxies:
    def __init__(self) -> None:
        self._known: dict[tuple[str, str | None, int | None], Route] = {}

    async def route(self, url: URL) -> Route:
        key = (url.scheme, url.host, url.port)
        found = self._known.get(key)
        if found is None:  # the first request to this origin: ~/.netrc read once, off the loop
            found = self._known[key] = await asyncio.to_thread(lookup, url)
        return found
