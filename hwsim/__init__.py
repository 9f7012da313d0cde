"""hwsim: simulation-first modelling of neural networks on heterogeneous SoCs.

>>> from hwsim import run
>>> result = run("rk3588", "examples/models/resnet18.onnx")  # doctest: +SKIP
>>> result.analysis.latency_ms  # doctest: +SKIP
"""

from hwsim.pipeline import RunResult, run, run_graph

__all__ = ["RunResult", "__version__", "run", "run_graph"]
__version__ = "0.1.0"
