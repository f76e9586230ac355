"""What a parsed JSON object or array is here, whichever parser read it.

Triage reads deliveries with simdjson, whose lazy ``Object`` and ``Array`` answer
``get()`` and iteration but are neither a Mapping nor a list at run time; the worker
reads the queue with ``json``, giving dicts and lists. Checks go through these two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

import simdjson

JSONObject = Mapping[str, Any]
_OBJECT_TYPES = (dict, simdjson.Object)
_ARRAY_TYPES = (list, simdjson.Array)


def is_object(value: object) -> TypeGuard[JSONObject]:
    return isinstance(value, _OBJECT_TYPES)


def is_array(value: object) -> TypeGuard[Iterable[Any]]:
    return isinstance(value, _ARRAY_TYPES)
