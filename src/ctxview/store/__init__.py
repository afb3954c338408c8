"""The session store: one SQLite file per device, WAL mode, many sessions, ordered events."""

from ctxview.store.paths import StoreWarning, default_store_path
from ctxview.store.reader import Reader
from ctxview.store.schema import SCHEMA_VERSION, StoreError
from ctxview.store.writer import Writer

__all__ = ["SCHEMA_VERSION", "Reader", "StoreError", "StoreWarning", "Writer", "default_store_path"]
