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

#: Most nodes that anchors and aliases may add to a document once followed: a catalog written
#: out in full is never refused, however long (its size is bounded by the file size limit).
MAX_ALIAS_NODES = 100_000

Path = tuple[str | int, ...]

#: PyYAML's safe loader, on libyaml where it is installed (several times faster on long lists
#: of samples; the same documents and errors).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes under ``node`` with every alias followed; ``memo`` collects each distinct node once
    (so the count takes time linear in the document, not in its expansion)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards recursive structures
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, memo) for v in node.value)
    else:
        size = 1
    memo[key] = size
    return size


def _check_aliases(node: yaml.Node) -> None:
    """Refuse a document that aliases expand by more than :data:`MAX_ALIAS_NODES` nodes."""
    memo: dict[int, int] = {}
    added = _expanded_size(node, memo) - len(memo)
    if added > MAX_ALIAS_NODES:
        raise YamlProblem(
            f"anchors and aliases expand the document by {added:,} nodes, more than the "
            f"{MAX_ALIAS_NODES:,} allowed; write the entries out instead",
            node.start_mark.line + 1,
        )


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
    """Parse one YAML document from ``text`` with PyYAML's safe loader (:data:`SAFE_LOADER`).

    Raises :class:`YamlProblem` for invalid YAML, several documents, repeated keys, or alias
    expansion past :data:`MAX_ALIAS_NODES`.
    """
    loader = SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(None)
        _check_aliases(node)
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
