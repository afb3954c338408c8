"""Is a long run of letters and digits a random secret, or ordinary text that looks a little
like one? Pure functions, no I/O.

A secret without a known prefix is judged by what it is made of. Random text mixes upper and
lower case and digits, has high entropy, and is made of short, unpronounceable pieces; names
(`getUserAccountSettingsV2Handler`, `TestPostToolUseHook/3f2a1b9`) are mostly words. Left alone
too: hex (hashes, uuids), the agents' own record ids, digests in base64 (`sha512-…` integrity
values, `h1:…` Go sums), alphabets, and base64 that decodes to ordinary text or a file's bytes.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable
from itertools import pairwise

from ctxview.export.english import PAIRS, WORDS

HEX = re.compile(r"[0-9a-fA-F-]+")
KNOWN_ID = re.compile(r"(?:toolu|srvtoolu|tooluse|msg|req|call|fc|resp|rs|ws|msgbatch|file|"
                      r"agent|chatcmpl|run|thread|asst|step)_[A-Za-z0-9_]+")  # fmt: skip
# A typed id: a word, a separator, then random (`user_2bjiyGLMYbkFZIJPiSgrX4beinK`, OpenRouter's
# `gen-…`). Not when the word says it is a key (`key-…`, `secret_…`); keys whose prefix is
# known (`ghp_`, `sk_live_`) are found before any of this.
_TYPED_ID = re.compile(r"([a-z]{3,10})[_-][A-Za-z0-9]{12,}")
_SECRET_PREFIXES = frozenset({"key", "keys", "secret", "token", "tok", "pat", "api", "apikey",
                              "auth", "priv", "private", "access", "bearer", "pass", "pwd",
                              "sess", "session", "live", "prod", "cred", "sig"})  # fmt: skip
# A digest named by its algorithm: npm's and SRI's `sha512-…`, and in the text before a run:
# Go's `h1:…`, `sha256:…`, `--hash=sha256=…`, a data URI's `base64,`.
_DIGEST_PREFIX = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)|sha3-\d+|md5|blake2[bs]?)[-_]")
_DATA_BEFORE = re.compile(r"(?i)(?:(?:sha-?(?:1|224|256|384|512)|sha3-\d+|md5|blake2[bs]?|h1)"
                          r"[:=]|base64,)$")  # fmt: skip
MAX_SECRET = 256  # a longer run is data (an image, a signature): secrets that long have a prefix
MAX_PART = 128  # a path's or URL's part longer than this is data (a redirect's opaque token)


_A = ord("a")
_SEG = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SEPARATORS = re.compile(r"[/_+.=-]+")
_HASH_SUFFIX = re.compile(r"(.{12,}?)(?:__|[_-])[A-Za-z0-9]{3,8}")
WORD3, WORD4 = 1.0, -0.5  # the mean pair score (bits over chance) of a word of 3, of 4 or more
_VOWELS = frozenset("aeiouy")
_CONSONANTS5 = re.compile(r"[^aeiouy]{5}")
COVERED = 0.5  # a run this much made of words (and hex parts) is a name, not a secret

# Files' first bytes: base64 of an image, a font, an archive is data.
_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"PK\x03\x04", b"\x1f\x8b", b"wOF2",
          b"wOFF", b"RIFF", b"\x00\x00\x01\x00", b"BM", b"<svg", b"<?xml")  # fmt: skip


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _wordlike(piece: str) -> bool:
    """A piece of three letters or more that reads as a word: a short word programmers write
    (english.WORDS), or one with a vowel, no run of five consonants, and letter pairs that are,
    on average, about as common in English as chance or more (a piece of three must do better:
    random ones are common)."""
    if len(piece) < 3:
        return False
    low = piece.lower()
    if low in WORDS:
        return True
    if not any(c in _VOWELS for c in low) or _CONSONANTS5.search(low):
        return False
    total = 0
    for a, b in pairwise(low):
        total += ord(PAIRS[(ord(a) - _A) * 26 + ord(b) - _A]) - 54  # the digit's value - 6
    return total / (len(low) - 1) > (WORD3 if len(low) == 3 else WORD4)


def coverage(core: str) -> float:
    """How much of `core` is words (camelCase and snake_case pieces), with the acronyms and
    short numbers beside them (`HTTP2`, `V2`), and whole hex parts (`TestX/3f2a1b9`)."""
    total = covered = 0
    for part in _SEPARATORS.split(core):
        if not part:
            continue
        total += len(part)
        if len(part) >= 4 and HEX.fullmatch(part):
            covered += len(part)
            continue
        segs = _SEG.findall(part)
        words = [s[0].isalpha() and _wordlike(s) for s in segs]
        # An acronym or a number counts beside a word of four letters or more (`HTTP11Upgrade`).
        long = [w and len(s) >= 4 for w, s in zip(words, segs, strict=True)]
        for i, seg in enumerate(segs):
            short = (seg.isdigit() and len(seg) <= 4) or (seg.isupper() and len(seg) <= 5)
            beside = (i and long[i - 1]) or (i + 1 < len(long) and long[i + 1])
            if words[i] or (short and beside):
                covered += len(seg)
    return covered / total if total else 1.0


def _alphabet(core: str) -> bool:
    """`ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef…`: mostly consecutive characters."""
    steps = sum(ord(b) - ord(a) == 1 for a, b in pairwise(core))
    return steps * 2 >= len(core)


def _wordish(part: str) -> bool:
    """A part of a snake_case or kebab-case name: a number, hex, letters of one case, a word,
    or short. (A random part, `Uj8xg`, is none of these.)"""
    if len(part) <= 2 or part.isdigit() or HEX.fullmatch(part):
        return True
    return part.isalpha() and (part.islower() or part.isupper() or coverage(part) >= COVERED)


def decodes_to_data(token: str, holds_secret: Callable[[str], bool]) -> bool:
    """Base64 whose bytes are a file (an image, a font, an archive) or ordinary text (with
    spaces, or JSON, markup, a path or a URL) that holds no secret itself."""
    core = token.rstrip("=")
    if "-" in core or "_" in core:
        if "+" in core or "/" in core:
            return False
        alt: bytes | None = b"-_"
    else:
        alt = None
    usable = core[: len(core) // 4 * 4]
    try:
        raw = base64.b64decode(usable, altchars=alt, validate=True)
    except (binascii.Error, ValueError):
        return False
    if raw.startswith(_MAGIC):
        return True
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False  # random bytes: what a generated key looks like
    if not text or sum(c.isprintable() or c in "\n\r\t" for c in text) < 0.97 * len(text):
        return False
    head = text.lstrip()[:1]
    if not (" " in text or "\n" in text or head in ("{", "[", "<", "/") or "://" in text):
        return False  # one unbroken word: a secret encoded (an API key's base64) is one
    return not holds_secret(text)


def _path(core: str) -> bool:
    """/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/…: an absolute path whose parts are
    mostly plain (lower case, numbers, hex, words, short). Random base64 that happens to start
    with a slash has random parts."""
    if core[0] not in "/~." or core.count("/") < 2:
        return False
    parts = [p for p in core.split("/") if p]
    plain = sum(1 for p in parts if len(p) <= 2 or p.islower() or HEX.fullmatch(p)
                or coverage(p) >= COVERED)  # fmt: skip
    return plain * 2 > len(parts)


def high_entropy(token: str, holds_secret: Callable[[str], bool] | None = None,
                 shortest: int = 24) -> bool:  # fmt: skip
    """A random-looking token: long, upper and lower case mixed, high entropy, not made of words;
    not hex (hashes, uuids), not a path of plain parts, not a known record id, not a digest,
    not base64 of data. `holds_secret` judges decoded base64 (None: not decoded)."""
    core = token.rstrip("=")
    if not shortest <= len(core) <= MAX_SECRET or HEX.fullmatch(core) or KNOWN_ID.fullmatch(core):
        return False
    if _DIGEST_PREFIX.match(core):
        return False
    typed = _TYPED_ID.fullmatch(core)
    if typed and typed.group(1) not in _SECRET_PREFIXES and _wordlike(typed.group(1)):
        return False
    if _path(core):
        # Judged a part at a time, the long ones (a random folder name is still found). A
        # relative path, src/components/…, is judged whole: its parts are words.
        return parts_high_entropy(core, holds_secret)
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core)):
        return False  # one case only: words, constants, base32 hashes
    parts = re.split(r"[_-]", core)
    if len(parts) > 2 and all(_wordish(p) for p in parts):
        return False  # snake_case or kebab-case words, numbers, hex: an identifier or a name
    if _alphabet(core) or coverage(core) >= COVERED:
        return False
    named = _HASH_SUFFIX.fullmatch(core)
    if named and coverage(named.group(1)) >= COVERED:
        return False  # a name and a short hash: `Layout_canvas__EUTRc` (CSS modules), `index-BkP3`
    if entropy(core) < min(4.0, 0.78 * math.log2(len(core))):
        return False
    return holds_secret is None or not decodes_to_data(token, holds_secret)


def parts_high_entropy(path: str, holds_secret: Callable[[str], bool] | None) -> bool:
    """A path's or a URL's parts judged one at a time: those of 20 characters or more."""
    return any(high_entropy(p, holds_secret, 20) for p in path.split("/")
               if 20 <= len(p) <= MAX_PART)  # fmt: skip


def data_before(text: str, start: int) -> bool:
    """The run at `start` is named as data by what precedes it (`sha256:`, `h1:`, `base64,`)."""
    return bool(_DATA_BEFORE.search(text, max(0, start - 12), start))


def in_blob(text: str, start: int, end: int) -> bool:
    """The run fills its line, and the line before is a run as long or longer (of 60 or more),
    or the line after is one as long: wrapped base64 (`base64 file`, a certificate's body, a
    MIME part), data rather than a secret."""
    if (start and text[start - 1] != "\n") or (end < len(text) and text[end] not in "\r\n"):
        return False
    width = end - start
    before = text.rfind("\n", 0, max(0, start - 1)) + 1 if start else -1
    if start and _full_run(text, before, start - 1) >= max(width, 60):
        return True
    if width < 60:
        return False
    nl = text.find("\n", end)
    if nl >= 0:
        stop = text.find("\n", nl + 1)
        stop = len(text) if stop < 0 else stop
        if _full_run(text, nl + 1, stop) == width:
            return True
    return False


_B64_LINE = re.compile(r"[A-Za-z0-9+/_-]+={0,2}\r?")


def _full_run(text: str, start: int, end: int) -> int:
    """The length of text[start:end] when it is one base64 run (a CR at its end not counted)."""
    if start < 0 or end <= start:
        return -1
    return (end - start - text.endswith("\r", start, end)) if _B64_LINE.fullmatch(
        text, start, end) else -1  # fmt: skip
