"""Fixtures shared by the test packages (plain builders live in ``tests/helpers.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from chips import Chip, load_chip
from graph_ir.ir import ModelGraph
from graph_ir.onnx_import import load_onnx
from tests.helpers import MODELS

# No timing assertions in tests: hypothesis's per-example deadline fails a correct test on a
# loaded machine (seen on a 2-core machine at load 9), so it is off everywhere.
settings.register_profile("hwsim", deadline=None)
settings.load_profile("hwsim")


@pytest.fixture(scope="session")
def rk3588() -> Chip:
    """The bundled RK3588 chip, loaded once."""
    return load_chip("rk3588")


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The bundled example models (``examples/models``)."""
    return MODELS


@pytest.fixture(scope="session")
def yolov8n() -> ModelGraph:
    """The bundled YOLOv8n graph, loaded once."""
    return load_onnx(MODELS / "yolov8n.onnx")
