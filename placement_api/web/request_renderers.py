"""One function per layout that writes a combination of providers as the
JSON text of its allocation request, after a comma (the answer's buffer
takes them as they are), for the microversions that show allocations as a
dict.

A layout's text is fixed but for its providers' uuids: it is made once, a
template with ``%b`` where a uuid goes, and each candidate fills it with its
providers' quoted uuids. Layouts of one, two or three providers listed by
their only mapping in the order they allocate (a NUMA child and a shared
disk, say) get a function written for that many; any other layout gets the
general one. Half the time of building dicts for the encoder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import orjson

from placement_api.domain.candidates.combinations import Combination

Body = dict[str, dict[str, int]]
Render = Callable[[Combination], bytes]
Mappings = tuple[tuple[str, tuple[int, ...]], ...]


def quoted_uuids(uuids: dict[int, str]) -> dict[int, bytes]:
    """Each provider's uuid as JSON text: between quotes as it is when
    ``uuids`` holds nothing JSON escapes (only ASCII, no quote, backslash or
    control character: what the API takes as a uuid), else by the encoder.
    Made for all at once, a few calls in all: a call per uuid costs more than
    using it."""
    texts = list(uuids.values())
    encoded = orjson.dumps(texts)
    # Unescaped ASCII: the encoder adds two quotes per uuid, a comma between
    # two and the brackets, nothing else.
    if len(encoded) == sum(map(len, texts)) + 3 * len(texts) + 1:
        # No uuid holds a tab, which would be escaped: it parts them.
        quoted = ('"' + '"\t"'.join(texts) + '"').encode().split(b"\t") if texts else []
    else:
        quoted = [orjson.dumps(text) for text in texts]
    return dict(zip(uuids, quoted, strict=True))


def renderer(
    slots: tuple[int, ...],
    bodies: Sequence[Body],
    mappings: Mappings | None,
    quoted: dict[int, bytes],
) -> Render:
    """``slots``: the slot of each provider allocated from, with its body;
    ``mappings``: per group suffix, its providers' slots (None: not shown)."""
    template = _template(bodies, mappings)
    # The slot of each uuid the template shows, in its order.
    order = slots + tuple(slot for _, group in mappings or () for slot in group)
    mapped = mappings is not None
    if len(set(order)) == 1:
        return _one(template, slots[0], len(order), quoted)
    if mappings is not None and (len(mappings) != 1 or mappings[0][1] != slots):
        return _any(template, order, quoted)
    if len(slots) == 2:
        return _two(template, itemgetter(*slots), mapped, quoted)
    if len(slots) == 3:
        return _three(template, itemgetter(*slots), mapped, quoted)
    return _any(template, order, quoted)


def _template(bodies: Sequence[Body], mappings: Mappings | None) -> bytes:
    """A comma and the request's JSON text, the bytes the encoder writes for
    its dicts, with ``%b`` for each quoted uuid."""

    def text(value: object) -> bytes:
        return orjson.dumps(value).replace(b"%", b"%%")

    allocations = b",".join(b"%b:" + text(body) for body in bodies)
    template = b',{"allocations":{' + allocations + b"}"
    if mappings is not None:
        listed = b",".join(
            text(suffix) + b":[" + b",".join([b"%b"] * len(group)) + b"]"
            for suffix, group in mappings
        )
        template += b',"mappings":{' + listed + b"}"
    return template + b"}"


def _one(template: bytes, slot: int, uses: int, quoted: dict[int, bytes]) -> Render:
    def render(chosen: Combination) -> bytes:
        return template % ((quoted[chosen[slot]],) * uses)

    return render


def _two(
    template: bytes, pick: Callable[[Combination], Any], mapped: bool, quoted: dict[int, bytes]
) -> Render:
    def render(chosen: Combination) -> bytes:
        a, b = pick(chosen)
        quoted_a, quoted_b = quoted[a], quoted[b]
        return template % (quoted_a, quoted_b, quoted_a, quoted_b)

    def render_unmapped(chosen: Combination) -> bytes:
        a, b = pick(chosen)
        return template % (quoted[a], quoted[b])

    return render if mapped else render_unmapped


def _three(
    template: bytes, pick: Callable[[Combination], Any], mapped: bool, quoted: dict[int, bytes]
) -> Render:
    def render(chosen: Combination) -> bytes:
        a, b, c = pick(chosen)
        quoted_a, quoted_b, quoted_c = quoted[a], quoted[b], quoted[c]
        return template % (quoted_a, quoted_b, quoted_c, quoted_a, quoted_b, quoted_c)

    def render_unmapped(chosen: Combination) -> bytes:
        a, b, c = pick(chosen)
        return template % (quoted[a], quoted[b], quoted[c])

    return render if mapped else render_unmapped


def _any(template: bytes, order: tuple[int, ...], quoted: dict[int, bytes]) -> Render:
    pick = itemgetter(*order)  # two slots at least: a tuple
    lookup = quoted.__getitem__

    def render(chosen: Combination) -> bytes:
        return template % tuple(map(lookup, pick(chosen)))

    return render
