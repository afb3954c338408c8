"""The texts and numbers of context hygiene: defaults in config.json, overridden per session."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any


@cache
def _defaults_text() -> str:
    return resources.files("ctxview.rules").joinpath("config.json").read_text(encoding="utf-8")


def defaults() -> dict[str, Any]:
    values: dict[str, Any] = json.loads(_defaults_text())
    return values


class ConfigError(ValueError):
    """An override names a key the config does not have, or gives it the wrong type."""


class Config(Mapping[str, Any]):
    """Dotted keys (`cap.max_lines`) to values; every sentence the rules print is a template here."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        values = defaults()
        for key, value in (overrides or {}).items():
            if key not in values:
                raise ConfigError(f"There is no config key {key!r}.")
            default = values[key]
            if key == "ids.first":
                value = _parse_first_id(value)
            elif not _same_type(default, value):
                raise ConfigError(
                    f"Config key {key!r} takes a {type(default).__name__}, not {value!r}."
                )
            values[key] = value
        values["ids.first"] = _parse_first_id(values["ids.first"])
        self._values = values
        self.overrides = dict(overrides or {})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def text(self, key: str, **fields: Any) -> str:
        """A sentence of the rules, filled in."""
        return str(self._values[key]).format(**fields)


def _parse_first_id(value: Any) -> int:
    """`ids.first` is hex, as ids are written ("1000"); an int is taken as the number itself."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.lstrip("#"), 16)
        except ValueError:
            pass
    raise ConfigError(f"Config key 'ids.first' takes hex digits such as \"1000\", not {value!r}.")


def _same_type(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, int | float):
        return isinstance(value, int | float)
    return isinstance(value, type(default))
