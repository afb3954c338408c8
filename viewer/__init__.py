"""The Textual viewer of a ctxview store."""
