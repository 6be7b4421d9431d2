"""Reading YAML safely, with the line number of every key and list item.

Catalog errors must point at a line. PyYAML's composed node tree carries positions; this module
builds ordinary Python data from it and, beside it, a map from each path (``("hardware", 0,
"memory")``) to the 1-based line where that key or item starts.

It also refuses what a catalog never needs and an attacker might send: documents whose aliases
expand to an enormous tree ("billion laughs"), and mappings that repeat a key (PyYAML would
silently keep the last one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

#: Largest number of nodes a document may expand to once aliases are followed.
MAX_EXPANDED_NODES = 100_000

Path = tuple[str | int, ...]


class YamlProblem(ValueError):
    """A document that cannot be read; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class Document:
    """Parsed data with the line of every path in it."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get(())


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards recursive structures
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(
            _expanded_size(k, memo, limit) + _expanded_size(v, memo, limit) for k, v in node.value
        )
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, memo, limit) for v in node.value)
    else:
        size = 1
    memo[key] = size
    if size > limit:
        raise YamlProblem(
            f"the document expands to more than {limit:,} nodes through anchors and aliases; "
            "write the entries out instead",
            node.start_mark.line + 1,
        )
    return size


def _record_lines(node: yaml.Node, path: Path, lines: dict[Path, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlProblem("mapping keys must be plain text", key_node.start_mark.line + 1)
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen and key != "<<":
                raise YamlProblem(f"key {key!r} appears twice (first on line {seen[key]})", line)
            seen[key] = line
            child = (*path, key)
            lines.setdefault(child, line)
            _record_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            child = (*path, i)
            lines.setdefault(child, item.start_mark.line + 1)
            _record_lines(item, child, lines)


def load(text: str) -> Document:
    """Parse one YAML document from ``text`` with PyYAML's safe loader.

    Raises :class:`YamlProblem` for invalid YAML, several documents, repeated keys, or alias
    expansion past :data:`MAX_EXPANDED_NODES`.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(None)
        _expanded_size(node, {}, MAX_EXPANDED_NODES)
        lines: dict[Path, int] = {(): node.start_mark.line + 1}
        _record_lines(node, (), lines)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        message = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise YamlProblem(f"invalid YAML: {message}", line) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return Document(data, lines)
