"""ctxview's engine: context hygiene 3.0.0 over a SQLite session store."""

__version__ = "0.1.0"
