"""Checks every request gets once, at the edge, before any handler sees it.

Whatever a client sends may end up in SQL or in arithmetic, so text must be
free of control characters (PostgreSQL refuses NUL outright; the others have
no business in a name or an id), a JSON body may only nest so deep and its
numbers must be finite. Field-specific rules (patterns, integer ranges) live
in the request schemas; these are the rules that hold for every field.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import parse_qsl

from placement_api import errors

# C0 and C1 controls, DEL, and lone surrogates (JSON's "\ud800" decodes to one,
# and no database encoding can store it).
_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# Details echo what was refused; a 10 kB parameter is shown cut short.


def check_text(text: str, what: str) -> None:
    """Refuse ``text`` (described by ``what``) when it holds a control character."""
    found = _CONTROL_CHARACTER.search(text)
    if found is not None:
        raise errors.BadRequest(
            f"{what} contains the control character U+{ord(found.group()):04X}, "
            "which is not allowed."
        )


def check_path_and_query(path: str, query_string: bytes) -> None:
    """The decoded path and every query parameter's name and value."""
    check_text(path, "The request path")
    query = query_string.decode("latin-1")
    if "%" not in query and _CONTROL_CHARACTER.search(query) is None:
        return  # nothing escaped: every name and value is a piece of this clean text
    # Parsed the way Starlette parses it, so the check sees what handlers see.
    for name, value in parse_qsl(query, keep_blank_values=True):
        check_text(name, f"The name of query parameter {errors.shortened(name)!r}")
        check_text(value, f"Query parameter {errors.shortened(name)!r}")


def _refuse_constant(name: str) -> float:
    raise errors.BadRequest(f"Malformed JSON: {name} is not a number JSON allows.")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise errors.BadRequest(
            f"Malformed JSON: the number {errors.shortened(text)} is out of range."
        )
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def decode_json(raw: bytes, *, max_depth: int) -> Any:
    """Parse a JSON body and check it as a whole: depth, strings, numbers."""
    encoding = json.detect_encoding(raw)
    try:
        # As json.loads decodes bytes, with one decoder for every body.
        data = _DECODER.decode(raw.decode(encoding, "surrogatepass"))
    except RecursionError as exc:
        raise _too_deep(max_depth) from exc
    except ValueError as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from exc
    # A document cannot nest deeper than it has brackets: most need no walk.
    if raw.count(b"{") + raw.count(b"[") > max_depth:
        _check_depth(data, max_depth)
    if encoding != "utf-8" or _MAY_HOLD_CONTROL.search(raw):
        _check_strings(data)
    return data


# Where a UTF-8 body's strings can get a control character or a lone
# surrogate from: an escape of one, a raw DEL, C1 control or encoded
# surrogate (json decodes with "surrogatepass"); raw C0 controls are invalid
# JSON. Bodies without any (nearly all) need no walk over their strings.
_MAY_HOLD_CONTROL = re.compile(
    rb"\\u00[0189][0-9a-fA-F]|\\u007[fF]|\\u[dD][89a-fA-F]|\x7f|\xc2[\x80-\x9f]|\xed[\xa0-\xbf]"
)


def _too_deep(max_depth: int) -> errors.BadRequest:
    return errors.BadRequest(
        f"Malformed JSON: the document nests deeper than the allowed {max_depth} levels."
    )


def _check_depth(data: Any, max_depth: int) -> None:
    """Walked with a stack of its own: the document may nest deeper than
    Python's recursion limit (but not than json's, which is caught above)."""
    pending: list[tuple[Any, int]] = [(data, 1)] if isinstance(data, dict | list) else []
    while pending:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value
        if depth > max_depth:
            raise _too_deep(max_depth)
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def _location(path: tuple[str, ...]) -> str:
    return "/" + "/".join(errors.shortened(part) for part in path)


def _check_strings(data: Any) -> None:
    """Every string of the document, keys included; the detail names where."""
    pending: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while pending:
        value, path = pending.pop()
        if isinstance(value, str):
            if _CONTROL_CHARACTER.search(value):
                check_text(value, f"JSON does not validate: the string at {_location(path)}")
        elif isinstance(value, dict):
            for key, child in value.items():
                if _CONTROL_CHARACTER.search(key):
                    check_text(key, f"JSON does not validate: a key at {_location(path)}")
                pending.append((child, (*path, key)))
        elif isinstance(value, list):
            pending.extend((child, (*path, str(index))) for index, child in enumerate(value))
