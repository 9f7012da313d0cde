"""Cost models: what each op costs on each unit, one model per unit kind.

Importing this package registers the built-in models (cpu, gpu, npu, dsp).

To add a unit kind (say ``tpu``): write one schema class and one cost model, nothing else.

* In ``chips`` (or your own module): ``@register_unit_kind class TpuUnit(chips.schema.Unit)``
  with ``kind: Literal["tpu"] = "tpu"``, its hardware fields (units in the names), the class
  attributes ``general_purpose`` (runs ops without a formula?), ``ep_priority`` (its place in
  onnxruntime's execution-provider order, for ``ort-greedy``) and ``sweep_fields`` (what
  ``hwsim sensitivity`` varies), and the methods ``dtypes()``, ``onchip_bytes()`` (the buffer
  a fused epilogue's tile lives in) and ``peak_flops_per_ns(dtype)`` (one core's peak). Chips then accept ``kind: tpu``; an unknown kind is a
  validation error naming the registered ones.
* In ``cost_models/tpu.py``: ``class TpuModel(UnitModel[TpuUnit])`` with ``unit_class``,
  ``default_fuses``, ``default_efficiency`` (one entry per category of
  :data:`graph_ir.categories.COSTED_CATEGORIES`; registration checks) and ``roofline()``, then
  ``register_model(TpuModel())`` and import the module here. A unit kind without a model fails
  at the cost table, naming the kind.

To add an op family to a model: write a handler method with the signature of
:meth:`~cost_models.base.UnitModel.roofline` and list it in the model's ``handlers`` with
:func:`~cost_models.base.op_handlers` (``handlers = op_handlers((("TopK",), topk), ...)``); op
types without a handler fall back to the roofline. GEMM-like ops lower through
:func:`graph_ir.gemm.gemm_of` (their op types: :data:`graph_ir.gemm.GEMM_OP_TYPES`). A new op
*type* gets its MACs, FLOPs and category from a handler in :mod:`graph_ir.op_metrics`; a new
*category* is one entry in :data:`graph_ir.categories.Category` and
:data:`~graph_ir.categories.CATEGORY_INFO` (its colour, GEMM/epilogue/view facts) plus an
efficiency in every model's ``default_efficiency``.
"""

from cost_models import cpu, dsp, gpu, npu  # noqa: F401  (registers the built-in models)
from cost_models.base import (
    CostModel,
    OpCost,
    UnitModel,
    model_for,
    op_handlers,
    register_model,
    registered_kinds,
    unregister_model,
)
from cost_models.table import PRECISIONS, CostTable, UnplaceableError, cost_table, estimate

__all__ = [
    "PRECISIONS",
    "CostModel",
    "CostTable",
    "OpCost",
    "UnitModel",
    "UnplaceableError",
    "cost_table",
    "estimate",
    "model_for",
    "op_handlers",
    "register_model",
    "registered_kinds",
    "unregister_model",
]
