"""The engine: a session applying context hygiene 3.0.0, with its edits, results and the conformance runner."""
