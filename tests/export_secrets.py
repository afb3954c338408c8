"""Planted secrets for the export's redaction tests: (kind, secret text). Made up, but each in
the real shape of its kind; built from pieces so no scanner mistakes this file for a leak."""

from __future__ import annotations

_R = "Xq7ZpL2mN9vR4tK8wB3cY6hJ1fD5gS0a"  # 32 mixed characters
_R2 = "Tb9Qe3Wr7Yu1Io5Pa8Sd2Fg6Hj4Kl0Zx"

SECRETS: list[tuple[str, str]] = [
    ("aws-access-key-id", "AKIA" + "Q3EGRZP7T5VYHKXN"),
    (
        "aws-secret-access-key",
        "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "7Ex9mPLE2z",
    ),
    ("github-token", "ghp_" + _R + "ab12"),
    ("github-token", "github_pat_" + "11ABCDEFG0" + _R + "_" + _R2),
    ("gitlab-token", "glpat-" + "xY9zW8vU7tS6rQ5pO4nM"),
    ("slack-token", "xoxb-" + "123456789012-1234567890123-" + _R[:24]),
    ("slack-webhook", "https://hooks.slack.com/services/" + "T0ABCDEFG/B0HIJKLMN/" + _R[:24]),
    ("stripe-key", "sk_live_" + _R[:26]),
    ("stripe-key", "rk_test_" + _R2[:26]),
    ("openai-key", "sk-proj-" + _R + _R2),
    ("openai-key", "sk-" + _R2 + "T3BlbkFJ" + _R[:12]),
    ("anthropic-key", "sk-ant-api03-" + _R + _R2 + "-AA"),
    ("google-api-key", "AIza" + "SyD" + _R),
    ("google-oauth-secret", "GOCSPX-" + _R[:28]),
    ("google-oauth-token", "ya29." + "a0AfH6SM" + _R),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE"
        + " KEY-----\nMIIEpAIBAAKCAQEA"
        + _R
        + "\n"
        + _R2
        + "==\n-----END RSA PRIVATE"
        + " KEY-----",
    ),
    (
        "private-key",
        "-----BEGIN OPENSSH PRIVATE"
        + " KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
        + _R2
        + "\n-----END OPENSSH PRIVATE"
        + " KEY-----",
    ),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIs"
        + "InR5cCI6IkpXVCJ9"
        + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ik"
        + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    ("password-in-url", "postgres://admin:" + "s3cretPassw0rd" + "@db.internal:5432/shop"),
    ("password-in-url", "https://deploy:" + "hunter2hunter2" + "@git.example.com/repo.git"),
    ("env-secret", "DB_PASSWORD=" + "correct-horse-battery"),
    ("env-secret", "export STRIPE_WEBHOOK_SECRET=" + "whsec_" + "abcdEFGH1234"),
    ("env-secret", '"client_secret": "' + "q8w7e6r5t4y3" + '"'),
    ("npm-token", "npm_" + _R + "abcd"),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmc" + _R + _R2),
    ("huggingface-token", "hf_" + _R + "xy"),
    ("sendgrid-key", "SG." + _R[:22] + "." + _R2 + _R[:11]),
    ("bearer-token", "Authorization: Bearer " + "Zm9vYmFy" + _R2),
    ("high-entropy", "k9F" + _R2 + "Qz3"),
]


# The secret part of each planted text (what must not survive); the rest is its context.
def secret_part(kind: str, text: str) -> str:
    if kind == "password-in-url":
        return text.split(":", 2)[2].split("@", 1)[0]
    if kind in ("env-secret", "aws-secret-access-key"):
        return text.replace('"', "").split("=", 1)[-1].split(": ", 1)[-1].strip()
    if kind == "bearer-token":
        return text.rsplit(" ", 1)[1]
    return text


# Ordinary text that looks a little like a secret and must be left exactly as it is.
LOOKALIKES = [
    "sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "session cc-cb2e607c-c758-415a-8b45-c49e4631906a",
    "result #1005 and #a3f2",
    "call toolu_01HD7PpSCWhP2gP8dXvJiyZN",
    "path src/components/Button2Primary/IconLargeWithText.tsx",
    "token = tokenizer.next_token()",
    "the password field is required",
    "test_receipt_shows_savings_of_FIVEOFF_2",
    # Seen in real sessions: a dependency, code, a count, a file name with a date and an id.
    '"gpt-tokenizer": "^2.1.2"',
    "const PROMPT_TOKENS = encode(chatSettings.prompt).length",
    "export MAX_THINKING_TOKENS=10000",
    "/work/shared/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    # Redacted by an earlier export (issue 16): Go subtests named by a hash, an npm integrity
    # value, a long name with a version in it.
    "--- PASS: TestPostToolUseHook/3f2a1b9 (0.00s)",
    "=== RUN   TestWriteTemporaryCheckpoint2/0a1b2c3",
    '"integrity": "sha512-Kq5sNclPz7QV2+lfQIuXBWpSmMgmBdOxGSrL7ya6gz5D0h4kaeCJmrHRSsMlQ8KdW3Fd1NHmT'
    'GhXK4pUqh2JvGA=="',
    "class AbstractSingletonProxyFactoryBean2Impl extends Base",
    "useQueryClientProviderWithAuth0Context()",
    "github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
]


# Known prefixes: a key of these kinds is found cut short (twelve characters or more of it).
PREFIXED = frozenset(k for k, _ in SECRETS) - {
    "aws-secret-access-key", "password-in-url", "env-secret", "bearer-token", "private-key",
    "high-entropy"}  # fmt: skip
LEAD = "a terminal line, wrapped at its width: "  # what precedes a planting on its line


def secret_core(kind: str, text: str) -> str:
    """What must not survive, in any 12 characters of it: the secret part, and of a private
    key its body (the BEGIN and END lines are not secret)."""
    part = secret_part(kind, text)
    if kind == "slack-webhook":
        part = part.split("/services/", 1)[1]  # the URL up to there is Slack's, not secret
    if kind == "private-key":
        part = "".join(part.split("\n")[1:-1])
    return part.replace("\n", "")


def plantings(kind: str, text: str) -> list[str]:
    """The planted text as it comes: whole; broken onto the next line at every position (as a
    terminal wraps a long line); and, for a key with a known prefix, cut short to every length
    from 12 characters (a high-entropy one from 24, the shortest it is judged at), followed by
    an ellipsis or by the line's end."""
    out = [text]
    out += [text[:p] + "\n" + text[p:] for p in range(1, len(text))]
    shortest = 12 if kind in PREFIXED else 24 if kind == "high-entropy" else 0
    if shortest:
        out += [text[:k] + ("…" if k % 2 else "") for k in range(shortest, len(text))]
    return [LEAD + p for p in out]


def fragments(kind: str, text: str) -> set[str]:
    core = secret_core(kind, text)
    return {core[i : i + 12] for i in range(len(core) - 11)}
