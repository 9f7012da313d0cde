"""Graph rewrites: passes over ONNX models, one per module, proven numerically.

See :mod:`graph_ir.rewrites.base` for what a pass is. Importing this package registers the
built-in passes.
"""

from graph_ir.rewrites.base import (
    PASSES,
    Pass,
    PassOptions,
    PassResult,
    Site,
    UnknownPassError,
    get_pass,
    register_pass,
)

__all__ = ["PASSES", "Pass", "PassOptions", "PassResult", "Site", "UnknownPassError", "get_pass", "register_pass"]
