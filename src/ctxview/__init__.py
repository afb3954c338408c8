"""ctxview: see what an AI coding agent's context really holds.

The rooms and the arrows between them are drawn in README.md ("The house").
"""

__version__ = "0.1.0"
