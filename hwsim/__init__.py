"""hwsim: simulation-first modelling of neural networks on heterogeneous SoCs.

>>> from hwsim import run
>>> result = run("rk3588", "examples/models/resnet18.onnx")  # doctest: +SKIP
>>> result.analysis.latency_ms  # doctest: +SKIP

The pipeline is imported on first use, so ``hwsim --help`` does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hwsim.pipeline import RunResult, run, run_graph

__all__ = ["RunResult", "__version__", "run", "run_graph"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("RunResult", "run", "run_graph"):
        from hwsim import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'hwsim' has no attribute {name!r}")
