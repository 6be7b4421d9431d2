"""An option's short and long labels (planner.plan.labels), as every writer shows them."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner.plan.labels import option_label, short_label

ROW = {
    "workload": "chat",
    "model": "llama-3.1-8b",
    "hardware": "h100-sxm-80gb",
    "precision": "fp8",
    "tensor_parallel": 2,
    "devices_needed": 4.0,
}


@pytest.mark.parametrize(
    ("change", "keywords", "expected"),
    [
        ({}, {}, "4 × h100-sxm-80gb (TP 2) · fp8"),
        ({}, {"devices": False}, "h100-sxm-80gb (TP 2) · fp8"),
        ({}, {"hardware": "NVIDIA H100 SXM"}, "4 × NVIDIA H100 SXM (TP 2) · fp8"),
        ({"devices_needed": math.nan}, {}, "? × h100-sxm-80gb (TP 2) · fp8"),
        ({"devices_needed": 1024.0}, {}, "1,024 × h100-sxm-80gb (TP 2) · fp8"),
        ({"tensor_parallel": "1"}, {}, "4 × h100-sxm-80gb (TP 1) · fp8"),  # from a key's text
    ],
)
def test_short_label(change, keywords, expected):
    assert short_label({**ROW, **change}, **keywords) == expected


def test_short_label_without_a_count_column():
    """A candidate's key has no device count: the label then has none."""
    key = {k: v for k, v in ROW.items() if k != "devices_needed"}
    assert short_label(key) == "h100-sxm-80gb (TP 2) · fp8"


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        ({}, "chat × llama-3.1-8b: 4 × h100-sxm-80gb (TP 2) · fp8"),
        ({"workload": False}, "llama-3.1-8b: 4 × h100-sxm-80gb (TP 2) · fp8"),
        ({"devices": False}, "chat × llama-3.1-8b: h100-sxm-80gb (TP 2) · fp8"),
    ],
)
def test_option_label(keywords, expected):
    assert option_label(ROW, **keywords) == expected


def test_a_results_row_labels_as_its_mapping():
    assert option_label(pd.Series(ROW)) == option_label(ROW)
