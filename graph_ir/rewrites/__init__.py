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

# The built-in passes register themselves on import, one module each, sorted by name: this
# order is PASSES's order, the order `hwsim rewrite --passes auto` tries them in.
from graph_ir.rewrites import (
    channel_align,  # noqa: F401
    concat_fold,  # noqa: F401
    const_fold,  # noqa: F401
    dw_pw,  # noqa: F401
    eliminate_identity,  # noqa: F401
    fold_bn,  # noqa: F401
    fuse_qkv,  # noqa: F401
    group_merge,  # noqa: F401
    group_split,  # noqa: F401
    split_to_slice,  # noqa: F401
    unroll_loop,  # noqa: F401
)
