"""Importers: Claude Code and Codex transcripts replayed through the engine, from a file that exists
(`import_file`) or one that is still being written (`follow`)."""
