"""Secrets out of every string an export writes: pure functions, no I/O.

Each finder replaces what it matched by `[redacted: KIND]` and counts it. A string is redacted
by every finder in turn (the specific ones first, high entropy last), so a key that two finders
would match is counted once, under its specific kind. Each finder is guarded by a literal that
its match must contain (a fast `in`), so a 500 MB export does not run twenty regexes over text
that cannot hold a key.

A key with a known prefix is found cut short too (`ghp_Xq7ZpL2m…`: twelve characters with the
prefix), and a key broken over two lines (a terminal's wrap of a line of WRAP characters or
more) is found whole in the text with those line breaks taken out; what follows the break goes
with it, the break stays (the lines keep their numbers). High entropy is judged in entropy.py.

Left alone on purpose: hex strings of any length (SHA-256 sums, git hashes), uuids, ctxview ids
(`#1005`), and the ids Claude Code and Codex give tool calls and messages (`toolu_…`, `msg_…`,
`call_…`): they identify records, they are not secrets, and links and imports depend on them.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right, insort
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxview.export.entropy import coverage, data_before, high_entropy, in_blob, parts_high_entropy

Seen = Callable[[str, str], None]  # (kind, the text replaced): for measuring, not for export


def _has(*needles: str) -> tuple[str, ...]:
    return needles


@dataclass(frozen=True)
class Finder:
    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]  # a match holds one of these (looked for all at once, first)
    group: int = 0  # the part replaced: 0 the whole match, else that group
    gate: str = "run"  # run: needs a long token run; url: needs "://"; word: a secret-ish word
    spare: Callable[[str], bool] | None = None  # a matched value that is not a secret after all
    full: int = 0  # the length of a whole key of this kind, when it has one
    loose: re.Pattern[str] | None = None  # the pattern without its end, for the joined text


def _f(kind: str, regex: str, needles: tuple[str, ...], group: int = 0, flags: int = 0, gate: str = "run",
       spare: Callable[[str], bool] | None = None, full: int = 0) -> Finder:  # fmt: skip
    # Read with the line breaks taken out, a key's end is not marked where its line ended
    # (`AKIA…HKXN` then `title:` reads `AKIA…HKXNtitle`): there the pattern does without its
    # end, and `full` (or the word that follows) says where the key stops.
    end = next((e for e in (_E, _E64) if regex.endswith(e)), None)
    loose = re.compile(regex.removesuffix(end), flags) if end else None
    return Finder(kind, re.compile(regex, flags), needles, group, gate, spare, full, loose)


# Values beside a secret-looking name that are not secrets: counts and versions
# (MAX_TOKENS=4096, "gpt-tokenizer": "^2.1.2"), code (TOKEN = encode(prompt)), placeholders,
# dotted names (passwordKey = "auth.password.field", an i18n key, a host), a key shown masked
# (`OPENAI_API_KEY: ...9doi`), words in snake case (SECRET_KEY = "test_secret_key").
_NOT_A_VALUE = re.compile(r"[\d^~.<>=v*x+-]+|.*[()].*|<[^>]*>|x{3,}|\*{3,}|(?i:changeme|none|null|"
                          r"true|false|undefined|your[_-].*)|[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+"
                          r"|(?:\.\.\.|…|\*\*).*|[a-z]+(?:_[a-z]+)+")  # fmt: skip


_NUMBERISH = re.compile(r"[\d^~.<>=v*x+-]+")  # a count or a version


def _not_a_value(value: str) -> bool:
    return bool(_NOT_A_VALUE.fullmatch(value))


_B = r"(?<![A-Za-z0-9_])"  # a token's start: not inside a longer word
_E = r"(?![A-Za-z0-9_])"
_E64 = r"(?![A-Za-z0-9/+])"  # the end of a base64 value

# Names that say "secret" in .env / shell / YAML style: DB_PASSWORD=…, export GH_TOKEN=…
_SECRET_WORDS = ("SECRET", "PASSWORD", "PASSWD", "TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY",
                 "PRIVATE_KEY", "CREDENTIAL", "AUTH_KEY")  # fmt: skip
_secret_name = "|".join(_SECRET_WORDS).replace("_", "_?")
_lower_words = ("secret", "password", "passwd", "token", "api_key", "apikey", "api-key",
                "access_key", "private_key", "credential", "client_secret")  # fmt: skip


def _random(tail: str) -> bool:
    """What a key's random part has and a word has not: a digit, or both cases."""
    return any(c.isdigit() for c in tail) or (tail != tail.lower() and tail != tail.upper())


def _cut(prefix: int, whole: int) -> Callable[[str], bool]:
    """Spare a match shorter than a whole key (`whole` characters after its prefix) whose tail
    is a plain word: `npm_lifecycle`, `pk_test_data`, `Bearer authentication`."""
    return lambda v: len(v) - prefix < whole and not _random(v[prefix:])


_JOSE = re.compile(r'\{"(?:alg|typ|kid|enc|cty|jku|jwk|x5u|x5c|x5t|crit|zip)"')


def _not_jwt(value: str) -> bool:
    """A run that starts as base64 JSON but is not a token's header: a source map, a config.
    A token cut short keeps its header (`{"alg":…`) or its second part."""
    if value.count(".") >= 1 and ".eyJ" in value:
        return False
    head = value.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head[: len(head) // 4 * 4])
    except (binascii.Error, ValueError):
        return True
    return not _JOSE.match(raw.decode("latin-1"))


_GITLAB = ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "gloas-", "glsoat-")

FINDERS: tuple[Finder, ...] = (
    _f("private-key",
       r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY"
       r"( BLOCK)?-----|.*\Z)", _has("PRIVATE KEY"), flags=re.S, gate="word"),
    _f("jwt", _B + r"eyJ[A-Za-z0-9_-]{9,}(?:\.[A-Za-z0-9_-]+){0,2}", _has("eyJ"),
       spare=_not_jwt),
    _f("aws-access-key-id", _B + r"(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{8,16}" + _E,
       _has("AKIA", "ASIA", "ABIA", "ACCA", "AROA", "AIDA"), spare=_cut(4, 16), full=20),
    _f("aws-session-token", _B + r"(?:IQoJb3JpZ2lu|FwoGZXIvYXdz)[A-Za-z0-9/+=]{8,}",
       _has("IQoJb3JpZ2lu", "FwoGZXIvYXdz")),
    _f("aws-secret-access-key",
       r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9/+]{12,40})" + _E64,
       _has("ecret", "ECRET"), group=1, gate="word", spare=_cut(0, 40), full=40),
    _f("github-token", _B + r"gh[pousr]_[A-Za-z0-9]{8,255}" + _E,
       _has("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), spare=_cut(4, 36), full=40),
    _f("github-token", _B + r"github_pat_[A-Za-z0-9_]{1,255}", _has("github_pat_"), full=93),
    _f("gitlab-token", _B + r"gl(?:pat|dt|rt|cbt|ptt|ft|oas|soat)-[A-Za-z0-9_-]{6,}",
       _has(*_GITLAB), spare=_cut(6, 20)),
    _f("slack-webhook",
       r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
       _has("hooks.slack.com")),
    _f("slack-token", _B + r"xox[abprsec]-[A-Za-z0-9-]{7,}", _has("xox"), spare=_cut(5, 20)),
    _f("stripe-key", _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{4,}", _has("_live_", "_test_"),
       spare=_cut(8, 24)),
    _f("anthropic-key", _B + r"sk-ant-[A-Za-z0-9_-]{5,}", _has("sk-ant-"), spare=_cut(7, 20)),
    _f("openai-key",
       _B + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{4,}|[A-Za-z0-9_-]{9,})",
       _has("sk-"), spare=_cut(3, 20)),
    _f("google-api-key", _B + r"AIza[0-9A-Za-z_-]{8,35}" + _E, _has("AIza"), spare=_cut(4, 35),
       full=39),
    _f("google-oauth-secret", _B + r"GOCSPX-[A-Za-z0-9_-]{5,}", _has("GOCSPX-"),
       spare=_cut(7, 20)),
    _f("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_-]{7,}", _has("ya29."), spare=_cut(5, 20)),
    _f("npm-token", _B + r"npm_[A-Za-z0-9]{8,36}" + _E, _has("npm_"), spare=_cut(4, 36),
       full=40),
    _f("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_-]{4,}", _has("pypi-AgE")),
    _f("huggingface-token", _B + r"hf_[A-Za-z0-9]{9,}" + _E, _has("hf_"), spare=_cut(3, 30)),
    _f("sendgrid-key", _B + r"SG\.[A-Za-z0-9_-]{9,}(?:\.[A-Za-z0-9_-]*)?", _has("SG."),
       spare=_cut(3, 40), full=69),
    _f("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{12,}=*)",
       _has("earer", "EARER"), group=1, gate="word", spare=_cut(0, 30)),
    # scheme://user:password@host: only the password goes.
    _f("password-in-url", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/?#@\"'<>]+:([^\s/?#@\"'<>]+)@",
       _has("://"), group=1, gate="url"),
    # DB_PASSWORD=hunter2, export GH_TOKEN="…", AWS_SECRET: … (a value, not a $reference)
    _f("env-secret",
       r"(?<![A-Za-z0-9_])(?:[A-Z0-9]+_)*(?:" + _secret_name + r")(?:_[A-Z0-9]+)*S?"
       r"[\"']?[ \t]*[=:][ \t]*([\"']?)(?![$\[{(<])([^\s\"'`,;]{3,})\1",
       _has(*_SECRET_WORDS), group=2, gate="word", spare=_not_a_value),
    # "password": "hunter2", client_secret = 'abc…' (a quoted literal; code calls are left)
    _f("env-secret",
       r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9_.-]*(?:secret|passw(?:or)?d|token|api[_-]?key|"
       r"access[_-]?key|private[_-]?key|credentials?)(?-i:(?![a-z]))[A-Za-z0-9_.-]*[\"']?[ \t]*"
       r"[=:][ \t]*(?:\r?\n[ \t]*)?"
       r"([\"'])(?![$\[{(<])([^\s\"']{4,})\1",
       _has(*_lower_words, *_SECRET_WORDS, "Password", "Secret", "Token", "ApiKey", "apiKey"),
       group=2, gate="word", spare=_not_a_value),
)  # fmt: skip

# Which finders could match at all: each distinct needle looked for once.
_ALL_NEEDLES = tuple(sorted({n for f in FINDERS for n in f.needles}))
_FINDERS_OF = {
    needle: frozenset(i for i, f in enumerate(FINDERS) if needle in f.needles)
    for needle in _ALL_NEEDLES
}


def _present(text: str) -> frozenset[int]:
    """The finders (by position in FINDERS) whose needles `text` holds: a `in` (memchr and
    memcmp in C) per distinct needle, not a generator per finder."""
    found = [n for n in _ALL_NEEDLES if n in text]
    return frozenset().union(*(_FINDERS_OF[n] for n in found)) if found else frozenset()


# High entropy: a run of base64/url-safe characters, judged in entropy.py.
_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/_=-])")
# A JSON key that names a secret: password, client_secret, GITHUB_TOKEN, apiKey (not "tokens",
# "max_tokens" or "token_count", which are counts).
_SECRET_KEY = re.compile(
    r"(?i)[a-z0-9_.-]*(?:secret|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"auth[_-]?token|access[_-]?token|refresh[_-]?token|bearer|credentials?|(?<![a-z])token)"
)
_SECRET_KEY_IN_TEXT = re.compile(
    r"(?i)\"[a-z0-9_.-]*(?:secret|passw|api[_-]?key|access[_-]?key|private[_-]?key|token|"
    r"credential)[a-z0-9_.-]*\"\s*:\s*\""
)


def mark(kind: str) -> str:
    return f"[redacted: {kind}]"


# The gates, a few passes at C speed over the text's bytes: every token-shaped secret holds a
# run of at least 12 of these characters (a known prefix cut short); the others need "://" or
# one of these words.
_TOKEN_TABLE = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/_-.") else ord(" ")
    for i in range(256)
)
_RUN12 = b"a" * 12
_RUN24 = b"a" * 24
_WORDS = (b"secret", b"passw", b"token", b"key", b"credential", b"bearer")
_WORD_TABLE = bytes(
    ord("k") if chr(i) in "kKwWbB" else ord("c") if chr(i) in "cC" else
    ord("r") if chr(i) in "rR" else ord(" ")
    for i in range(256)
)  # fmt: skip

# A line break inside a key: the text is also read with such breaks taken out (below). Worth it
# only when a known prefix, a long run or a secret word could straddle one.
# A wrap: a line of WRAP characters or more broken between two non-blank ones (a terminal or a
# window wraps a long line; a short line's end is the end of what it says: a .env file's next
# line is the next setting). A read's next line may start with its number: `216: …`.
WRAP = 40
_BREAK_AT = (r"\n(?:(?<=[^\n]{" + str(WRAP - 1) + r"}\S\n)|(?<=[^\n]{" + str(WRAP - 2)
             + r"}\S\r\n))(?:[ \t]*\d+: )?(?=\S)")  # fmt: skip
_BREAK = re.compile(_BREAK_AT)
_WRAPPED = re.compile(_BREAK_AT.encode())
_LINE_NUMBER = re.compile(rb"\n[ \t]*\d+: ")
_PREFIXES = (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", *(
    g.encode() for g in _GITLAB), b"xoxa-", b"xoxb-", b"xoxp-", b"xoxr-", b"xoxs-", b"xoxe-",
    b"xoxc-", b"_live_", b"_test_", b"sk-", b"AIza", b"GOCSPX-", b"ya29.", b"npm_", b"pypi-AgE",
    b"hf_", b"SG.", b"eyJ", b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"AROA", b"AIDA", b"IQoJb3JpZ2lu",
    b"FwoGZXIvYXdz", b"-----BEGIN", b"hooks.slack.com")  # fmt: skip
_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_CHAIN_TABLE = bytes(
    ord("n") if i == 10 else ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/_-")
    else ord(" ") for i in range(256)
)  # fmt: skip
_CHAIN = re.compile(rb"(?<![an])(?=[an]{25})a+(?:na+)+")  # a 24-run or more across a break
# A value that runs to the end of its line beside a secret's name (looked for in the lower
# cased text), a bearer token, a URL's user and password broken by the line's end, a name or a
# URL's `://` just after a break (`DB_PASS` / `WORD=…`). Each starts with a literal: C speed.
_BESIDE_BREAK = re.compile(
    rb"(?:secret|passw|token|key|credential)[a-z0-9_.-]*[\"']?(?:[ \t]*[=:][ \t]*"
    rb"(?:\r?\n[ \t]*)?[\"']?[^\s\"'`,;]*)?\r?\n\S|bearer\s+\S*\r?\n\S"
)
_NAME_AFTER_BREAK = re.compile(
    rb"\n(?<=\S\n)(?=\S{0,4}://|[A-Za-z0-9_.-]{0,40}(?i:secret|passw|token|key|credential)"
    rb"[A-Za-z0-9_.-]*[\"']?[ \t]*[=:])"
)
_URL_BREAK = re.compile(rb"://[^\s/@]*\r?\n\S")
# The names env-secret's finders look for (a name broken by a line's end is joined only when
# the break falls in or before this word, not in another name after it).
_SECRET_WORD = re.compile(r"(?i)secret|passw(?:or)?d|passw|token|api[_-]?key|access[_-]?key|"
                          r"private[_-]?key|credential|auth[_-]?key")  # fmt: skip
_NAME_START = re.compile(r"[A-Za-z0-9_.-]+")
# Gates of the finders that need a name or a word beside the value: joined only after a long
# line (a .env file's next line is the next setting, not the rest of this one).
_BESIDE = frozenset({"word", "url"})


def redact_text(text: str, counts: Counter[str], seen: Seen | None = None) -> str:
    """`text` with every secret found replaced by `[redacted: KIND]`; `counts` gains each."""
    if len(text) < 8:
        return text  # too short for any finder's pattern
    raw = text.encode("utf-8", "surrogatepass")
    if b"\n" in raw and _may_straddle(raw):
        text = _joined(text, counts, seen)
        raw = text.encode("utf-8", "surrogatepass")
    runs = raw.translate(_TOKEN_TABLE)
    run = _RUN12 in runs
    url = b"@" in raw and b"://" in raw  # a password in a URL needs both; "@" is one memchr
    if run or url:
        word = True  # a run or a URL is common enough; the guards decide
    else:
        # Each secret word holds k, w, b or "cr": one translate and two searches say whether
        # any could be there, before the words themselves are looked for.
        sig = raw.translate(_WORD_TABLE)
        if b"k" not in sig and b"cr" not in sig:
            return text
        low = raw.lower()
        word = any(w in low for w in _WORDS)
        if not word:
            return text
    gates = {"run": run, "url": url, "word": word}
    present = _present(text)
    for i, finder in enumerate(FINDERS):
        if i in present and gates[finder.gate]:
            text = _apply(finder, text, counts, seen)
    if _RUN24 in runs:
        text = _entropy_pass(text, counts, seen)
    return text


def _prefix_at_start(raw: bytes) -> bool:
    """A known prefix that starts a token: each looked for with `in` (C), the few found then
    checked for what precedes them (`task-` is no `sk-`)."""
    for prefix in _PREFIXES:
        at = raw.find(prefix)
        while at >= 0:
            if prefix[0] == 95 or not at or raw[at - 1] not in _TOKEN_BYTES:  # 95: "_live_"
                return True
            at = raw.find(prefix, at + 1)
    return False


_EDGE = 256  # how far each side of a wrap is looked at
_TAIL = re.compile(rb"[A-Za-z0-9+/_-]*\Z")
_HEAD = re.compile(rb"[A-Za-z0-9+/_-]*")
_MANY_WRAPS = 5_000  # past this many, the text is joined without looking at each


def _may_straddle(raw: bytes) -> bool:
    """Could a secret cross one of the text's wraps? Only if there is one (most texts: none);
    then, in the two lines of each: a known prefix, a run of 24 across the break that is not
    made of names, a secret's name or a URL beside the break or cut by it. The wraps are found
    at C speed; Python looks at their two lines only."""
    for n, m in enumerate(_WRAPPED.finditer(raw)):
        if n >= _MANY_WRAPS:
            return True
        start, end = m.start(), m.end()
        if raw[start - 1 : start] == b"\r":
            start -= 1
        left = raw[max(0, start - _EDGE) : start]
        left = left[left.rfind(b"\n") + 1 :]  # the wrapped line's end
        right = raw[end : end + _EDGE].split(b"\n", 1)[0]  # the next line's start
        joined = left + right
        if _prefix_at_start(joined):
            return True
        tail = _TAIL.search(left).group()  # type: ignore[union-attr]  # `*`: always matches
        head = _HEAD.match(right).group()  # type: ignore[union-attr]  # `*`: always matches
        if len(tail) + len(head) >= 24 and tail and head:
            parts = (tail.decode("ascii"), head.decode("ascii"))
            if coverage("".join(parts)) < 0.5 and not all(coverage(p) >= 0.5 for p in parts):
                return True
        pair = left + b"\n" + right
        low, joined_low = pair.lower(), joined.lower()
        if not (b"://" in joined or any(w in joined_low for w in _WORDS)):
            continue
        if _BESIDE_BREAK.search(low) or _NAME_AFTER_BREAK.search(pair) or _URL_BREAK.search(pair):
            return True
        if any(w in joined_low and w not in low for w in (*_WORDS, b"://")):
            return True  # a name or `://` cut by the break
    return False


def _word(piece: str) -> bool:
    return len(piece) >= 4 and piece.isalpha() and coverage(piece) >= 0.5


def _holds_secret(text: str) -> bool:
    return redact_text(text, Counter()) != text


_URL_HOST_BEFORE = re.compile(r"://[A-Za-z0-9.-]*$")


def _random_here(text: str, start: int, end: int) -> bool:
    """The run text[start:end] is a secret where it stands: not named as a digest or data by
    what precedes it, not a line of a base64 blob, and random by itself (a URL's host and path
    judged a part at a time, as a path is)."""
    if data_before(text, start) or in_blob(text, start, end):
        return False
    token = text[start:end]
    if _URL_HOST_BEFORE.search(text, max(0, start - 256), start):
        return parts_high_entropy(token, _holds_secret)
    return high_entropy(token, _holds_secret)


def _apply(finder: Finder, text: str, counts: Counter[str], seen: Seen | None) -> str:
    g = finder.group

    def repl(m: re.Match[str]) -> str:
        value = m.group(g)
        if (
            value is None
            or value.startswith("[redacted")
            or (finder.spare is not None and finder.spare(value))
        ):
            return m.group(0)
        counts[finder.kind] += 1
        if seen is not None:
            seen(finder.kind, value)
        if g == 0:
            return mark(finder.kind)
        start, end = m.span(g)
        base = m.start()
        whole = m.group(0)
        return whole[: start - base] + mark(finder.kind) + whole[end - base :]

    return finder.pattern.sub(repl, text)


def _entropy_pass(text: str, counts: Counter[str], seen: Seen | None) -> str:
    def repl(m: re.Match[str]) -> str:
        if not _random_here(text, m.start(), m.end()):
            return m.group(0)
        counts["high-entropy"] += 1
        if seen is not None:
            seen("high-entropy", m.group(0))
        return mark("high-entropy")

    return _RUN.sub(repl, text)


class _Joined:
    """The text with its line breaks between non-blank characters taken out, and the way back:
    where each piece of it starts in the text."""

    def __init__(self, text: str) -> None:
        # A CRLF's CR goes with its break.
        self.cuts = [
            (s - (text[s - 1] == "\r"), e) for s, e in (m.span() for m in _BREAK.finditer(text))
        ]
        pieces: list[str] = []
        self.starts = [0]  # where each piece starts in the joined text ...
        self.origins = [0]  # ... and in the text
        prev = 0
        size = 0
        for s, e in self.cuts:
            pieces.append(text[prev:s])
            size += s - prev
            self.starts.append(size)
            self.origins.append(e)
            prev = e
        pieces.append(text[prev:])
        self.text = "".join(pieces)
        self.points = self.starts[1:]  # a break was taken out just before each of these

    def origin(self, j: int) -> int:
        k = bisect_right(self.starts, j) - 1
        return self.origins[k] + j - self.starts[k]

    def breaks(self, start: int, end: int) -> list[int]:
        """The breaks inside [start, end), by number."""
        lo = bisect_right(self.points, start)
        hi = bisect_right(self.points, end - 1)
        return list(range(lo, hi))


def _joined(text: str, counts: Counter[str], seen: Seen | None) -> str:
    """Secrets that cross a line break, found in the text with its breaks taken out and
    replaced in the text: the marker where the secret starts, its breaks kept, the rest of it
    (on the next lines) gone. What lies on one line is left to the plain pass."""
    view = _Joined(text)
    if not view.cuts:
        return text
    j = view.text
    claims: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []  # claims and keys whole on their line, by start

    def free(s: int, e: int) -> bool:
        i = bisect_right(taken, (s, s))
        return (i == 0 or taken[i - 1][1] <= s) and (i == len(taken) or taken[i][0] >= e)

    def take(s: int, e: int, kind: str | None) -> None:
        insort(taken, (s, e))
        if kind is not None:
            claims.append((s, e, kind))

    present = _present(j)
    for i, finder in enumerate(FINDERS):
        if i not in present:
            continue
        g = finder.group
        for m in (finder.loose or finder.pattern).finditer(j):
            inside = view.breaks(m.start(), m.end())
            if not inside or m.group(g) is None:
                continue
            s, e = m.span(g)
            before = view.points[inside[0]] - s
            if finder.full:
                if before >= finder.full:
                    if free(s, s + before):
                        take(s, s + before, None)
                    continue  # whole on its line; what follows the break is not part of it
                e = min(e, s + finder.full)
            elif finder.loose is not None or g == 0:
                last = view.points[inside[-1]]
                if last < e and _word(j[last:e]):
                    e = last  # the next line starts with a word: the key ended with its line
                    if not view.breaks(s, e):
                        continue
            value = j[s:e]
            if value.startswith("[redacted") or (finder.spare and finder.spare(value)):
                continue
            if finder.gate in _BESIDE:
                first = view.points[inside[0]]
                if s < first and _NUMBERISH.fullmatch(j[s:first]):
                    continue  # `COUNT = 2647`, then the next line: the value is what it says
                if _word(j[view.points[inside[-1]] : e]):
                    continue  # `KEY=value`, then a line that starts with a word: not a wrap
                last = view.points[inside[-1]]
                if (
                    finder.kind == "env-secret"
                    and s >= last
                    and _NAME_START.match(j, last, s)
                    and not any(w.end() >= last for w in _SECRET_WORD.finditer(j, m.start(), s))
                ):
                    continue  # `dist/token-1.2.tgz` then `checksum = "…"`: another line's name
            if free(s, e):  # the value may lie after the break (`DB_PASS` / `WORD=…`)
                take(s, e, finder.kind)
    for m in _RUN.finditer(j):
        s, e = m.span()
        inside = view.breaks(s, e)
        if not inside or not free(s, e):
            continue
        points = [view.points[k] for k in inside]
        parts = list(zip([s, *points], [*points, e], strict=True))
        # A line's own run of 24 or more that is not random by itself (a path, a hash, a name)
        # is no piece of a key: nothing is joined across it.
        if any(pe - ps >= 24 and not _random_here(j, ps, pe) for ps, pe in parts):
            continue
        # Nor across a name (`…/SliderShape3DContext` then `https://…`): a key's pieces are
        # random, not words.
        if any(pe - ps >= 12 and coverage(j[ps:pe]) >= 0.5 for ps, pe in parts):
            continue
        # A word that ends one line or starts the next is not part of the key beside it.
        if _word(j[parts[-1][0] : parts[-1][1]]):
            parts.pop()
        if parts and _word(j[parts[0][0] : parts[0][1]]):
            parts.pop(0)
        if len(parts) < 2:
            continue
        s, e = parts[0][0], parts[-1][1]
        if free(s, e) and _random_here(j, s, e):
            take(s, e, "high-entropy")
    if not claims:
        return text
    out: list[str] = []
    pos = 0
    for s, e, kind in sorted(claims):
        start, end = view.origin(s), view.origin(e - 1) + 1
        out.append(text[pos:start])
        out.append(mark(kind))
        for cs, ce in view.cuts[bisect_right(view.cuts, (start, 0)) :]:
            if ce > end:
                break
            out.append(text[cs:ce])  # the breaks stay: lines keep their numbers
        counts[kind] += 1
        if seen is not None:
            seen(kind, text[start:end])
        pos = end
    out.append(text[pos:])
    return "".join(out)


@dataclass
class Redactor:
    """Redacts strings and JSON values, and counts what it took out, by kind. With
    `enabled=False` it passes everything through (the `--no-redact` export)."""

    enabled: bool = True
    counts: Counter[str] = field(default_factory=Counter)
    seen: Seen | None = None  # told of each redaction (a benchmark's inspection)

    def _redact(self, value: str) -> str:
        if self.seen is None:
            return redact_text(value, self.counts)
        return redact_text(value, self.counts, self.seen)

    def text(self, value: str | None) -> str | None:
        if value is None or not self.enabled:
            return value
        return self._redact(value)

    def json_text(self, value: str | None) -> str | None:
        """A JSON document kept as text (call arguments, an event's data): every string in it
        redacted, keys too; kept byte for byte when nothing was found. Text that is not JSON is
        redacted as text. The text itself is looked at first (one pass, and it sees a key beside
        its value); only when that finds something is the document parsed and walked."""
        if value is None or not self.enabled:
            return value
        import json

        probe: Counter[str] = Counter()
        # Escaped line breaks and quotes read as the strings hold them: a key wrapped inside a
        # string is found by the probe as it is in the parsed value.
        redact_text(value.replace("\\n", "\n").replace('\\"', '"'), probe)
        if not probe and not _SECRET_KEY_IN_TEXT.search(value):
            return value
        try:
            parsed = json.loads(value)
        except ValueError:
            return self.text(value)
        before = sum(self.counts.values())
        cleaned = self.value(parsed)
        if sum(self.counts.values()) == before:
            return value
        return json.dumps(cleaned, ensure_ascii=False)

    def value(self, value: Any) -> Any:
        """A parsed JSON value with every string in it (keys too) redacted; the value of a key
        that names a secret (`"password": "hunter2"`) goes whole."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            return self._redact(value)
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if (isinstance(v, str) and len(v) >= 4 and _SECRET_KEY.fullmatch(k)
                        and not v.startswith(("$", "[redacted")) and not _not_a_value(v)):  # fmt: skip
                    self.counts["env-secret"] += 1
                    if self.seen is not None:
                        self.seen("env-secret", v)
                    out[self._redact(k)] = mark("env-secret")
                else:
                    out[self._redact(k)] = self.value(v)
            return out
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value
