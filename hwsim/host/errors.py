"""Bad-input errors of ``hwsim validate`` and ``hwsim fingerprint`` (exit 2), kept in a module
without heavy imports so that the CLI can list them cheaply."""

from __future__ import annotations

__all__ = ["MeasureError", "ValidateError"]


class MeasureError(ValueError):
    """onnxruntime cannot load or run a model, or a measurement cannot be made (exit 2)."""


class ValidateError(ValueError):
    """The chip or model cannot be validated (bad input, exit 2)."""
