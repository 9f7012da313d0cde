"""The in-place activation benchmark (``benchmarks/inplace_activation.py``): its chains run in
onnxruntime, the arena replay prices the activation written over the Add's output apart from the
one given a buffer of its own, and the table names both."""

from __future__ import annotations

import pytest

from tests.helpers import ROOT, load_benchmarks

bench = load_benchmarks("one_op_kernels", "inplace_activation")
CHIP = str(ROOT / "examples" / "host" / "host_ci.yaml")


@pytest.mark.parametrize("apart", [False, True])
def test_every_kernel_of_the_chain_is_timed(apart: bool) -> None:
    got = bench.measured(bench.chain(4096, "Relu", apart), 4096)
    assert set(got) == set(bench.NODES) and all(ns > 0 for ns in got.values())


def test_the_price_tells_in_place_from_a_buffer_of_its_own() -> None:
    n = 256 * 1024  # 1 MiB: the Add's output is in the L2 when the Relu runs over it
    in_place, apart = (bench.priced(bench.chain(n, "Relu", a), CHIP)["act"] for a in (False, True))
    assert 0 < in_place < apart  # its own buffer is written cold; in place nothing is fetched


def test_the_table_has_a_row_per_size_and_buffer(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--chip", CHIP, "--rounds", "1", "--kib", "16,64", "--op", "Sigmoid"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith(("| 16 |", "| 64 |"))]
    assert [r.split(" | ")[1] for r in rows] == ["in place", "its own", "in place", "its own"]
