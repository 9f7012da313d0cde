"""onnxruntime's NCHWc depthwise conv at the figures a fingerprint measures: MLAS's sliding-window
kernel in tiles (masked where they reach into the padding) with a cost per call, the assembly
kernel per output and tap (:func:`cost_models.cpu.measured_depthwise_ns`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips.schema import CpuUnit, chip_from_dict
from cost_models.cpu import (
    DEPTHWISE_TILE_OUTPUTS,
    NCHWC_ACTIVATION_ATTR,
    NCHWC_ACTIVATION_PASS_NS,
    NCHWC_ATTR,
    depthwise_row_tiles,
    measured_depthwise_ns,
    nchwc_activation_ns,
)
from cost_models.table import estimate
from graph_ir.ir import Op, Tensor
from tests.helpers import host_chip, make_op

TILES = {3: (0.09, 0.21), 5: (0.21, 0.44), 7: (0.45, 0.53)}
FIELDS = {"depthwise_tile_ns": TILES, "depthwise_row_ns": 6.0, "depthwise_call_ns": 150.0, "depthwise_output_ns": 0.12,
          "depthwise_tap_ns": 0.011}  # fmt: skip


def depthwise(channels: int, rows: int, width: int, k: int = 3, stride: int = 1, dilation: int = 1, pad: int | None = None) -> Op:
    """A blocked depthwise conv giving ``rows x width`` outputs, ``same`` padding unless ``pad``."""
    pad = dilation * (k // 2) if pad is None else pad
    span = dilation * (k - 1) + 1
    x = Tensor("x", (1, channels, (rows - 1) * stride + span - 2 * pad, (width - 1) * stride + span - 2 * pad), "float32")
    w = Tensor("w", (channels, 1, k, k), "float32", is_weight=True)
    y = Tensor("y", (1, channels, rows, width), "float32")
    return make_op("Conv", [x, w], [y], group=channels, pads=(pad,) * 4, strides=(stride,) * 2, dilations=(dilation,) * 2,
                   **{NCHWC_ATTR: 16})  # fmt: skip


def unit_with(**fields: object) -> CpuUnit:
    unit = chip_from_dict(host_chip(**fields)).units[0]
    assert isinstance(unit, CpuUnit)
    return unit


class TestRowTiles:
    @given(width=st.integers(1, 300), k=st.sampled_from(sorted(DEPTHWISE_TILE_OUTPUTS)), pad=st.integers(0, 3))
    def test_every_output_is_in_one_tile_and_only_edge_tiles_are_masked(self, width: int, k: int, pad: int) -> None:
        pad = min(pad, k // 2)
        tiles = depthwise_row_tiles(depthwise(16, 4, width, k, pad=pad))
        assert tiles is not None
        inside, masked = tiles
        assert inside + masked == width
        tile = DEPTHWISE_TILE_OUTPUTS[k]
        assert masked <= 2 * tile + k  # the first tile, the last and one before it that reaches the right padding
        if pad == 0:
            assert masked == 0  # no column reaches outside the row
        else:
            assert masked >= min(width, tile)  # the first tile starts in the padding

    @pytest.mark.parametrize(("k", "stride", "dilation"), [(3, 2, 1), (3, 1, 2), (1, 1, 1), (9, 1, 1)])
    def test_strided_dilated_or_other_widths_go_to_the_assembly_kernel(self, k: int, stride: int, dilation: int) -> None:
        assert depthwise_row_tiles(depthwise(16, 8, 24, k, stride, dilation)) is None


class TestMeasured:
    def test_narrow_rows_cost_more_per_output_than_wide_ones(self) -> None:
        unit = unit_with(**FIELDS)
        wide, narrow = depthwise(64, 12, 120), depthwise(64, 120, 12)  # the same outputs and kernel rows
        wide_ns, narrow_ns = measured_depthwise_ns(wide, unit), measured_depthwise_ns(narrow, unit)
        assert wide_ns is not None and narrow_ns is not None
        assert narrow_ns > 1.5 * wide_ns  # one masked tile a row against two of ten, and ten times the calls

    def test_the_tiles_and_the_calls_add_up(self) -> None:
        unit = unit_with(**FIELDS)
        op = depthwise(32, 10, 24, pad=0)  # no padding: every tile inside, every kernel row in the input
        assert measured_depthwise_ns(op, unit) == pytest.approx(32 * 10 * 24 * 0.09 + 2 * 10 * 6.0 + 150.0)
        op = depthwise(32, 10, 12, k=5)  # one tile of 10 a row, masked
        share = (3 + 4 + 5 * 6 + 4 + 3) / 50  # kernel rows inside the input
        assert measured_depthwise_ns(op, unit) == pytest.approx(32 * 10 * 12 * 0.44 * share + 2 * 10 * 6.0 + 150.0)

    @given(k=st.sampled_from([3, 5, 7]), channels=st.sampled_from([16, 64, 256]), side=st.integers(8, 40))
    def test_the_assembly_kernel_pays_per_output_and_per_tap(self, k: int, channels: int, side: int) -> None:
        unit = unit_with(**FIELDS)
        op = depthwise(channels, side, side, k, stride=2, pad=0)
        assert measured_depthwise_ns(op, unit) == pytest.approx(channels * side * side * (0.12 + 0.011 * k * k))

    def test_a_1x1_or_a_unit_without_the_figures_keeps_the_taps_at_the_rate(self) -> None:
        assert measured_depthwise_ns(depthwise(64, 16, 16, k=1, stride=2), unit_with(**FIELDS)) is None
        assert measured_depthwise_ns(depthwise(64, 16, 16), unit_with()) is None
        assert measured_depthwise_ns(depthwise(64, 16, 16, stride=2), unit_with(depthwise_tile_ns=TILES)) is None

    def test_the_estimate_prices_them_apart_from_any_efficiency(self) -> None:
        op = depthwise(64, 24, 24)
        law = measured_depthwise_ns(op, unit_with(**FIELDS))
        assert law is not None
        plain = estimate(op, chip_from_dict(host_chip(**FIELDS)), "cpu", "model")
        halved = estimate(op, chip_from_dict(host_chip(**FIELDS, efficiency={"DepthwiseConv": 0.5})), "cpu", "model")
        old = estimate(op, chip_from_dict(host_chip(efficiency={"DepthwiseConv": 0.5})), "cpu", "model")
        assert plain is not None and halved is not None and old is not None
        assert plain.compute_ns == plain.stall_ns == pytest.approx(law)  # a pass no calibration refits
        assert halved.compute_ns == pytest.approx(law)
        assert old.compute_ns != pytest.approx(law) and old.stall_ns == 0.0  # without the figures: the taps at the rate


class TestActivationPass:
    def test_the_hosts_measured_pass_or_the_default(self) -> None:
        op = depthwise(64, 8, 8)
        passed = Op(op.name, op.op_type, op.category, op.inputs, op.outputs, {**op.attrs, NCHWC_ACTIVATION_ATTR: "Clip"})
        measured = unit_with(nchwc_activation_pass_ns={"Clip": 0.08, "Sigmoid": 0.24})
        assert nchwc_activation_ns(op, measured) == 0.0
        assert nchwc_activation_ns(passed, measured) == pytest.approx(64 * 64 * 0.08)
        assert nchwc_activation_ns(passed, unit_with()) == pytest.approx(64 * 64 * NCHWC_ACTIVATION_PASS_NS)
        tanh = Op(op.name, op.op_type, op.category, op.inputs, op.outputs, {**op.attrs, NCHWC_ACTIVATION_ATTR: "Tanh"})
        assert nchwc_activation_ns(tanh, measured) == pytest.approx(64 * 64 * NCHWC_ACTIVATION_PASS_NS)  # not measured


@pytest.mark.parametrize("fields", [
    {"depthwise_tile_ns": {4: (0.1, 0.2)}},  # no such sliding kernel width
    {"depthwise_tile_ns": {3: (0.1, -0.2)}},
    {"depthwise_tile_ns": {3: (0.1,)}},
    {"depthwise_row_ns": 0.0},
    {"depthwise_call_ns": -5.0},
    {"depthwise_tap_ns": -1.0},
    {"nchwc_activation_pass_ns": {"Clip": -0.1}},
])  # fmt: skip
def test_bad_figures_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(fields))):
        chip_from_dict(host_chip(**fields))
