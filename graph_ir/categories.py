"""Op categories: the one list of them and what is known of each.

Every op gets a category from its op type (:mod:`graph_ir.op_metrics`); cost models keep one
default efficiency per category, fusion picks its heads and epilogue stages by category, and
the report colours ops by it. A new category is one entry in :data:`Category` and one in
:data:`CATEGORY_INFO` (an import-time check says which is missing); every cost model's
default-efficiency table must then name it too (``cost_models.register_model`` checks).

>>> CATEGORIES[:3]
('conv', 'matmul', 'elementwise')
>>> sorted(GEMM_CATEGORIES), sorted(EPILOGUE_CATEGORIES)
(['conv', 'matmul'], ['activation', 'elementwise'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

__all__ = [
    "CATEGORIES",
    "CATEGORY_INFO",
    "COSTED_CATEGORIES",
    "EPILOGUE_CATEGORIES",
    "GEMM_CATEGORIES",
    "Category",
    "CategoryInfo",
]

Category = Literal[
    "conv", "matmul", "elementwise", "activation", "pool", "reduce", "norm", "softmax", "data",
    "layout", "signal", "rnn", "unknown",
]  # fmt: skip
#: Every category, in the order reports list them.
CATEGORIES: tuple[Category, ...] = get_args(Category)


@dataclass(frozen=True, slots=True)
class CategoryInfo:
    """What is known of one op category.

    Attributes
    ----------
    ops : str
        What ops it holds, for people.
    color : str
        Its fixed colour in every figure (``#rrggbb``).
    gemm : bool
        Its ops lower to a GEMM (:func:`graph_ir.gemm.gemm_of`): MAC arrays and tensor cores run
        them, and they head fusion groups.
    epilogue : bool
        Its ops can run in the epilogue of the GEMM before them (fused, no DRAM round trip).
    view : bool
        Its ops only reinterpret a tensor and cost nothing on any unit (no efficiency needed).
    """

    ops: str
    color: str
    gemm: bool = False
    epilogue: bool = False
    view: bool = False


CATEGORY_INFO: Mapping[Category, CategoryInfo] = MappingProxyType(
    {
        "conv": CategoryInfo("Conv, ConvTranspose and their quantized forms", "#1f77b4", gemm=True),
        "matmul": CategoryInfo("MatMul, Gemm, Einsum and their quantized forms", "#ff7f0e", gemm=True),
        "elementwise": CategoryInfo(
            "binary arithmetic and comparisons; interpolating Resize", "#2ca02c", epilogue=True
        ),
        "activation": CategoryInfo("unary functions (Relu, Sigmoid, Cast, ...)", "#98df8a", epilogue=True),
        "pool": CategoryInfo("max, average and global pooling", "#9467bd"),
        "reduce": CategoryInfo("reductions, ArgMax, TopK, CumSum", "#8c564b"),
        "norm": CategoryInfo("batch, layer, instance and group normalization", "#e377c2"),
        "softmax": CategoryInfo("Softmax, LogSoftmax, Hardmax", "#bcbd22"),
        "data": CategoryInfo("copies: Concat, Slice, Transpose, Gather, nearest Resize, ...", "#17becf"),
        "layout": CategoryInfo("views: Reshape, Flatten, Squeeze, ...", "#c7c7c7", view=True),
        "signal": CategoryInfo("DFT, STFT and window functions", "#aec7e8"),
        "rnn": CategoryInfo("LSTM, GRU, RNN", "#ffbb78"),
        "unknown": CategoryInfo("op types without a formula: costed as a memory-bound copy", "#7f7f7f"),
    }
)

if tuple(CATEGORY_INFO) != CATEGORIES:  # pragma: no cover - a category added to one list only
    raise ImportError(f"CATEGORY_INFO lists {tuple(CATEGORY_INFO)}, Category lists {CATEGORIES}")

#: Categories whose ops lower to a GEMM (conv, matmul).
GEMM_CATEGORIES: frozenset[Category] = frozenset(c for c, i in CATEGORY_INFO.items() if i.gemm)
#: Categories whose ops can run fused in a GEMM's epilogue.
EPILOGUE_CATEGORIES: frozenset[Category] = frozenset(c for c, i in CATEGORY_INFO.items() if i.epilogue)
#: Categories a cost model computes a cost for (all but the free views): each needs an efficiency.
COSTED_CATEGORIES: tuple[Category, ...] = tuple(c for c, i in CATEGORY_INFO.items() if not i.view)
