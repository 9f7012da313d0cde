"""The host machine: fingerprint, measurement with onnxruntime, validate, calibration."""
