from __future__ import annotations

import copy
import json
import re
from typing import Any, Callable, Final, Literal, Mapping, Optional, Protocol, TypedDict, Union, cast

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from typing_extensions import Annotated, NotRequired


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not one of the listed numbers")
    return value


def _never(value: Any) -> Any:
    raise ValueError("no value is allowed here")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _unique(items: list[Any]) -> list[Any]:
    if len({_canonical(i) for i in items}) != len(items):
        raise ValueError("items must be unique")
    return items


def _one_of(values_json: str) -> Callable[[Any], Any]:
    allowed = {_canonical(v) for v in json.loads(values_json)}

    def check(value: Any) -> Any:
        if _canonical(value) not in allowed:
            raise ValueError("must be one of the values the schema lists")
        return value

    return check


def _pattern(source: str) -> Callable[[str], str]:
    """A schema's pattern, compiled once; one Python cannot compile checks nothing."""
    try:
        compiled: Optional[re.Pattern[str]] = re.compile(source)
    except (re.error, OverflowError):
        compiled = None

    def check(value: str) -> str:
        if compiled is not None and compiled.search(value) is None:
            raise ValueError("does not match the pattern")
        return value

    return check


