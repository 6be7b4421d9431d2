"""The chart SVG's rewrite into fewer elements (planner.outputs.svg) draws the same picture."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from planner.outputs.svg import _moved, fewer_elements

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'


def _rewritten(body: str) -> str:
    ET.register_namespace("", "http://www.w3.org/2000/svg")
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ET.fromstring(f"{HEAD}{body}</svg>")
    fewer_elements(root)
    text = ET.tostring(root, encoding="unicode")
    return text.split(">", 1)[1].removesuffix("</svg>")  # the body again


@pytest.mark.parametrize(
    ("d", "dx", "dy", "expected"),
    [
        ("M 0 0 L 0 -3.5", 10, 20, "M 10 20 L 10 16.5"),  # a tick: x pairs move by dx, y by dy
        ("M -1 1 L 1 1 L 1 -1 z", 2.5, 0, "M 1.5 1 L 3.5 1 L 3.5 -1 z"),
        ("M 0 3 C 1 3 3 1 3 0", 1, 1, "M 1 4 C 2 4 4 2 4 1"),
        ("m 0 0 l 1 1", 1, 1, None),  # relative commands are not rewritten
    ],
)
def test_moved(d, dx, dy, expected):
    assert _moved(d, dx, dy) == expected


def test_same_style_paths_join_across_text_only():
    body = (
        '<path d="M 0 0 L 1 0" style="stroke: #ccc"/>'
        "<text>0</text>"
        '<path d="M 0 1 L 1 1" style="stroke: #ccc"/>'
        '<path d="M 0 2 L 1 2" style="stroke: #000"/>'
        '<path d="M 0 3 L 1 3" style="stroke: #ccc"/>'
    )
    assert _rewritten(body) == (
        '<path d="M 0 0 L 1 0 M 0 1 L 1 1" style="stroke: #ccc" />'
        "<text>0</text>"
        '<path d="M 0 2 L 1 2" style="stroke: #000" />'
        '<path d="M 0 3 L 1 3" style="stroke: #ccc" />'
    )


def test_translucent_paths_and_paths_with_ids_stay_apart():
    body = (
        '<path d="M 0 0 z" style="fill: #00f; fill-opacity: 0.5"/>'
        '<path d="M 1 1 z" style="fill: #00f; fill-opacity: 0.5"/>'
        '<path id="a" d="M 2 2 z"/>'
        '<path id="b" d="M 3 3 z"/>'
    )
    assert _rewritten(body).count("<path") == 4


def test_markers_become_paths_at_their_place_and_their_defs_go():
    """Two uses of a 2-wide square marker at (10, 20) and (30, 20): one path of two squares,
    with the marker's own stroke over the one the use passes down."""
    body = (
        '<defs><path id="m" d="M -1 -1 L 1 -1 L 1 1 z" style="stroke: #f00"/></defs>'
        '<use xlink:href="#m" x="10" y="20" style="fill: #00f; stroke: #00f"/>'
        '<use xlink:href="#m" x="30" y="20" style="fill: #00f; stroke: #00f"/>'
    )
    assert _rewritten(body) == (
        '<path d="M 9 19 L 11 19 L 11 21 z M 29 19 L 31 19 L 31 21 z" '
        'style="fill: #00f; stroke: #f00" />'
    )


def test_a_marker_still_referred_to_is_kept():
    body = (
        '<defs><path id="m" d="M 0 0 L 1 1"/></defs>'
        '<use xlink:href="#m" x="1" y="1" transform="rotate(45)"/>'
    )
    assert _rewritten(body).count("<use") == 1 and 'id="m"' in _rewritten(body)
