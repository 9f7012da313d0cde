"""Cost models: what each op costs on each unit, one model per unit kind.

Importing this package registers the built-in models (cpu, gpu, npu, dsp).
"""

from cost_models import cpu, dsp, gpu, npu  # noqa: F401  (registers the built-in models)
from cost_models.base import CostModel, OpCost, model_for, register_model
from cost_models.table import PRECISIONS, CostTable, UnplaceableError, cost_table, estimate

__all__ = [
    "PRECISIONS",
    "CostModel",
    "CostTable",
    "OpCost",
    "UnplaceableError",
    "cost_table",
    "estimate",
    "model_for",
    "register_model",
]
