"""The commands' one error: a sentence for stderr (its own module so that `cli.py` and the
commands both import it, neither importing the other)."""

from __future__ import annotations


class CliError(Exception):
    """A one-sentence error for stderr; the command exits non-zero."""
