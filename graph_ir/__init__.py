"""Graph IR: ONNX models as networkx DAGs of ops with shapes, bytes and MACs."""

from graph_ir.ir import (
    DTYPE_BYTES,
    PRECISION_BYTES,
    ModelError,
    ModelGraph,
    Op,
    Tensor,
    deployed_bytes,
)
from graph_ir.onnx_import import from_model_proto, load_onnx, parse_input_shape
from graph_ir.op_metrics import Metrics, metrics, register, registered_op_types

__all__ = [
    "DTYPE_BYTES",
    "PRECISION_BYTES",
    "Metrics",
    "ModelError",
    "ModelGraph",
    "Op",
    "Tensor",
    "deployed_bytes",
    "from_model_proto",
    "load_onnx",
    "metrics",
    "parse_input_shape",
    "register",
    "registered_op_types",
]
