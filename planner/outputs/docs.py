"""Documentation generated from the definitions, so the README cannot drift from the code.

``python -m planner.outputs.docs`` rewrites the results-column table in README.md between its
markers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from planner.plan.sweep import Results
from planner.resources import shipped_catalogs

PIPE = "\\|"  # a literal pipe inside a Markdown table cell
START, END = "<!-- columns:start -->", "<!-- columns:end -->"


def columns_markdown(results: Results) -> str:
    """A Markdown table: every results column with its unit, meaning and formula."""
    from planner.outputs.runs import column_definitions

    lines = ["| column | unit | meaning | formula or origin |", "| --- | --- | --- | --- |"]
    for c in column_definitions(results):
        meaning = c["description"].replace("|", PIPE)
        origin = f"`{c['formula']}`" if "formula" in c else c.get("lookup", "catalog id or size")
        lines.append(f"| `{c['name']}` | {c['unit']} | {meaning} | {origin.replace('|', PIPE)} |")
    return "\n".join(lines)


def update_readme(readme: Path, results: Results) -> bool:
    """Replace the table between the markers; return whether the file changed."""
    text = readme.read_text()
    block = f"{START}\n{columns_markdown(results)}\n{END}"
    new = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    if new != text:
        readme.write_text(new)
    return new != text


def _main() -> int:  # pragma: no cover - a maintenance script
    from planner.catalog import load_catalog
    from planner.plan.sweep import evaluate

    results = evaluate(load_catalog(shipped_catalogs() / "examples" / "seed"))
    changed = update_readme(Path("README.md"), results)
    print("README.md updated" if changed else "README.md already up to date")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
