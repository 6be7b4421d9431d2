import numpy as np
import pandas as pd
import pytest

from planner.model import expr
from planner.model.expr import Ref, to_excel, trace
from planner.model.metric import METRIC_MODULES, metrics, plain_text


def cells(name):
    return {"a": "A1", "b": "B1", "c": "C1"}[name]


@pytest.mark.parametrize(
    ("func", "formula"),
    [
        (lambda a, b, c: a * b * c, "=A1*B1*C1"),
        (lambda a, b, c: a * (b * c), "=A1*(B1*C1)"),
        (lambda a, b, c: a - (b - c), "=A1-(B1-C1)"),
        (lambda a, b, c: a - b - c, "=A1-B1-C1"),
        (lambda a, b, c: a / (b * c), "=A1/(B1*C1)"),
        (lambda a, b, c: (a + b) * c, "=(A1+B1)*C1"),
        (lambda a, b, c: -a + b, "=0-A1+B1"),
        (lambda a, b, c: 2 * a + 0.5, "=2*A1+0.5"),
        (lambda a, b, c: expr.maximum(0, expr.floor(a / b)), "=MAX(0,INT(A1/B1))"),
        (lambda a, b, c: expr.ceil(a), "=ROUNDUP(A1,0)"),
        (lambda a, b, c: expr.where(a <= b, "yes", 'say "no"'), '=IF(A1<=B1,"yes","say ""no""")'),
        (lambda a, b, c: (a <= b) & (b > c), "=AND(A1<=B1,B1>C1)"),
        (lambda a, b, c: expr.power(a, 2), "=POWER(A1,2)"),
        (lambda a, b, c: expr.where(a == 0, b, c), "=IF(A1=0,B1,C1)"),
        (lambda a, b, c: expr.where(a + b != c, 1, 0), "=IF(A1+B1<>C1,1,0)"),
        (lambda a, b, c: expr.where(a == "memory", 1, 0), '=IF(A1="memory",1,0)'),
        (lambda a, b, c: a * 1e-12, "=A1*1E-12"),
    ],
)
def test_rendering_keeps_python_grouping(func, formula):
    assert to_excel(trace(func, ("a", "b", "c")), cells) == formula


@pytest.mark.parametrize(
    "func",
    [
        lambda a, b, c: a * (b * c),
        lambda a, b, c: a - (b - c),
        lambda a, b, c: expr.maximum(0, expr.floor(a / b)),
        lambda a, b, c: expr.ceil(a / c),
        lambda a, b, c: expr.where(a <= b, a, c),
    ],
)
def test_same_function_evaluates_numbers_arrays_and_series(func):
    a, b, c = np.array([1.0, 7.5, -3.0]), np.array([2.0, 7.5, 4.0]), np.array([3.0, 0.5, 2.0])
    arrays = func(a, b, c)
    scalars = [func(x, y, z) for x, y, z in zip(a, b, c, strict=True)]
    series = func(pd.Series(a), pd.Series(b), pd.Series(c))
    np.testing.assert_array_equal(np.asarray(arrays), np.asarray(scalars))
    np.testing.assert_array_equal(np.asarray(series), np.asarray(scalars))


def test_if_inside_a_metric_is_refused_while_tracing():
    def bad(a):
        return a if a > 0 else 0

    with pytest.raises(TypeError, match="expr.where"):
        trace(bad, ("a",))


def test_every_metric_has_a_description_unit_kind_and_traces():
    registry = metrics()
    # every metric module registered, whichever test runs first
    modules = {m.func.__module__ for m in registry.values()}
    assert modules == set(METRIC_MODULES) and len(registry) >= 80
    for m in registry.values():
        assert m.description, m.name
        m.expression().render(lambda n: n)  # every input resolves to a name


@pytest.mark.parametrize(
    ("doc", "plain"),
    [
        ("(:func:`planner.model.cost.nodes_needed`)", "(nodes_needed)"),
        (":data:`~planner.model.disaggregated.PREFILL_HW` + its name", "PREFILL_HW + its name"),
        ("``buy`` when owning costs less", "buy when owning costs less"),
        ("e.g. ``h100|llama|bf16|2``, then ``|ep8``", "e.g. h100|llama|bf16|2, then |ep8"),
        ("a plain sentence (TP 2)", "a plain sentence (TP 2)"),
    ],
)
def test_a_description_reads_as_plain_text(doc: str, plain: str) -> None:
    assert plain_text(doc) == plain


def test_no_metric_description_shows_docstring_markup() -> None:
    """The workbook's Notes, the report's formulas and results.json show descriptions as
    written: no cross-reference role and no literal's backticks."""
    from planner.model.finance import schedule_metrics

    for m in [*metrics().values(), *schedule_metrics().values()]:
        assert "`" not in m.description, (m.name, m.description)


def test_refs_render_through_mapping():
    assert Ref("x").render(lambda n: n.upper()) == "X"


@pytest.mark.parametrize(
    ("func", "values", "expected", "formula"),
    [
        (lambda a: expr.where(a == 0, 1.0, a), [0.0, 2.0], [1.0, 2.0], "=IF(A1=0,1,A1)"),
        (lambda a: expr.where(a != 0, a, -1.0), [0.0, 3.0], [-1.0, 3.0], "=IF(A1<>0,A1,(-1))"),
    ],
)
def test_equality_computes_in_python_as_it_traces(func, values, expected, formula):
    """The same metric evaluates element-wise over numbers and traces to '=' and '<>'."""
    assert list(func(np.array(values))) == expected
    assert to_excel(trace(func, ("a",)), lambda n: "A1") == formula


# Divisions by zero ---------------------------------------------------------------------------


def test_a_division_by_zero_in_a_metric_is_an_error_naming_it():
    from planner.model.metric import Metric, MetricError
    from planner.plan.sweep import evaluate_metric

    per = Metric("per_device", lambda total, devices: total / devices, ("total", "devices"), "", "")
    scope = {"total": np.array([4.0, 6.0]), "devices": np.array([2.0, 0.0])}
    keys = {"candidate": np.array(["a|1", "b|2"])}
    with pytest.raises(MetricError, match=r"per_device = total/devices: divide by zero.*b\|2"):
        evaluate_metric(per, scope, 2, keys)
    scope["devices"] = np.array([2.0, 3.0])
    assert list(evaluate_metric(per, scope, 2, keys)) == [2.0, 2.0]


@pytest.mark.parametrize(
    ("capital", "rent", "opex", "expected"),
    [
        (200_000.0, 10_000.0, 613.2, 22.0),  # ⌈200,000 ÷ 9,386.8⌉ = ⌈21.3⌉
        (200_000.0, 613.2, 613.2, None),  # renting costs the same: never, not a division by 0
        (200_000.0, 500.0, 613.2, None),  # renting is cheaper: never
    ],
)
def test_break_even_where_there_is_no_saving_is_missing(capital, rent, opex, expected):
    from planner.model.cost import break_even_month

    with np.errstate(divide="raise", invalid="raise"):
        value = break_even_month(np.array([capital]), np.array([rent]), np.array([opex]))[0]
    assert (np.isnan(value) and expected is None) or value == expected


def test_a_replica_that_holds_no_sequence_completes_no_request():
    from planner.model.capacity import requests_per_s_per_replica

    with np.errstate(divide="raise", invalid="raise"):
        rates = requests_per_s_per_replica(
            np.array([0.0, 0.0, 4.0]), 0.5, np.array([1.0, 101.0, 101.0]), 0.02
        )
    assert np.isnan(rates[0]) and rates[1] == 0.0
    assert rates[2] == pytest.approx(4 / (4 * 0.5 + 100 * 0.02))  # 4 ÷ 4 s = 1 request/s


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((np.array(["h100", "l4"]), "|", np.array([1.0, 2.5])), ["h100|1", "l4|2.5"]),
        (("x", np.array([3, 40])), ["x3", "x40"]),
        ((np.array([float("nan"), 1e-05, -2.0, 1e16]),), ["nan", "1e-05", "-2", "1e+16"]),
        ((np.array(["a", None], dtype=object), "!"), ["a!", "None!"]),
        (("simulation: ", "meets targets"), "simulation: meets targets"),
    ],
)
def test_concat_writes_numbers_as_the_spreadsheet_does(parts, expected):
    """Whole numbers lose their '.0' as Excel's & writes them; element by element, as
    ``_excel_text`` says, however many rows."""
    joined = expr.concat(*parts)
    assert (joined if isinstance(joined, str) else list(joined)) == expected
