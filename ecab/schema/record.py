"""The order-preserving record base every format record derives from, and the error bad input raises.

A record is a dataclass whose known keys are typed attributes. Keys the model does not know are kept in
`extras`, and the key order seen on input is remembered, so reading a released file and writing it back
yields equal JSON objects, key order included. Records built in code emit the field order their class
declares, which is the original's order.

Bad input never surfaces as a bare KeyError: `FormatError` names the file, the line and the field.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


class FormatError(ValueError):
    """A record that does not fit the format. Its message names file, line and field."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None):
        self.path, self.line, self.field, self.reason = path, line, field, message
        where = f"{path}" if path is not None else "<input>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: field '{field}': {message}" if field else f"{where}: {message}")

    def located(self, path: str | Path, line: int) -> "FormatError":
        return FormatError(self.reason, path=path, line=line, field=self.field)


def field_error(field_path: str, message: str) -> FormatError:
    return FormatError(message, field=field_path)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class Record:
    """Base of every format record: typed known keys, untyped extras, remembered key order."""

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    # Optional keys that the original omits when absent (written only if present on input or set).
    OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ()

    extras: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, kw_only=True)
    key_order: list[str] | None = field(default=None, repr=False, compare=False, kw_only=True)

    @classmethod
    def _known(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name not in ("extras", "key_order")]

    @classmethod
    def from_dict(cls, data: Any, where: str = ""):
        """Build from a JSON object; `where` is the field path used in error messages."""
        label = where or cls.__name__
        if not isinstance(data, dict):
            raise field_error(label, f"expected a JSON object, got {type(data).__name__}")
        for key in cls.REQUIRED:
            if key not in data:
                raise field_error(f"{where}.{key}" if where else key, "required field is missing")
        known = set(cls._known())
        kwargs = {k: cls._parse_field(k, v, f"{where}.{k}" if where else k) for k, v in data.items() if k in known}
        extras = {k: v for k, v in data.items() if k not in known}
        obj = cls(**kwargs, extras=extras, key_order=list(data.keys()))
        obj._validate(where)
        return obj

    @classmethod
    def _parse_field(cls, key: str, value: Any, where: str) -> Any:
        """Hook: turn a raw JSON value into the typed attribute (nested records)."""
        return value

    def _validate(self, where: str) -> None:
        """Hook: shape checks that need several fields at once."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, in input key order when there was an input, else declaration order."""
        values = {k: _dump(getattr(self, k)) for k in self._known()}
        values.update(self.extras)
        if self.key_order is not None:
            order = [k for k in self.key_order if k in values]
            order += [k for k in values if k not in self.key_order and not self._omit(k, values[k])]
        else:
            order = [k for k in values if not self._omit(k, values[k])]
        return {k: values[k] for k in order}

    def _omit(self, key: str, value: Any) -> bool:
        return key in self.OMIT_IF_NONE and value is None


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def parse_list(items: Any, cls: type[Record], where: str) -> list:
    if not isinstance(items, list):
        raise field_error(where, f"expected a list, got {type(items).__name__}")
    return [cls.from_dict(item, f"{where}[{i}]") for i, item in enumerate(items)]
