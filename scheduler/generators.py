"""Random task graphs for tests and benchmarks (seeded, deterministic).

``related`` units have one speed each (run time = work / speed). ``unrelated`` units model a
SoC: task types (conv-like, FFT-like, elementwise, control) run at type-dependent speeds, and
some units cannot run some types (an NPU-like unit runs no FFT or control task, a DSP-like unit
no conv). Edge volumes are scaled so that mean transfer / mean run time = ``ccr``.
"""

from __future__ import annotations

import numpy as np

from scheduler.problem import Problem, make_problem

__all__ = ["UNIT_KINDS", "random_problem"]

#: Unit kinds of the unrelated model, in the order units are added.
UNIT_KINDS = ("cpu", "npu", "dsp", "gpu", "cpu")
# Relative run time of each task type on each unit kind (inf: cannot run).
_TYPES = {
    "conv": {"cpu": 1.0, "npu": 0.12, "dsp": np.inf, "gpu": 0.35},
    "fft": {"cpu": 1.0, "npu": np.inf, "dsp": 0.2, "gpu": 0.6},
    "eltwise": {"cpu": 1.0, "npu": 0.5, "dsp": 0.6, "gpu": 0.5},
    "control": {"cpu": 1.0, "npu": np.inf, "dsp": np.inf, "gpu": 2.0},
}


def random_problem(seed: int, n: int, n_units: int, ccr: float, kind: str = "related") -> Problem:
    """A layered random DAG of ``n`` tasks on ``n_units`` units (``kind``: related/unrelated)."""
    rng = np.random.default_rng(seed)
    width = max(1, round(np.sqrt(n)))
    layer = np.sort(rng.integers(0, max(1, n // width + 1), size=n))
    layer[0] = 0
    edges: list[tuple[int, int, float]] = []
    for j in range(n):
        earlier = np.flatnonzero(layer[:j] < layer[j])
        if len(earlier) == 0:
            continue
        k = int(rng.integers(1, min(3, len(earlier)) + 1))
        for i in sorted(rng.choice(earlier[-3 * width :], size=min(k, len(earlier[-3 * width :])), replace=False)):
            edges.append((int(i), j, 0.0))
    work = rng.uniform(1.0, 20.0, size=n)
    kinds: list[str] = [""] * n
    if kind == "related":
        speed = rng.uniform(0.5, 2.0, size=n_units)
        exec_ns = work[:, None] / speed[None, :]
    elif kind == "unrelated":
        names = list(_TYPES)
        exec_ns = np.empty((n, n_units))
        for i in range(n):
            t = names[int(rng.integers(0, len(names)))]
            kinds[i] = t
            for u in range(n_units):
                noise = rng.uniform(0.8, 1.25)
                exec_ns[i, u] = work[i] * _TYPES[t][UNIT_KINDS[u]] * noise
    else:
        raise ValueError(f"kind must be 'related' or 'unrelated', got {kind!r}")
    finite = exec_ns[np.isfinite(exec_ns)]
    mean_exec = float(finite.mean()) if finite.size else 1.0
    edges = [(i, j, float(ccr * mean_exec * rng.uniform(0.5, 1.5))) for i, j, _ in edges]
    units = [f"{UNIT_KINDS[u]}{u}" if kind == "unrelated" else f"u{u}" for u in range(n_units)]
    return make_problem([f"t{i}" for i in range(n)], units, exec_ns, edges, kinds=kinds)
