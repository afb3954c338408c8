"""Secrets out of every string an export writes: pure functions, no I/O.

Each finder replaces what it matched by `[redacted: KIND]` and counts it. A string is redacted
by every finder in turn (the specific ones first, high entropy last), so a key that two finders
would match is counted once, under its specific kind. Each finder is guarded by a literal that
its match must contain (a fast `in`), so a 500 MB export does not run twenty regexes over text
that cannot hold a key.

Left alone on purpose: hex strings of any length (SHA-256 sums, git hashes), uuids, ctxview ids
(`#1005`), and the ids Claude Code and Codex give tool calls and messages (`toolu_…`, `msg_…`,
`call_…`): they identify records, they are not secrets, and links and imports depend on them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Guard = Callable[[str], bool]


def _has(*needles: str) -> Guard:
    return lambda s: any(n in s for n in needles)


@dataclass(frozen=True)
class Finder:
    kind: str
    pattern: re.Pattern[str]
    guard: Guard
    group: int = 0  # the part replaced: 0 the whole match, else that group
    gate: str = "run"  # run: needs a long token run; url: needs "://"; word: a secret-ish word
    spare: Callable[[str], bool] | None = None  # a matched value that is not a secret after all


def _f(kind: str, regex: str, guard: Guard, group: int = 0, flags: int = 0,
       gate: str = "run", spare: Callable[[str], bool] | None = None) -> Finder:  # fmt: skip
    return Finder(kind, re.compile(regex, flags), guard, group, gate, spare)


# Values beside a secret-looking name that are not secrets: counts and versions
# (MAX_TOKENS=4096, "gpt-tokenizer": "^2.1.2"), code (TOKEN = encode(prompt)), placeholders.
_NOT_A_VALUE = re.compile(r"[\d^~.<>=v*x+-]+|.*[()].*|<[^>]*>|x{3,}|\*{3,}|(?i:changeme|none|null|"
                          r"true|false|undefined|your[_-].*)")  # fmt: skip


def _not_a_value(value: str) -> bool:
    return bool(_NOT_A_VALUE.fullmatch(value))


_B = r"(?<![A-Za-z0-9_])"  # a token's start: not inside a longer word
_E = r"(?![A-Za-z0-9_])"

# Names that say "secret" in .env / shell / YAML style: DB_PASSWORD=…, export GH_TOKEN=…
_SECRET_WORDS = ("SECRET", "PASSWORD", "PASSWD", "TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY",
                 "PRIVATE_KEY", "CREDENTIAL", "AUTH_KEY")  # fmt: skip
_secret_name = "|".join(_SECRET_WORDS).replace("_", "_?")
_lower_words = ("secret", "password", "passwd", "token", "api_key", "apikey", "api-key",
                "access_key", "private_key", "credential", "client_secret")  # fmt: skip

FINDERS: tuple[Finder, ...] = (
    _f("private-key",
       r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY"
       r"( BLOCK)?-----|.*\Z)", _has("PRIVATE KEY"), flags=re.S, gate="word"),
    _f("jwt", _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
       _has("eyJ")),
    _f("aws-access-key-id", _B + r"(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{16}" + _E,
       _has("AKIA", "ASIA", "ABIA", "ACCA", "AROA", "AIDA")),
    _f("aws-secret-access-key",
       r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
       lambda s: "ecret" in s or "ECRET" in s, group=1, gate="word"),
    _f("github-token", _B + r"gh[pousr]_[A-Za-z0-9]{30,255}" + _E,
       _has("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _f("github-token", _B + r"github_pat_[A-Za-z0-9_]{22,255}", _has("github_pat_")),
    _f("gitlab-token", _B + r"gl(?:pat|dt|rt|cbt|ptt|ft|oas|soat)-[A-Za-z0-9_-]{20,}",
       _has("gl")),
    _f("slack-webhook",
       r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
       _has("hooks.slack.com")),
    _f("slack-token", _B + r"xox[abprsec]-[A-Za-z0-9-]{10,}", _has("xox")),
    _f("stripe-key", _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", _has("_live_", "_test_")),
    _f("anthropic-key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}", _has("sk-ant-")),
    _f("openai-key", _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}", _has("sk-")),
    _f("google-api-key", _B + r"AIza[0-9A-Za-z_-]{35}" + _E, _has("AIza")),
    _f("google-oauth-secret", _B + r"GOCSPX-[A-Za-z0-9_-]{20,}", _has("GOCSPX-")),
    _f("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_-]{20,}", _has("ya29.")),
    _f("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, _has("npm_")),
    _f("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_-]{50,}", _has("pypi-AgE")),
    _f("huggingface-token", _B + r"hf_[A-Za-z0-9]{30,}" + _E, _has("hf_")),
    _f("sendgrid-key", _B + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}", _has("SG.")),
    _f("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)",
       _has("earer", "EARER"), group=1, gate="word"),
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
       r"[=:][ \t]*"
       r"([\"'])(?![$\[{(<])([^\s\"']{4,})\1",
       _has(*_lower_words, *_SECRET_WORDS, "Password", "Secret", "Token", "ApiKey", "apiKey"),
       group=2, gate="word", spare=_not_a_value),
)  # fmt: skip

# High entropy: a run of base64/url-safe characters, judged in Python (entropy, mix of kinds).
_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/_=-])")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_KNOWN_ID = re.compile(r"(?:toolu|srvtoolu|msg|req|call|fc|resp|rs|ws|msgbatch|file|agent|"
                       r"chatcmpl|run|thread|asst|step)_[A-Za-z0-9_]+")  # fmt: skip
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


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _wordish(part: str) -> bool:
    return len(part) < 8 or part.isalpha() or part.isdigit() or bool(_HEX.fullmatch(part))


def high_entropy(token: str) -> bool:
    """A random-looking token: long, upper and lower case and digits mixed, high entropy; not
    hex (hashes, uuids), not a path of short parts, not a known record id."""
    core = token.rstrip("=")
    if len(core) < 24 or _HEX.fullmatch(core) or _KNOWN_ID.fullmatch(core):
        return False
    if "/" in core:
        parts = core.split("/")
        if core[0] in "/~." or any(len(p) >= 4 and p.isalpha() and p.islower() for p in parts):
            # A path (/work/shared/…, src/components/…): judged a part at a time.
            return any(high_entropy(p) for p in parts if len(p) >= 24)
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core)
            and any(c.isdigit() for c in core)):  # fmt: skip
        return False
    parts = re.split(r"[_-]", core)
    if len(parts) > 2 and all(_wordish(p) for p in parts):
        return False  # snake_case or kebab-case words, numbers, hex: an identifier or a name
    return entropy(core) >= min(4.0, 0.82 * math.log2(len(core)))


def mark(kind: str) -> str:
    return f"[redacted: {kind}]"


# The gates, a few passes at C speed over the text's bytes: every token-shaped secret holds a
# run of at least 16 of these characters; the others need "://" or one of these words.
_TOKEN_TABLE = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/_-.") else ord(" ")
    for i in range(256)
)
_RUN16 = b"a" * 16
_RUN24 = b"a" * 24
_WORDS = (b"secret", b"passw", b"token", b"key", b"credential", b"bearer")
_WORD_TABLE = bytes(
    ord("k") if chr(i) in "kKwWbB" else ord("c") if chr(i) in "cC" else
    ord("r") if chr(i) in "rR" else ord(" ")
    for i in range(256)
)  # fmt: skip


def redact_text(text: str, counts: Counter[str]) -> str:
    """`text` with every secret found replaced by `[redacted: KIND]`; `counts` gains each."""
    if len(text) < 8:
        return text  # too short for any finder's pattern
    raw = text.encode("utf-8", "surrogatepass")
    runs = raw.translate(_TOKEN_TABLE)
    run = _RUN16 in runs
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
    for finder in FINDERS:
        if gates[finder.gate] and finder.guard(text):
            text = _apply(finder, text, counts)
    if _RUN24 in runs:
        text = _entropy_pass(text, counts)
    return text


def _apply(finder: Finder, text: str, counts: Counter[str]) -> str:
    g = finder.group

    def repl(m: re.Match[str]) -> str:
        if g == 0:
            counts[finder.kind] += 1
            return mark(finder.kind)
        value = m.group(g)
        if (
            value is None
            or value.startswith("[redacted")
            or (finder.spare is not None and finder.spare(value))
        ):
            return m.group(0)
        counts[finder.kind] += 1
        start, end = m.span(g)
        base = m.start()
        whole = m.group(0)
        return whole[: start - base] + mark(finder.kind) + whole[end - base :]

    return finder.pattern.sub(repl, text)


def _entropy_pass(text: str, counts: Counter[str]) -> str:
    def repl(m: re.Match[str]) -> str:
        if high_entropy(m.group(0)):
            counts["high-entropy"] += 1
            return mark("high-entropy")
        return m.group(0)

    return _RUN.sub(repl, text)


@dataclass
class Redactor:
    """Redacts strings and JSON values, and counts what it took out, by kind. With
    `enabled=False` it passes everything through (the `--no-redact` export)."""

    enabled: bool = True
    counts: Counter[str] = field(default_factory=Counter)

    def text(self, value: str | None) -> str | None:
        if value is None or not self.enabled:
            return value
        return redact_text(value, self.counts)

    def json_text(self, value: str | None) -> str | None:
        """A JSON document kept as text (call arguments, an event's data): every string in it
        redacted, keys too; kept byte for byte when nothing was found. Text that is not JSON is
        redacted as text. The text itself is looked at first (one pass, and it sees a key beside
        its value); only when that finds something is the document parsed and walked."""
        if value is None or not self.enabled:
            return value
        import json

        probe: Counter[str] = Counter()
        redact_text(value, probe)
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
            return redact_text(value, self.counts)
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if (isinstance(v, str) and len(v) >= 4 and _SECRET_KEY.fullmatch(k)
                        and not v.startswith(("$", "[redacted")) and not _not_a_value(v)):  # fmt: skip
                    self.counts["env-secret"] += 1
                    out[redact_text(k, self.counts)] = mark("env-secret")
                else:
                    out[redact_text(k, self.counts)] = self.value(v)
            return out
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def summary(self) -> str:
        """`redacted 3 secrets: 2 github-token, 1 jwt` (or that none were found)."""
        if not self.enabled:
            return "not redacted (--no-redact)"
        total = sum(self.counts.values())
        if not total:
            return "redacted 0 secrets (none found)"
        most = sorted(self.counts.items(), key=lambda x: (-x[1], x[0]))  # ties by name: the same
        kinds = ", ".join(f"{n} {k}" for k, n in most)  # words whichever process counted first
        return f"redacted {total} secret{'s' * (total != 1)}: {kinds}"
