"""Which headers are forwarded, and which are never kept.

Forwarded as they came, except: the hop-by-hop ones (RFC 9110 §7.6.1, and those `Connection`
names), `Host` (the upstream's own), ctxview's secret, and in `Accept-Encoding` the encodings
ctxview could not decode to record the answer (br, zstd: Python's standard library has
neither), so an answer is always readable. Kept in the store: every header but a credential."""

from __future__ import annotations

from collections.abc import Iterable

SECRET_HEADER = "x-ctxview-secret"

_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
                  "transfer-encoding", "upgrade", "host", "proxy-authenticate"})  # fmt: skip
DECODABLE = ("gzip", "deflate", "identity")
# A header whose name holds one of these carries a credential: never stored or printed.
_CREDENTIAL_PARTS = ("auth", "key", "token", "secret", "cookie", "session-token", "signature",
                     "password", "credential")  # fmt: skip


def is_credential(name: str) -> bool:
    n = name.lower()
    return any(part in n for part in _CREDENTIAL_PARTS)


def _dropped(pairs: Iterable[tuple[str, str]]) -> set[str]:
    named: set[str] = set(_HOP)
    for k, v in pairs:
        if k.lower() == "connection":
            named.update(t.strip().lower() for t in v.split(",") if t.strip())
    return named


def narrow_accept_encoding(value: str) -> str:
    kept = [t.strip() for t in value.split(",")
            if t.split(";")[0].strip().lower() in DECODABLE]  # fmt: skip
    return ", ".join(kept) if kept else "identity"


def upstream_headers(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client's headers as the upstream gets them, in their order."""
    drop = _dropped(pairs)
    out = []
    for k, v in pairs:
        low = k.lower()
        if low in drop or low == SECRET_HEADER:
            continue
        if low == "accept-encoding":
            v = narrow_accept_encoding(v)
        out.append((k, v))
    return out


def client_headers(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The upstream's answer headers as the client gets them."""
    drop = _dropped(pairs) - {"proxy-authenticate"}
    return [(k, v) for k, v in pairs if k.lower() not in drop]


def kept(pairs: list[tuple[str, str]]) -> list[list[str]]:
    """Headers as the store keeps them: a credential's name with its value left out."""
    return [[k, "[not kept]" if is_credential(k) else v] for k, v in pairs
            if k.lower() != SECRET_HEADER]  # fmt: skip
