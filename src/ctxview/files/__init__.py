"""Opening files safely: only regular files, never blocking, never outside where they may be."""
