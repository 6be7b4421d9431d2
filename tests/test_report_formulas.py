"""The appendix prints every metric's formula; a long one names the parts it repeats, and the
names stand for exactly the text they replace."""

from __future__ import annotations

import re

from planner.model.metric import metrics
from planner.outputs.formulas import LONG_CHARACTERS, printed


def _expanded(text: str, parts: dict[str, str]) -> str:
    """``text`` with each part's name replaced by its text, in parentheses, until none is left."""
    while re.search(r"\bx\d+\b", text):
        text = re.sub(r"\bx\d+\b", lambda k: "(" + parts[k.group()] + ")", text)
    return text


def test_a_short_formula_prints_as_the_formula_layer_renders_it():
    m = metrics()["kv_bytes_per_token"]
    assert printed(m).text == m.formula_text() and printed(m).parts == ()


def test_named_parts_stand_for_exactly_the_text_they_replace():
    """Every metric's printed formula, its names put back, is its formula: the same text once
    the parentheses the names add are set aside (a name is an atom, so the grouping holds)."""
    for m in metrics().values():
        f = printed(m)
        back = _expanded(f.text, dict(f.parts))
        assert back.replace("(", "").replace(")", "") == (
            m.formula_text().replace("(", "").replace(")", "")
        ), m.name


def test_the_open_loop_batch_prints_in_a_fifth_of_its_length():
    """Its four step-time lines repeat in each branch of the fixed point (about 9,800
    characters whole); named once, formula and parts fit in under a fifth of that."""
    m = metrics()["open_loop_batch"]
    f = printed(m)
    assert len(m.formula_text()) > LONG_CHARACTERS and f.parts
    assert len(f.text) + sum(len(p) for _, p in f.parts) < len(m.formula_text()) / 5
