from __future__ import annotations

import functools
import inspect
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "catalogs" / "examples" / "seed"
SHIPPED = REPO / "catalogs"

#: Round-number assumptions for hand-worked costs: 0.10 USD/kWh, PUE 1.5, full power, 36 months
#: of 730 hours, no node overhead or hosting (the report's and the advice's test catalogs).
ROUND_ASSUMPTIONS = """
    assumptions:
      runtime_overhead: 2 GiB
      reserve: 2 GiB
      kv_block_tokens: 1
      tensor_parallel_sizes: [1]
      electricity_usd_per_kwh: 0.10
      pue: 1.5
      utilisation: 1.0
      amortisation_months: 36
      devices_per_node: 8
      node_overhead_usd: 0
      hosting_usd_per_node_month: 0
      hours_per_month: 730
"""


# The slow tests: `pytest` leaves them out, `pytest --all` (CI) runs them. A test is slow when it
# starts a spreadsheet engine (it calls recalculate_many, or a fixture it uses does), sits in a
# module of SLOW_MODULES, uses a fixture of SLOW_FIXTURES, or is named in SLOW_TESTS. The lists
# hold what took over about 5 s on two idle cores (a run of the shipped catalogs, a battery of
# runs killed or raced, a wheel build); `pytest --durations=30 --all` finds new ones.

#: Modules whose every test is slow, by file name without ``.py``.
SLOW_MODULES = frozenset(
    {
        "test_hostile_runs",  # a battery of careless commands over several run folders
        "test_shipped_example",  # a full run of the shipped catalogs
        "test_wheel",  # builds the wheel and installs it into a fresh venv
        "test_workbook_shipped",  # the shipped run's workbook recalculated and edited
    }
)
#: ``module::fixture``: the tests of that module that use that fixture are slow.
SLOW_FIXTURES = frozenset(
    {
        "test_report_layout::shipped",  # the shipped report on two papers
        "test_report_layout::long_names",  # ten long-named workloads, reported on two papers
    }
)
#: ``module::test`` (every parameter) or ``module::test[parameter`` (the parameters so named).
SLOW_TESTS = frozenset(
    {
        "test_calibration::test_a_written_calibration_makes_the_plan_reproduce_the_measurements",
        "test_calibration::test_calibrating_on_the_sweep_brings_held_out_points_close",
        "test_calibration::test_every_figure_is_used_or_named_and_each_reads_as_fitted",
        "test_catalog::test_earlier_report_is_untouched_by_a_failed_run",
        "test_cli::test_diff_and_baseline",
        "test_cli::test_run_refuses_to_overwrite_and_force_replaces",
        "test_cli::test_run_writes_the_run_folder",
        "test_executor::test_an_unreachable_scheduler_is_a_clear_error",
        "test_hostile::test_a_full_disk_while_writing_leaves_nothing",
        "test_hostile::test_sigterm_at_any_stage_leaves_no_staging_folder",
        "test_hostile::test_sigterm_while_a_sweep_streams_leaves_no_scratch_folder",
        "test_hostile_inputs::test_a_hostile_catalog_is_refused_at_the_fields_line[a million",
        "test_hostile_inputs::test_import_hf_refuses_what_check_would_refuse[a 1 GiB file",
        "test_hostile_inputs::test_no_bad_value_in_any_field_leaks_library_words_or_a_wrong_line",
        "test_hostile_measure::test_an_unknown_release_is_planned_with_the_nearest_and_said",
        "test_measure::test_known_efficiencies_are_recovered_within_one_percent",
        "test_measure::test_the_workbook_has_a_measured_sheet",
        "test_pipeline::test_a_run_tells_its_progress_stage_by_stage",
        "test_pipeline::test_a_run_writes_its_folder_and_compares_with_its_baseline",
        "test_report_layout::test_the_assumptions_choose_the_runs_paper",
        "test_report_layout::test_three_thousand_devices_give_the_same_short_report",
        "test_run_folders::test_a_kill_between_the_renames_of_force_loses_neither_run",
        "test_run_folders::test_ids_that_look_like_the_same_number_stay_distinct",
        "test_run_folders::test_two_runs_into_one_out_started_together_exactly_one_wins",
        "test_run_folders::test_two_runs_with_one_name_started_together_both_land_and_say_where",
        "test_stream::test_a_streamed_run_gives_one_answer_per_candidate_in_every_file",
        "test_stream::test_a_streamed_run_holds_every_row_and_says_what_it_shows",
        "test_stream::test_without_full_csv_the_csv_holds_the_leading_options",
        "test_uncertainty::test_a_line_that_wins_in_no_draw_reads_zero_percent",
        "test_uncertainty::test_a_run_with_draws_writes_the_bands",
        "test_uncertainty::test_an_uncertain_prompt_length_moves_the_devices_as_worked_by_hand",
        "test_uncertainty::test_the_draws_are_the_same_on_every_executor",
        "test_uncertainty::test_the_p90_purchase_is_the_devices_at_the_tenth_percentile_of_efficiency",
    }
)
#: A call that starts a spreadsheet engine (tests/spreadsheet.py).
ENGINE_CALL = "recalculate_many("


@pytest.fixture
def seed_dir() -> Path:
    return SEED


@pytest.fixture
def seed_copy(tmp_path: Path) -> Path:
    """A writable copy of the seed catalog."""
    dest = tmp_path / "catalogs"
    shutil.copytree(SEED, dest)
    return dest


@pytest.fixture(scope="session")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder of the seed catalog, written once; tests copy it before changing it."""
    from click.testing import CliRunner

    from planner.cli import main

    folder = tmp_path_factory.mktemp("seed-run") / "run"
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        help="run every test, the slow ones too (what CI runs); without it `pytest` leaves out "
        "the tests marked slow, except in test files named on the command line",
    )


@functools.cache
def _source(function: Callable[..., object]) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):  # a fixture pytest defines itself
        return ""


def starts_an_engine(item: pytest.Item) -> bool:
    """Whether ``item``'s test function, or a fixture it uses, calls a spreadsheet engine."""
    fixtures = getattr(item, "_fixtureinfo", None)
    functions = [getattr(item, "function", None)] + [
        definitions[-1].func
        for definitions in (fixtures.name2fixturedefs if fixtures else {}).values()
    ]
    return any(ENGINE_CALL in _source(f) for f in functions if f is not None)


def slow(item: pytest.Item) -> bool:
    """Whether ``item`` is one of the slow tests (see :data:`SLOW_MODULES`)."""
    module = item.path.stem
    test = f"{module}::{item.name}"
    return (
        module in SLOW_MODULES
        or test.split("[")[0] in SLOW_TESTS
        or any("[" in entry and test.startswith(entry) for entry in SLOW_TESTS)
        or any(f"{module}::{name}" in SLOW_FIXTURES for name in getattr(item, "fixturenames", ()))
        or starts_an_engine(item)
    )


def named_files(config: pytest.Config) -> set[Path]:
    """The test files named on the command line (a file or a node id in it, not a folder)."""
    here = config.invocation_params.dir
    paths = (Path(here, str(arg).split("::")[0]) for arg in config.args)
    return {path.resolve() for path in paths if path.is_file()}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests, and leave them out unless asked for (``--all``, a ``-m`` expression,
    or their file named on the command line).

    Under CI a missing spreadsheet engine fails the run instead of skipping the workbook tests.
    """
    if os.environ.get("CI") and not (shutil.which("soffice") or shutil.which("libreoffice")):
        raise pytest.UsageError("CI=true but LibreOffice (soffice) is not installed")
    if os.environ.get("CI") and not shutil.which("ssconvert"):
        raise pytest.UsageError("CI=true but Gnumeric (ssconvert) is not installed")
    marked = [item for item in items if slow(item)]
    for item in marked:
        item.add_marker(pytest.mark.slow)
    if config.getoption("all") or config.option.markexpr:
        return
    named = named_files(config)
    left_out = [item for item in marked if item.path not in named]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        kept = set(map(id, left_out))
        items[:] = [item for item in items if id(item) not in kept]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``-n`` each test file goes to one worker (``--dist loadfile``) unless ``--dist``
    says otherwise: a module's fixtures (a run of the shipped catalogs, workbooks recalculated
    in LibreOffice) are then built once, not on every worker."""
    from xdist.scheduler import LoadFileScheduling

    if config.getvalue("dist") == "load" and not any(
        str(arg).startswith("--dist") for arg in config.invocation_params.args
    ):
        return LoadFileScheduling(config, log)
    return None
