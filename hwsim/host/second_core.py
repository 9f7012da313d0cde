"""Whether onnxruntime's other intra-op threads work along right now.

On a VM the other vCPUs come and go: on the AMD EPYC host of ``docs/fidelity_cpu.md`` (2 vCPUs),
for spells of a minute to half an hour, a 128-cubed MatMul chain ran no faster on two threads
than on one while a 512-cubed MatMul still ran 2x faster. In those spells each hand-off to the
second thread waits (about 13 us per kernel), and a MobileNetV3-like model took 1.55 ms on two
threads where it took 0.79 ms a minute earlier (1.35 ms on one). hwsim predicts the host with
all its threads working along, as the fingerprint measured it; a measurement taken in such a
spell is not that host. So ``hwsim validate`` checks before and after each model, with the chain
the fingerprint's parallel-section probe checks with (:func:`hwsim.host.kernels.parallel_section_ns`),
and marks the rounds taken while the other threads lagged (:func:`threads_along`).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from hwsim.host.measure import low_quantile, make_session, time_call

__all__ = ["CHECK_COUNT", "CHECK_N", "MIN_SHARE", "matmul_chain", "speedup", "threads_along"]

#: Side of the MatMuls of the check (~11 us each on one thread of a 2.6 GHz Zen 4: work enough to
#: hide a hand-off) and how many the chain holds.
CHECK_N, CHECK_COUNT = 128, 16
#: The share of ``threads`` times faster the chain must run on ``threads`` threads than on one for
#: the threads to count as working along (1.8x on two).
MIN_SHARE = 0.9


def matmul_chain(n: int, count: int) -> tuple[onnx.ModelProto, np.ndarray]:
    """``count`` dependent ``n x n`` MatMuls (an ``n x n`` input times its own constant each)."""
    rng = np.random.default_rng(0)
    inits = {f"w{i}": (rng.standard_normal((n, n)) * 0.05).astype(np.float32) for i in range(count)}
    nodes, x = [], "x"
    for i in range(count):
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"y{i}"]))
        x = f"y{i}"
    graph = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model, (rng.standard_normal((n, n)) * 0.05).astype(np.float32)


def speedup(threads: int, rounds: int = 2) -> float:
    """How many times faster the check chain (:data:`CHECK_COUNT` MatMuls of :data:`CHECK_N`
    cubed) runs on ``threads`` intra-op threads than on one: the 10th percentile of 30 runs each,
    the two sessions interleaved over ``rounds`` rounds, the best round of each. About 0.1 s."""
    model, x = matmul_chain(CHECK_N, CHECK_COUNT)
    sessions = {t: make_session(model, t) for t in (1, threads)}
    best = dict.fromkeys(sessions, float("inf"))
    for _ in range(rounds):
        for t, sess in sessions.items():
            timing = time_call(partial(sess.run, None, {"x": x}), runs=30, warmup=5)
            best[t] = min(best[t], low_quantile(timing.samples_ns, 0.1))
    return best[1] / best[threads]


def threads_along(threads: int, ratio: float | None = None, usual: float | None = None) -> bool:
    """Whether ``threads`` intra-op threads work along now: the check chain runs at least
    :data:`MIN_SHARE` x ``threads`` times faster than on one thread, or :data:`MIN_SHARE` x the
    host's ``usual`` speed-up where that is lower (the fingerprint's ``thread_check_speedup``;
    ``ratio``: a speed-up :func:`speedup` already measured). One thread always does.

    On the Intel Xeon of ``docs/fidelity_cpu.md`` the chain runs 1.67-1.81x faster on its two
    vCPUs, idle, and 1.28x in a lag: against 1.8x alone every round was marked.

    >>> threads_along(2, 1.7), threads_along(2, 1.7, usual=1.69), threads_along(2, 1.28, usual=1.69)
    (False, True, False)
    """
    if threads <= 1:
        return True
    expected = threads if usual is None else min(float(threads), usual)
    return (speedup(threads) if ratio is None else ratio) >= MIN_SHARE * expected
