"""The session store: one SQLite file per device, WAL mode, many sessions, ordered events."""

from .paths import StoreWarning, default_store_path
from .reader import Reader
from .schema import SCHEMA_VERSION, StoreError
from .writer import Writer

__all__ = ["SCHEMA_VERSION", "Reader", "StoreError", "StoreWarning", "Writer", "default_store_path"]
