"""The spec's rules as pure functions: no I/O, shared by the engine, the importers and the viewer."""
