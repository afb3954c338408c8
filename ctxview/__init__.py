"""ctxview: the engine (backend), the viewer and the themes, importable under one name.

Installed from a wheel, the three are subpackages here (ctxview/backend, ...). In a checkout they
are the repository's top-level folders, which this package's path takes in, so the same
`ctxview.backend` import works in both without installing top-level names that could collide
with another project's `backend`.
"""

from pathlib import Path

_here = Path(__file__).resolve().parent
if not (_here / "backend").is_dir():
    __path__.append(str(_here.parent))
