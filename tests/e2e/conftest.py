"""The end-to-end tests' fixtures (the helpers live in e2e_helpers.py)."""

from e2e_helpers import small_store

__all__ = ["small_store"]
