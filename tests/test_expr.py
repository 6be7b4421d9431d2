import numpy as np
import pandas as pd
import pytest

from planner import expr
from planner.expr import Ref, to_excel, trace
from planner.metric import REGISTRY


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
    for m in REGISTRY.values():
        assert m.description, m.name
        m.expression().render(lambda n: n)  # every input resolves to a name


def test_refs_render_through_mapping():
    assert Ref("x").render(lambda n: n.upper()) == "X"
