"""decode_json: every way a control character can reach a decoded string is caught,
whether the body escapes it, carries it raw, or is not UTF-8 at all."""

from __future__ import annotations

from typing import Any

import pytest

from placement_api import errors
from placement_api.web.input_checks import check_path_and_query, decode_json

REFUSED = {
    "escaped NUL": (b'{"a": "\\u0000"}', "U+0000"),
    "escaped C1": (b'{"a": "\\u009F"}', "U+009F"),
    "escaped DEL": (b'{"a": "x\\u007f"}', "U+007F"),
    "escaped lone surrogate": (b'{"a": "\\udc00"}', "U+DC00"),
    "raw DEL": (b'{"a": "\x7f"}', "U+007F"),
    "raw C1 (UTF-8)": ('{"a": "\u0085"}'.encode(), "U+0085"),
    "raw surrogate (UTF-8 bytes)": (b'{"a": "\xed\xa0\x80"}', "U+D800"),
    "escaped in a key": (b'{"k\\u0001": 1}', "a key at /"),
    "UTF-16 body": ('{"a": ["\\u0002"]}'.encode("utf-16"), "the string at /a/0"),
    "UTF-32 raw C1": ('{"a": "\u0090"}'.encode("utf-32"), "U+0090"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_control_characters_are_refused_however_they_arrive(case: str) -> None:
    raw, named = REFUSED[case]
    with pytest.raises(errors.BadRequest) as refused:
        decode_json(raw, max_depth=32)
    assert named in refused.value.detail


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"a": "\\\\u0000"}', {"a": "\\u0000"}),  # an escaped backslash, then text
        ('{"a": "café \u00a0 😀"}'.encode(), {"a": "café \u00a0 😀"}),
        (b"null", None),
        (b"7", 7),
        ("[1.5]".encode("utf-16"), [1.5]),
    ],
)
def test_ordinary_text_passes(raw: bytes, expected: Any) -> None:
    assert decode_json(raw, max_depth=32) == expected


@pytest.mark.parametrize(
    ("query", "named"),
    [
        (b"name=a%00b", "Query parameter 'name'"),
        (b"na%7Fme=x", "The name of query parameter"),
        (b"in_tree=\x01", "Query parameter 'in_tree'"),
        (b"a=1&required=%C2%85", "Query parameter 'required'"),
    ],
)
def test_control_characters_in_the_query_are_refused(query: bytes, named: str) -> None:
    with pytest.raises(errors.BadRequest) as refused:
        check_path_and_query("/resource_providers", query)
    assert named in refused.value.detail


@pytest.mark.parametrize("query", [b"", b"in_tree=abc&name=a+b", b"name=caf%C3%A9&x=%2B"])
def test_a_clean_query_passes(query: bytes) -> None:
    check_path_and_query("/resource_providers", query)
