from pathlib import Path

from planner.catalog import load_catalog
from planner.outputs.docs import END, START, columns_markdown
from planner.plan.sweep import evaluate

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_columns_table_is_current(seed_dir):
    text = README.read_text()
    block = text[text.index(START) + len(START) : text.index(END)].strip()
    assert block == columns_markdown(evaluate(load_catalog(seed_dir))), (
        "README's results-column table is stale: run `python -m planner.outputs.docs`"
    )


def test_every_results_column_is_documented(seed_dir):
    text = README.read_text()
    for column in evaluate(load_catalog(seed_dir)).table.columns:
        assert f"`{column}`" in text, column
