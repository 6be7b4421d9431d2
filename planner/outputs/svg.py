"""Fewer SVG elements for the same picture: what :func:`planner.outputs.charts.to_svg` does to
matplotlib's output before the report inlines it.

WeasyPrint styles and draws every SVG element on its own (about half a millisecond each here), and
matplotlib writes one element per bar, grid line, marker and error-bar cap: a report's charts held
some 2,700 elements, a quarter of its PDF time. Two rewrites keep the drawing and cut the count:

- a ``<use>`` of a marker (a path in ``<defs>``, placed at x, y) becomes that path moved to x, y;
- a ``<path>`` whose attributes, all but its ``d``, are an earlier sibling path's, with nothing
  but ``<text>`` between them, joins that path as more subpaths. Only text is stepped over, so
  the only change of order is a line drawn before, not after, a label beside it; a path with an
  id, or with an opacity below one (where overlaps would show), stays as it is.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"

#: Path data as matplotlib writes it: absolute commands, each followed by x y pairs.
_COMMAND = re.compile(r"([MLCQZmlcqz])([^MLCQZmlcqz]*)")


def _style(text: str) -> dict[str, str]:
    pairs = (part.split(":", 1) for part in text.split(";") if ":" in part)
    return {k.strip(): v.strip() for k, v in pairs}


def _moved(d: str, dx: float, dy: float) -> str | None:
    """Path data ``d`` moved by (dx, dy); None if it has a command other than absolute M, L, C,
    Q and z (their arguments are x y pairs)."""
    parts = []
    for command, arguments in _COMMAND.findall(d):
        if command.islower() and command != "z":
            return None
        numbers = [float(n) for n in arguments.split()]
        if command in "Zz":
            parts.append("z")
            continue
        if len(numbers) % 2:
            return None
        moved = [n + (dy if i % 2 else dx) for i, n in enumerate(numbers)]
        parts.append(command + " " + " ".join(f"{n:.6g}" for n in moved))
    return " ".join(parts)


def _markers(root: ET.Element) -> dict[str, ET.Element]:
    """The paths in ``<defs>`` by id."""
    return {
        path.get("id", ""): path
        for defs in root.iter(f"{SVG}defs")
        for path in defs.findall(f"{SVG}path")
        if path.get("id")
    }


def _expanded(use: ET.Element, markers: dict[str, ET.Element]) -> ET.Element | None:
    """The path a ``<use>`` of a marker draws, or None where it is not that simple."""
    if set(use.attrib) - {XLINK_HREF, "x", "y", "style"}:
        return None
    marker = markers.get(use.get(XLINK_HREF, "").removeprefix("#"))
    if marker is None or set(marker.attrib) - {"id", "d", "style"}:
        return None
    d = _moved(marker.get("d", ""), float(use.get("x", 0)), float(use.get("y", 0)))
    if d is None:
        return None
    # the referenced element's own properties win over those the <use> passes down
    style = _style(use.get("style", "")) | _style(marker.get("style", ""))
    path = ET.Element(f"{SVG}path", {"d": d})
    if style:
        path.set("style", "; ".join(f"{k}: {v}" for k, v in style.items()))
    return path


def _mergeable(element: ET.Element) -> bool:
    if element.tag != f"{SVG}path" or "id" in element.attrib or len(element):
        return False
    style = _style(element.get("style", ""))
    return all(float(style.get(k, "1")) >= 1 for k in ("opacity", "fill-opacity", "stroke-opacity"))


def _merge(element: ET.Element, markers: dict[str, ET.Element]) -> None:
    kept: list[ET.Element] = []
    last: tuple[tuple[tuple[str, str], ...], ET.Element] | None = None  # the open path
    for child in list(element):
        if child.tag == f"{SVG}use":
            path = _expanded(child, markers)
            child = child if path is None else path  # (an element without children is falsy)
        else:
            _merge(child, markers)
        if child.tag == f"{SVG}text":
            kept.append(child)
            continue
        if not _mergeable(child):
            last = None  # nothing merges across another drawn element
            kept.append(child)
            continue
        key = tuple(sorted((k, v) for k, v in child.attrib.items() if k != "d"))
        if last is not None and last[0] == key:
            last[1].set("d", f"{last[1].get('d', '')} {child.get('d', '')}")
            continue
        last = (key, child)
        kept.append(child)
    element[:] = kept


def _referenced(root: ET.Element) -> set[str]:
    """The ids an href or a ``url(#...)`` of ``root`` refers to."""
    found = set()
    for element in root.iter():
        for value in element.attrib.values():
            found.update(re.findall(r"url\(#([^)]+)\)", value))
        found.add(element.get(XLINK_HREF, "").removeprefix("#"))
    return found


def fewer_elements(root: ET.Element) -> None:
    """Rewrite the SVG tree ``root`` in place as the module says; markers nothing refers to any
    more are dropped, with their ``<defs>`` where it is left empty."""
    _merge(root, _markers(root))
    used = _referenced(root)
    for parent in list(root.iter()):
        for defs in parent.findall(f"{SVG}defs"):
            for path in defs.findall(f"{SVG}path"):
                if path.get("id") not in used:
                    defs.remove(path)
            if not len(defs):
                parent.remove(defs)
