"""The sub-commands of `ctxview`, one module each."""
