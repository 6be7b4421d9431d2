import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.outputs.docs import generated_pages
from planner.plan.sweep import evaluate

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def seed_results():
    from planner.resources import shipped_catalogs

    return evaluate(load_catalog(shipped_catalogs() / "examples" / "seed"))


def test_every_results_column_is_documented(seed_dir):
    text = (DOCS / "reference" / "columns.md").read_text()
    for column in evaluate(load_catalog(seed_dir)).table.columns:
        assert f"`{column}`" in text, column


@pytest.mark.parametrize("page", ["columns.md", "metrics.md", "catalog.md", "api.md"])
def test_generated_page_is_current(page, seed_results):
    relative = f"reference/{page}"
    path = DOCS / relative
    assert path.exists() and path.read_text() == generated_pages(seed_results)[relative], (
        f"docs/{relative} is stale: run `python -m planner.outputs.docs`"
    )


def test_every_metric_and_catalog_field_is_on_the_site(seed_results):
    from planner.catalog.records import SCHEMAS
    from planner.model.metric import metrics

    pages = generated_pages(seed_results)
    for name in metrics():
        assert f"{{#{name}}}" in pages["reference/metrics.md"], name
    for stem in SCHEMAS:
        assert f"## `{stem}.yaml`" in pages["reference/catalog.md"], stem


def test_site_builds_strictly(tmp_path):
    """The site builds with every warning an error (broken links, anchors, snippets, pages
    missing from the navigation): the build CI runs, since CI installs the test extra."""
    beside = Path(sys.executable).parent / "mkdocs"
    mkdocs = str(beside) if beside.exists() else shutil.which("mkdocs")
    if mkdocs is None:
        if os.environ.get("CI"):  # CI installs the test extra: a missing mkdocs is a failure
            pytest.fail("CI=true but mkdocs is not installed (pip install '.[test]' brings it)")
        pytest.skip("mkdocs is not installed (pip install '.[test]' brings it)")
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "concepts" / "index.html").exists()
