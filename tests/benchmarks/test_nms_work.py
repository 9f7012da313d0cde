"""The NonMaxSuppression and ReorderInput benchmarks (``benchmarks/nms_work.py``,
``benchmarks/reorder_rates.py``): the work count replays onnxruntime's algorithm (it keeps the
boxes onnxruntime keeps), the reorder and depthwise probes find the kernels they time, and the bias probe times one product kernel
(``benchmarks/gemm_bias.py``, ``benchmarks/depthwise_threads.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import load_benchmarks

nms = load_benchmarks("nms_work")
reorder = load_benchmarks("reorder_rates")
gemm_bias = load_benchmarks("gemm_bias")
depthwise = load_benchmarks("depthwise_threads")


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(nms.KINDS), boxes=st.integers(8, 120), classes=st.integers(1, 3),
       most=st.integers(1, 40), threshold=st.sampled_from([None, 0.0, 0.5]), seed=st.integers(0, 2**16))  # fmt: skip
def test_work_keeps_what_onnxruntime_keeps(kind: str, boxes: int, classes: int, most: int, threshold: float | None, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = nms.draw(kind, boxes, rng)
    scores = rng.uniform(-1.0 if kind == "uniform" else 0.0, 1.0, (classes, boxes)).astype(np.float32)
    selected = nms.session(boxes, classes, most, threshold).run(None, {"x": x[None], "scores": scores[None]})[0]
    candidates, pops, checks, kept = nms.work(x, scores, most, threshold)
    assert kept == len(selected)
    assert kept <= pops <= candidates and checks <= pops * max(kept, 1)


def test_reorder_probe_times_the_reorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a profile left behind would land here
    t = reorder.reorder_us(32, 20, "act", 6)
    if t is None:
        pytest.skip("onnxruntime inserts no ReorderInput on this CPU (no NCHWc kernels)")
    assert t > 0
    assert not list(tmp_path.iterdir())  # the profile file is removed


def test_gemm_bias_probe_times_the_one_product_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hwsim.host.measure import profile_nodes

    monkeypatch.chdir(tmp_path)
    for bias in (False, True):
        model, feeds = gemm_bias._model(64, 32, 48, bias)
        kinds = sorted(kind for kind, _ in profile_nodes(model, feeds, runs=2).values())
        assert kinds == ["Gemm" if bias else "MatMul", "Sigmoid"]  # the Add folded into the product's kernel
        assert gemm_bias.gemm_us(64, 32, 48, bias, 2) > 0
    assert not list(tmp_path.iterdir())


def test_depthwise_probe_times_the_blocked_depthwise_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    t = depthwise.depthwise_us(32, 16, 7, 1, 2)
    if t is None:
        pytest.skip("onnxruntime runs no NCHWc kernels on this CPU")
    assert t > 0 and depthwise.depthwise_us(32, 16, 7, 2, 2) is not None
    assert not list(tmp_path.iterdir())
