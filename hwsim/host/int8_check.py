"""Does onnxruntime run its integer GEMM here with the kernel it ran when the chip was fingerprinted?

``hwsim validate`` puts measurements on the fingerprint's clock with an fp32 MatMul probe
(:func:`hwsim.host.validate.validate_model`). That catches a host running faster or slower, not
onnxruntime choosing another kernel. On this project's Xeon (AMX, AVX-512 VNNI) onnxruntime's
integer GEMM leaves AMX out when the process starts under a one-CPU affinity mask (``taskset -c
0``): the fingerprint's 768-cubed ``MatMulInteger`` ran at 774-780 GOP/s pinned against
2428-2494 unpinned, while the fp32 MatMul stayed at 208-210 GFLOP/s, and an int8 encoder read
20 % slower (3.91-4.00 ms against 3.27-3.33; ``docs/fidelity_cpu.md``, "Which int8 GEMM
onnxruntime runs"). The mask in force when onnxruntime first runs a kernel is what counts:
pinning later keeps AMX.

So where a validated model runs integer kernels, the fingerprint's int8 MatMul is timed again in
the same process (:func:`check_int8`); a rate off by more than :data:`RATIO_LIMIT` either way is a
warning (the int8 kernels' predictions and measurements are not comparable), and the ratio goes
into the validation record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INT8_GEMM_KERNELS", "RATIO_LIMIT", "Int8Check", "check_int8", "uses_int8_gemm"]

#: Kernels onnxruntime runs on its integer GEMM (MLAS ``QGEMM``), as the profiler names them.
INT8_GEMM_KERNELS = frozenset({
    "QLinearMatMul", "MatMulInteger", "QGemm", "QLinearConv", "ConvInteger", "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat", "QAttention", "DynamicQuantizeLSTM",
})  # fmt: skip
#: How far (a factor, either way) the int8 rate may be from the fingerprint's before it is
#: another kernel rather than the host's speed (the fp32 probe moved by up to 1.35x in one day
#: on the CI VM; a kernel change is 3x).
RATIO_LIMIT = 1.5


@dataclass(frozen=True, slots=True)
class Int8Check:
    """The fingerprint's int8 MatMul rate against the same probe in this process (GOP/s), and
    how many CPUs each process was allowed (None: not known)."""

    fingerprint_gops: float
    now_gops: float
    cpus_now: int | None = None
    cpus_fingerprint: int | None = None

    @property
    def ratio(self) -> float:
        """Now over then: below 1 the int8 GEMM runs slower here."""
        return self.now_gops / self.fingerprint_gops

    @property
    def agrees(self) -> bool:
        return 1.0 / RATIO_LIMIT <= self.ratio <= RATIO_LIMIT

    def warning(self, chip_path: str | Path) -> str:
        """One line for a check that does not agree."""
        masks = ""
        if self.cpus_now is not None and self.cpus_fingerprint is not None and self.cpus_now != self.cpus_fingerprint:
            masks = (f"; this process may run on {self.cpus_now} CPU(s), the fingerprint's on "
                     f"{self.cpus_fingerprint} (an affinity mask: taskset, a cpuset)")  # fmt: skip
        return (f"{chip_path}: onnxruntime's int8 GEMM runs at {self.now_gops:.0f} GOP/s in this process against "
                f"{self.fingerprint_gops:.0f} when the chip was fingerprinted (x{self.ratio:.2f}): another kernel{masks}; "
                "the int8 kernels' predictions do not hold here: fingerprint and validate under the same CPU mask")  # fmt: skip


def uses_int8_gemm(op_types: Iterable[str]) -> bool:
    """Whether any of these kernels (as onnxruntime profiled them) runs on the integer GEMM."""
    return any(t in INT8_GEMM_KERNELS for t in op_types)


def check_int8(
    chip_path: Path, threads: int = 1, probe: Callable[[int, int], float] | None = None
) -> Int8Check | None:
    """Time the fingerprint's int8 MatMul again here (``probe(n, threads)`` in GOP/s; default
    :func:`hwsim.host.fingerprint.probe_gflops` on int8) and compare; None when the chip file
    records no int8 rate at ``threads`` threads.

    Raises
    ------
    MeasureError
        For a fingerprint record whose int8 rate is not a positive number.
    """
    from hwsim.host.fingerprint import (
        cpus_allowed,
        probe_gflops,
        read_fingerprint,
        reference_gflops,
    )

    ref = reference_gflops(chip_path, threads, "int8")
    if ref is None:
        return None
    gops, n = ref
    now = probe(n, threads) if probe is not None else probe_gflops(n, threads, dtype="int8")
    fp = read_fingerprint(chip_path) or {}
    then = fp.get("cpus_allowed")
    return Int8Check(gops, now, cpus_allowed(), then if isinstance(then, int) else None)
