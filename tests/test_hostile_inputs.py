"""Hostile input to ``planner check`` and ``planner import-hf``, and what it must end in.

Each case of a table ends in a clean refusal: exit 1, no traceback, a message in planner's own
words (none of the validation library's: :data:`LEAKS`) that names the file and the line of the
field at fault, and nothing written. The lines are found here by searching the edited file for
the field, not read off the program. A sweep then puts many bad values through every field of
the seed catalog and checks the same of every problem.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from test_hostile import Edit, append, replace_text

from planner.catalog import CatalogError, load_catalog
from planner.catalog.yamlsafe import load
from planner.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "catalogs" / "examples" / "seed"
HF = ROOT / "tests" / "fixtures" / "hf"

#: Words of the validation library that no message of planner's may hold.
LEAKS = ("Input should", "type=", "errors.pydantic.dev", "Value error, ", "validation error for")


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder`` and its bytes (FIFOs and links by name only)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            found[str(path.relative_to(folder))] = b""
        else:
            found[str(path.relative_to(folder))] = path.read_bytes()
    return found


def _line(folder: Path, file: str, text: str, after: str | None = None) -> int:
    """The 1-based line of ``file`` where ``text`` first appears (after ``after``'s line)."""
    lines = (folder / file).read_text().splitlines()
    start = 0 if after is None else next(i for i, x in enumerate(lines) if after in x) + 1
    return next(i + 1 for i, x in enumerate(lines[start:], start) if text in x)


def _efficiency(written: str) -> Edit:
    """The assumptions' bandwidth_efficiency written as ``written``."""
    return replace_text("assumptions.yaml", EFFICIENCY, f"bandwidth_efficiency: {written}")


def _forecast(text: str) -> Edit:
    """The first workload given ``forecast: text``."""
    return replace_text("workloads.yaml", "    concurrency: 16\n", f"    concurrency: 16\n{text}")


EFFICIENCY = "bandwidth_efficiency: 1.0"
PROMPT = "prompt_tokens: 3072"
MEMORY = "memory: 16 GiB"


def _factor_file(rows: int) -> Edit:
    def edit(folder: Path) -> None:
        (folder / "traffic.csv").write_text("factor\n" + "1.5\n" * rows)
        _forecast("    forecast: {file: traffic.csv, column: factor}\n")(folder)

    return edit


def _offer(as_of: str) -> Edit:
    """An api_offers.yaml whose one offer was read on ``as_of``."""
    return lambda folder: (folder / "api_offers.yaml").write_text(
        "api_offers:\n  - id: api\n    model: invented-7b\n"
        "    input_usd_per_million_tokens: 1\n    output_usd_per_million_tokens: 2\n"
        f"    as_of: {as_of}\n"
    )


#: (case, edit of the seed catalog, file, text on the field's line, words the refusal holds).
CHECK_CASES: list[tuple[str, Edit, str, str, list[str]]] = [
    (
        "a triangular mode that is text",
        _efficiency("{low: 0.5, mode: abc, high: 0.9}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["field 'assumptions.bandwidth_efficiency.mode'", "expected a number", "'abc'"],
    ),
    (
        "a triangular mode on its own line",
        replace_text(
            "assumptions.yaml", EFFICIENCY,
            "bandwidth_efficiency:\n    low: 0.5\n    mode: abc\n    high: 0.9",
        ),
        "assumptions.yaml", "mode: abc",
        ["bandwidth_efficiency.mode", "expected a number"],
    ),
    (
        "a triangular range out of order",
        _efficiency("{low: 0.9, mode: 0.5, high: 1}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["low ≤ mode ≤ high, got 0.9, 0.5, 1"],
    ),
    (
        "a triangular high past a fraction's 1",
        _efficiency("{low: 0.5, mode: 0.8, high: 1.5}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["bandwidth_efficiency.high", "less than or equal to 1", "1.5"],
    ),
    (
        "a normal sd that is text",
        _efficiency("{mean: 0.5, sd: wide}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["bandwidth_efficiency.sd", "expected a number", "'wide'"],
    ),
    (
        "a normal spread past 0",
        _efficiency("{mean: 0.5, sd: 0.5}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["mean ± 3 sd", "between 0 and 1"],
    ),
    (
        "no samples",
        _efficiency("{samples: []}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["samples must be a non-empty list"],
    ),
    (
        "a sample past 1",
        _efficiency("{samples: [0.5, 2]}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["bandwidth_efficiency.samples.1", "less than or equal to 1", "got 2"],
    ),
    (
        "a file and column where a distribution is read",
        _efficiency("{file: e.csv, column: e}"),
        "assumptions.yaml", "bandwidth_efficiency",
        ["{low, mode, high}, {mean, sd} or {samples: [...]}", "got the keys: column, file"],
    ),
    (
        "a price's mode without its unit of money",
        append("hardware.yaml", "    price:\n      purchase_usd: {low: 1, mode: lots, high: 3}\n"),
        "hardware.yaml", "purchase_usd",
        ["field 'price.purchase_usd.mode'", "expected a number", "'lots'"],
    ),
    (
        "a fractional concurrency mode",
        replace_text("workloads.yaml", "y: 16", "y: {low: 1, mode: 2.5, high: 5}"),
        "workloads.yaml", "concurrency:",
        ["concurrency.mode", "expected a whole number", "2.5"],
    ),
    (
        "prompt tokens as text",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: many"),
        "workloads.yaml", "prompt_tokens",
        ["expected a whole number (an integer) or a mapping of mean, p95, max", "'many'"],
    ),
    (
        "prompt tokens past 10^15",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: 100000000000000000000"),
        "workloads.yaml", "prompt_tokens",
        ["less than or equal to 1000000000000000"],
    ),
    (
        "prompt tokens as a normal distribution",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: {mean: 3000, sd: 10}"),
        "workloads.yaml", "prompt_tokens",
        ["field 'prompt_tokens.sd'", "unknown field; expected one of: mean, p95, max"],
    ),
    (
        "an interconnect no one makes",
        append("hardware.yaml", "    interconnect: 3\n"),
        "hardware.yaml", "interconnect",
        ["expected one of 'nvlink', 'pcie'", "got 3"],
    ),
    (
        "a memory given as a list",
        replace_text("hardware.yaml", MEMORY, "memory: [16 GiB]"),
        "hardware.yaml", "memory:",
        ["field 'memory'", "['16 GiB']"],
    ),
    (
        "a compute table given as text",
        replace_text("hardware.yaml", "compute: {bf16: 100 TFLOPS}", "compute: 100 TFLOPS"),
        "hardware.yaml", "compute:",
        ["expected a mapping", "'100 TFLOPS'"],
    ),
    (
        "an id with a space",
        replace_text("hardware.yaml", "id: seed-16gib", "id: Seed GPU"),
        "hardware.yaml", "id: Seed GPU",
        ["must match the pattern", "an id is lower-case letters"],
    ),
    (
        "a required layer count left null",
        replace_text("models.yaml", "layers: 32                      # seed ¶6", "layers: null"),
        "models.yaml", "layers: null",
        ["field 'layers'", "expected a whole number (an integer), got None"],
    ),
    (
        "a flag given as text",
        append("models.yaml", "    tied_embeddings: sometimes\n"),
        "models.yaml", "tied_embeddings",
        ["expected true or false", "'sometimes'"],
    ),
    (
        "a 240-month forecast doubling each month",
        _forecast("    forecast: {months: 240, growth_per_month: 1.0}\n"),
        "workloads.yaml", "forecast:",
        ["forecast.growth_per_month", "(1 + 1)^239 ≈ 10^72", "1,000,000"],
    ),
    (
        "a forecast growing 6 % a month for 240 months",
        _forecast("    forecast: {months: 240, growth_per_month: 0.06}\n"),
        "workloads.yaml", "forecast:",
        ["forecast.growth_per_month", "10^6 by the last month"],
    ),
    (
        "a forecast shrinking 100 % a month",
        _forecast("    forecast: {months: 12, growth_per_month: -1.0}\n"),
        "workloads.yaml", "forecast:",
        ["forecast.growth_per_month", "greater than or equal to -0.5", "-1.0"],
    ),
    (
        "a forecast of 0 months",
        _forecast("    forecast: {months: 0, growth_per_month: 0.1}\n"),
        "workloads.yaml", "forecast:",
        ["forecast.months", "greater than or equal to 1", "got 0"],
    ),
    (
        "a million monthly factors",
        _forecast("    forecast: {factors: [" + ", ".join(["1"] * 1_000_000) + "]}\n"),
        "workloads.yaml", "forecast:",
        ["forecast.factors", "at most 240 items, got 1000000"],
    ),
    (
        "a factor file of a million rows",
        _factor_file(1_000_000),
        "workloads.yaml", "forecast:",
        ["forecast.file", "1 to 240 positive numbers"],
    ),
    (
        "a factor file past 10^6",
        lambda folder: (
            (folder / "traffic.csv").write_text("factor\n1\n1e7\n"),
            _forecast("    forecast: {file: traffic.csv, column: factor}\n")(folder),
        ),
        "workloads.yaml", "forecast:",
        ["forecast.file", "reaches 1e+07", "1,000,000"],
    ),
    (
        "an API price dated by no calendar",
        _offer("2024-13-45"),
        "api_offers.yaml", "as_of",
        ["invalid YAML", "'2024-13-45' is written as a date but is not one"],
    ),
    (
        "an API price dated in words",
        _offer("tomorrow"),
        "api_offers.yaml", "as_of",
        ["field 'as_of'", "expected a date (YYYY-MM-DD)", "'tomorrow'"],
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "edit", "file", "text", "words"), CHECK_CASES, ids=[c[0] for c in CHECK_CASES]
)
def test_a_hostile_catalog_is_refused_at_the_fields_line(
    tmp_path: Path, case: str, edit: Edit, file: str, text: str, words: list[str]
) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    edit(folder)
    before = _snapshot(tmp_path)
    started = time.monotonic()
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert time.monotonic() - started < 30, case  # refused, not planned at length
    assert result.exit_code == 1, (case, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert "Traceback" not in result.output
    assert f"{folder / file}:{_line(folder, file, text)}:" in result.output, result.output[:3000]
    for word in words:
        assert word in result.output, (case, word, result.output[:3000])
    for leak in LEAKS:
        assert leak not in result.output, (case, leak, result.output[:3000])
    assert _snapshot(tmp_path) == before  # nothing written


def test_every_fault_of_a_record_is_reported_at_its_own_line(tmp_path: Path) -> None:
    """A record's first unreadable distribution does not hide its others, nor its other
    fields' faults."""
    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    replace_text(
        "assumptions.yaml", EFFICIENCY,
        "bandwidth_efficiency: {low: 0.5, mode: abc, high: 0.9}\n  max_batch_sequences: -3",
    )(folder)  # fmt: skip
    replace_text(
        "assumptions.yaml", "compute_efficiency: 1.0", "compute_efficiency: {mean: 0.5, sd: x}"
    )(folder)
    with pytest.raises(CatalogError) as caught:
        load_catalog(folder)
    found = {(p.field, p.line) for p in caught.value.problems}
    assert found == {
        ("assumptions.bandwidth_efficiency.mode", _line(folder, "assumptions.yaml", "bandwidth")),
        ("assumptions.compute_efficiency.sd", _line(folder, "assumptions.yaml", "compute_eff")),
        ("assumptions.max_batch_sequences", _line(folder, "assumptions.yaml", "max_batch_seq")),
    }


# The sweep: many bad values through every field -----------------------------------------------

#: Values no field of the seed catalog takes as they are (a null leaves an optional field out).
BAD_VALUES = [
    True, -1, 0, 1.5, 10**20, -(10**400), math.inf, "abc", "", "nan", "1e400 GiB", "-3 GiB",
    [], [1], [{}], {}, {"x": 1}, "x" * 600, "a\tb", "Bad ID",
    {"low": 1, "mode": "abc", "high": 2}, {"low": 3, "mode": 2, "high": 1},
    {"mean": 1, "sd": "x"}, {"mean": 1, "sd": 5}, {"samples": []}, {"samples": ["x", 2]},
    {"samples": "x"}, {"file": "a.csv"}, {"file": "../a.csv", "column": "a"},
    {"low": 1, "high": 2}, {"mean": 10, "p95": 5, "max": 1},
]  # fmt: skip

#: Fields the seed catalog leaves out, added so that the sweep reaches their records too.
EXTRA_FIELDS = {
    "hardware": {
        "price": {"purchase_usd": 1000.0, "cloud_usd_per_hour": 2.0},
        "interconnect": "pcie",
        "power": "300 W",
    },
    "workloads": {
        "targets": {"ttft_p95": "1 s"},
        "forecast": {"months": 3, "growth_per_month": 0.1},
    },
    "assumptions": {"engine": {"name": "vllm", "version": "0.11.0"}},
}


def _fields() -> list[tuple[str, tuple[str | int, ...]]]:
    """(file stem, path of a field) for every field of the seed's first entries, nested ones
    included."""
    found = []
    for stem in ("hardware", "models", "precisions", "workloads", "assumptions"):
        data = yaml.safe_load((SEED / f"{stem}.yaml").read_text())
        top: tuple[str | int, ...] = (stem,) if stem == "assumptions" else (stem, 0)
        record = (data[stem] if stem == "assumptions" else data[stem][0]) | EXTRA_FIELDS.get(
            stem, {}
        )
        for key, value in record.items():
            found.append((stem, (*top, key)))
            if isinstance(value, dict):
                found.extend((stem, (*top, key, inner)) for inner in value)
    return found


def _with(stem: str, path: tuple[str | int, ...], value: object) -> dict:
    data = yaml.safe_load((SEED / f"{stem}.yaml").read_text())
    record = data[stem] if stem == "assumptions" else data[stem][0]
    record.update(copy.deepcopy(EXTRA_FIELDS.get(stem, {})))
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return data


def test_no_bad_value_in_any_field_leaks_library_words_or_a_wrong_line(tmp_path: Path) -> None:
    """Every bad value in every field is refused (or, where it happens to be valid, loads),
    and each problem is in planner's words, at the line of the field it is about: the field's
    own lines, or, for a fault between fields of one entry (``give exactly one of ...``), the
    entry's line with the field named."""
    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    originals = {p.name: p.read_text() for p in folder.glob("*.yaml")}
    refused = 0
    for stem, path in _fields():
        for value in BAD_VALUES:
            text = yaml.safe_dump(_with(stem, path, value), allow_unicode=True, width=10_000)
            (folder / f"{stem}.yaml").write_text(text)
            lines = load(text).lines
            span = [line for p, line in lines.items() if p[: len(path)] == path]
            try:
                load_catalog(folder)
            except CatalogError as exc:
                refused += 1
                mine = [p for p in exc.problems if p.file.endswith(f"{stem}.yaml")]
                assert mine, (path, value, exc)
                for problem in exc.problems:
                    for leak in LEAKS:
                        assert leak not in str(problem), (path, value, str(problem))
                    assert problem.line is not None, (path, value, str(problem))
                in_field = [p for p in mine if min(span) <= p.line <= max(span)]
                about_entry = [
                    p for p in mine if p.line == lines[path[:-1]] and str(path[-1]) in str(p)
                ]
                assert in_field or about_entry, (path, value, [str(p) for p in mine])
        (folder / f"{stem}.yaml").write_text(originals[f"{stem}.yaml"])
    assert refused > 1_000  # the sweep refused what it was meant to


# import-hf -------------------------------------------------------------------------------------

LLAMA = json.loads((HF / "llama-3.1-8b.json").read_text())
GEMMA3 = json.loads((HF / "gemma-3-27b-it.json").read_text())


def _config(base: dict, **changes: object) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        config = dict(base) | changes
        path = folder / "config.json"
        path.write_text(json.dumps(config))
        return path

    return make


def _raw(content: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "config.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path

    return make


def _special(kind: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "config.json"
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "huge":
            with path.open("wb") as stream:
                stream.truncate(1 << 30)  # 1 GiB, sparse
        else:
            path.symlink_to(kind)
        return path

    return make


def _nested(**changes: object) -> Callable[[Path], Path]:
    """Gemma 3 27B's config with its text_config changed (None: the key removed)."""

    def make(folder: Path) -> Path:
        config = json.loads(json.dumps(GEMMA3))
        for key, value in changes.items():
            if value is None:
                config["text_config"].pop(key, None)
            else:
                config["text_config"][key] = value
        path = folder / "config.json"
        path.write_text(json.dumps(config))
        return path

    return make


#: (case, config.json made in a folder, further arguments, words the refusal holds).
HF_CASES: list[tuple[str, Callable[[Path], Path], list[str], list[str]]] = [
    ("layers 10^20", _config(LLAMA, num_hidden_layers=10**20), [],
     ["`num_hidden_layers`", "from 1 to 100,000", "100000000000000000000"]),
    ("hidden size past 10^15", _config(LLAMA, hidden_size=10**16), [],
     ["`hidden_size`", "from 1 to 1,000,000,000,000,000"]),
    ("an id with a space", _config(LLAMA), ["--id", "Bad ID"],
     ["would be refused", "the id", "must match the pattern", "'Bad ID'"]),
    ("a name with a tab", _config(LLAMA), ["--name", "a\tb"],
     ["--name", "control character U+0009"]),
    ("a name of 600 characters", _config(LLAMA), ["--name", "n" * 600],
     ["--name", "at most 500 characters"]),
    ("not JSON", _raw("{not json"), [], ["is not JSON", "line 1, column 2"]),
    ("NaN for the hidden size", _raw(json.dumps(LLAMA).replace(": 4096", ": NaN")), [],
     ["`hidden_size`", "got nan"]),
    ("a number of 5,000 digits", _raw('{"num_hidden_layers": ' + "9" * 5000 + "}"), [],
     ["5,000 digits"]),
    ("negative heads", _config(LLAMA, num_attention_heads=-4), [],
     ["`num_attention_heads`", "got -4"]),
    ("heads that do not divide the hidden size",
     _config(LLAMA, num_attention_heads=30, head_dim=None), [],
     ["hidden_size 4096 is not a multiple of num_attention_heads 30"]),
    ("KV heads that do not divide the heads", _config(LLAMA, num_key_value_heads=5), [],
     ["attention_heads (32) must be a multiple of kv_heads (5)"]),
    ("a number written as text", _config(LLAMA, hidden_size="4096"), [],
     ["`hidden_size`", "got '4096'"]),
    ("a nested text_config without its hidden size", _nested(hidden_size=None), [],
     ["`text_config.hidden_size`", "missing"]),
    ("a nested text_config with layers 10^20", _nested(num_hidden_layers=10**20), [],
     ["`text_config.num_hidden_layers`"]),
    ("an unknown architecture",
     _config(LLAMA, architectures=["LlamaForSequenceClassification"]), [],
     ["LlamaForSequenceClassification", "LlamaForCausalLM"]),
    ("an unknown model type", _config(LLAMA, model_type="gpt2"), [], ["'gpt2'", "llama"]),
    ("architectures holding a mapping", _config(LLAMA, architectures=[{}]), [],
     ["`architectures` must be a list of class names"]),
    ("a model type that is a list", _config(GEMMA3, model_type=[]), [],
     ["`model_type` must be text"]),
    ("a top-level list", _raw("[1, 2]"), [], ["must be a JSON object"]),
    ("nesting past the parser's depth", _raw("[" * 100_000 + "]" * 100_000), [],
     ["nests lists or objects too deeply"]),
    ("a 1 GiB file", _special("huge"), [], ["64 MiB limit"]),
    ("a FIFO", _special("fifo"), [], ["FIFO"]),
    ("a link to /dev/zero", _special("/dev/zero"), [], ["character device"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "args", "words"), HF_CASES, ids=[c[0] for c in HF_CASES])
def test_import_hf_refuses_what_check_would_refuse(
    tmp_path: Path, case: str, make: Callable[[Path], Path], args: list[str], words: list[str]
) -> None:
    config = make(tmp_path)
    models = tmp_path / "models.yaml"
    models.write_text((SEED / "models.yaml").read_text())
    before = _snapshot(tmp_path)
    for extra in ([], ["--append", str(models)]):
        result = CliRunner().invoke(main, ["import-hf", str(config), *args, *extra])
        assert result.exit_code == 1, (case, result.output, result.exception)
        assert isinstance(result.exception, SystemExit), result.exception  # no traceback
        assert "Traceback" not in result.output
        assert result.stdout == ""  # nothing partial printed
        assert f"error: {config}:" in result.output  # which config.json
        for word in words:
            assert word in result.output, (case, word, result.output[:2000])
        for leak in LEAKS:
            assert leak not in result.output, (case, leak, result.output[:2000])
        assert _snapshot(tmp_path) == before  # models.yaml untouched, nothing written


# A deployment pin to a model that fits nothing --------------------------------------------------


def test_a_pin_to_a_model_that_fits_nothing_is_named_as_why_a_workload_is_unserved(
    tmp_path: Path,
) -> None:
    """A 1-trillion-parameter model at 2 bytes a parameter needs 2e12 B = 1,862.6 GiB of weights
    on the seed's only device (16 GiB, TP 1): it fits no candidate, and the workload pinned to
    it says so, naming the model that would serve it without the pin."""
    from planner.plan.deployment import ask
    from planner.plan.recommend import recommendations
    from planner.plan.sweep import evaluate

    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    append(
        "models.yaml",
        "  - {id: invented-1t, parameters: 1000000000000, layers: 32, kv_heads: 8, "
        "head_dim: 128}\n",
    )(folder)
    append("hardware.yaml", "    price: {purchase_usd: 20000.0, cloud_usd_per_hour: 2.0}\n")(folder)
    (folder / "deployment.yaml").write_text(
        "deployment:\n  serve:\n    - {workload: seed-4k, model: invented-1t}\n"
    )
    catalog = load_catalog(folder)
    table = evaluate(catalog).table
    plan = ask(catalog, table)
    assert plan.unserved == ["seed-4k"]
    reason = plan.reasons["seed-4k"]
    assert reason.startswith("deployment.yaml pins invented-1t, which has no eligible option")
    assert "fits no candidate" in reason
    assert "weights alone exceed every device's memory at every tensor-parallel size" in reason
    assert "1,862.6 GiB of weights per device in 16.0 GiB" in reason
    assert reason.endswith("invented-4gib would serve it were the pin removed")
    why = recommendations(table).set_index(["workload", "model"])["why_none"]
    assert why[("seed-4k", "invented-1t")].startswith("fits no candidate: its weights alone")
