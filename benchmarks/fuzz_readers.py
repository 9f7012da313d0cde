"""Run every reader fuzzer of tests/fuzz with N generated inputs each; print inputs and time per reader.

    python benchmarks/fuzz_readers.py --examples 10000 [--only test_taskgraph_json ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

FUZZERS = {
    "tests.fuzz.test_taskgraph_fuzz": ["test_taskgraph_json", "test_taskgraph_stg"],
    "tests.fuzz.test_chip_fuzz": ["test_chip_yaml", "test_calibration_yaml"],
    "tests.fuzz.test_onnx_fuzz": ["test_onnx_bytes", "test_onnx_cnn_attributes", "test_onnx_shape_op_attributes",
                                "test_onnx_function_op_attributes", "test_onnx_contrib_op_attributes"],
    "tests.fuzz.test_study_files_fuzz": [
        "test_workload_yaml", "test_schedule_json", "test_sweep_yaml", "test_quant_binding_yaml", "test_accuracy_npz",
        "test_report_summary_json",
    ],
    "tests.fuzz.test_optimize_files_fuzz": ["test_search_yaml", "test_db_import_jsonl"],
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--examples", type=int, default=10_000)
    p.add_argument("--only", nargs="*", default=None, help="fuzzer function names")
    args = p.parse_args()
    os.environ["HWSIM_FUZZ_EXAMPLES"] = str(args.examples)  # read by tests.fuzz.harness.fuzz_settings
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import importlib

    from tests.fuzz.harness import CALLS

    print(f"{'fuzzer':<24} {'inputs':>8} {'seconds':>9} {'ms/input':>9}")
    for module, names in FUZZERS.items():
        mod = importlib.import_module(module)
        for name in names:
            if args.only and name not in args.only:
                continue
            before, t0 = sum(CALLS.values()), time.perf_counter()
            getattr(mod, name)()
            n, dt = sum(CALLS.values()) - before, time.perf_counter() - t0
            print(f"{name:<24} {n:>8} {dt:>9.1f} {1000 * dt / max(n, 1):>9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
