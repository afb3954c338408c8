"""Redaction's precision (issue 16 §3.3): on a corpus of ordinary things that look a little like
secrets (identifiers, Go and pytest test names, digests, npm integrity values, docker digests,
uuids, paths, base64 of ordinary text and files, URLs, git hashes, CSS, minified JavaScript; see
export_corpus.py) at most one false positive per 100,000 words, and every planted secret of
every kind still caught, none of it left (no 12 characters). bench/bench_export.py --only redact
measures the same and the real transcripts of ../shared/realdata."""

from __future__ import annotations

from collections import Counter

from export_corpus import ordinary, planted, word_count

from ctxview.export.redact import Redactor


def test_at_most_one_false_positive_per_100k_words() -> None:
    docs = ordinary(seed=16, documents=120)
    words = word_count(docs)
    assert words > 100_000, words
    r = Redactor()
    examples = []
    for category, texts in docs.items():
        for text in texts:
            out = r.text(text) or ""
            if out != text:
                at = out.index("[redacted")
                examples.append((category, text[max(0, at - 40) : at + 60]))
    false = sum(r.counts.values())
    per_100k = false * 100_000 / words
    assert per_100k <= 1, (f"{false} false positives in {words:,} words ({per_100k:.1f} per "
                           f"100,000), {dict(r.counts)}: {examples[:8]}")  # fmt: skip


def test_every_planted_secret_is_caught() -> None:
    missed = []
    kinds: Counter[str] = Counter()
    for kind, text, secret in planted(seed=16, each=12):
        kinds[kind] += 1
        r = Redactor()
        out = r.text(text) or ""
        left = [secret[i : i + 12] for i in range(max(1, len(secret) - 11))
                if secret[i : i + 12] in out.replace("\n", "")]  # fmt: skip
        if left or not r.counts:
            missed.append((kind, text[:100], out[:100]))
    assert len(kinds) >= 20, kinds
    assert not missed, f"{len(missed)} of {sum(kinds.values())} missed: {missed[:5]}"
