"""Weightless builders for the rknn_model_zoo architectures hwsim is compared with on RK3588.

ResNet50-v2 (the ONNX model zoo's ``resnet50-v2-7``: MXNet Gluon pre-activation bottlenecks,
BatchNormalization nodes kept as in that file), YOLOv5 n/s/m (ultralytics v6.0+ ``yolov5*.yaml``
at 640x640, SiLU as Sigmoid*Mul) and ``yolov5s_relu`` (the same with ReLU, as rknn_model_zoo
ships it), both ending at the three Detect 1x1 convs as rknn_model_zoo's export does (box
decoding runs on the CPU, outside the model), and MobileNetV1 1.0/224 (ReLU6 as Clip).
Built with the helpers of ``make_models.py``; MAC counts match the published figures within 1%
(:data:`PUBLISHED_GMACS`, checked by ``python examples/zoo_rknn.py --macs``). :data:`HELD_OUT`
builds YOLOv8 n/s/m, n/s/m-seg and YOLO11 n/s/m with the head airockchip's RKNN export has,
YOLOv5 n/s/m-seg (v7.0, the Detect convs and the protos as outputs) and YOLOX s/m; they are not
bundled (``benchmarks/bench_rk3588_published.py`` builds them in memory).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx
from onnx import TensorProto

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from make_models import GraphBuilder

    from graph_ir import ModelGraph


def _mm() -> Any:
    """``make_models``, imported late: its ``MODELS`` takes in this module's, so importing it
    at the top would be circular."""
    import make_models

    return make_models


def conv(g: GraphBuilder, x: str, cin: int, cout: int, k: int, path: str, **kw: Any) -> str:
    """``make_models.conv`` (Conv with BatchNorm folded into weight + bias)."""
    return str(_mm().conv(g, x, cin, cout, k, path, **kw))


def relu6(g: GraphBuilder, x: str, path: str) -> str:
    return str(_mm().relu6(g, x, path))

__all__ = ["HELD_OUT", "MODELS", "PUBLISHED_GMACS", "model_graph"]

#: Published multiply-accumulates (G) of each architecture.
PUBLISHED_GMACS = {
    "resnet50_v2": 4.10,    # ResNet-50 (He et al. 2016, v2 keeps the conv shapes): 4.1 GMACs at 224
    "mobilenetv1": 0.569,   # Howard et al. 2017, table 8: 569 M mult-adds (1.0, 224)
    "yolov5n": 2.25,        # ultralytics yolov5 README: 4.5 GFLOPs at 640 (FLOPs = 2 x MACs)
    "yolov5s": 8.25,        # 16.5 GFLOPs
    "yolov5s_relu": 8.25,   # same convs as yolov5s, ReLU instead of SiLU
    "yolov5m": 24.5,        # 49.0 GFLOPs
    "yolov8n_rknn": 4.35,   # ultralytics YOLOv8 README: 8.7 GFLOPs at 640 (with the DFL, which the export drops)
    "yolov8s_rknn": 14.3,   # 28.6 GFLOPs
    "yolov8m_rknn": 39.45,  # 78.9 GFLOPs
    "yolo11n_rknn": 3.25,   # ultralytics YOLO11 docs: 6.5 GFLOPs at 640 (thop: the attention's MatMuls uncounted)
    "yolo11s_rknn": 10.75,  # 21.5 GFLOPs
    "yolo11m_rknn": 34.0,   # 68.0 GFLOPs
    "yolox_s": 13.4,        # Megvii YOLOX README: YOLOX-s 26.8 GFLOPs at 640
    "yolox_m": 36.9,        # YOLOX-m 73.8 GFLOPs
    "yolov5n_seg": 3.55,    # ultralytics yolov5 v7.0 README, segmentation: 7.1 GFLOPs at 640
    "yolov5s_seg": 13.2,    # 26.4 GFLOPs
    "yolov5m_seg": 35.4,    # 70.8 GFLOPs
}  # fmt: skip


# --------------------------------------------------------------------------------------------
# ResNet50-v2 (Gluon resnet50_v2, as exported to the ONNX model zoo)
# --------------------------------------------------------------------------------------------
def _bn(g: GraphBuilder, x: str, c: int, path: str) -> str:
    p = path.strip("/").replace("/", ".")
    ins = [x] + [g.weight(f"{p}.{n}", [c]) for n in ("gamma", "beta", "running_mean", "running_var")]
    return g.op("BatchNormalization", ins, f"{path}/BatchNormalization", epsilon=1e-5, momentum=0.9)


def build_resnet50_v2() -> onnx.ModelProto:
    g = _mm().GraphBuilder("resnet50_v2")
    x = g.input("data", TensorProto.FLOAT, [1, 3, 224, 224])
    x = _bn(g, x, 3, "/features/bn_data")
    x = conv(g, x, 3, 64, 7, "/features/conv0", s=2, pad=3, bias=False)
    x = _bn(g, x, 64, "/features/bn0")
    x = g.op("Relu", [x], "/features/relu0/Relu")
    x = g.op("MaxPool", [x], "/features/pool0/MaxPool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    cin = 64
    for si, (blocks, cout) in enumerate(zip([3, 4, 6, 3], [256, 512, 1024, 2048], strict=True), start=1):
        for bi in range(blocks):
            s = 2 if (si > 1 and bi == 0) else 1
            base = f"/features/stage{si}/unit{bi}"
            mid = cout // 4
            pre = g.op("Relu", [_bn(g, x, cin, f"{base}/bn1")], f"{base}/relu1/Relu")
            idt = x if (s == 1 and cin == cout) else conv(g, pre, cin, cout, 1, f"{base}/downsample", s=s,
                                                           pad=0, bias=False)
            y = conv(g, pre, cin, mid, 1, f"{base}/conv1", pad=0, bias=False)
            y = g.op("Relu", [_bn(g, y, mid, f"{base}/bn2")], f"{base}/relu2/Relu")
            y = conv(g, y, mid, mid, 3, f"{base}/conv2", s=s, bias=False)
            y = g.op("Relu", [_bn(g, y, mid, f"{base}/bn3")], f"{base}/relu3/Relu")
            y = conv(g, y, mid, cout, 1, f"{base}/conv3", pad=0, bias=False)
            x = g.op("Add", [y, idt], f"{base}/Add")
            cin = cout
    x = g.op("Relu", [_bn(g, x, cin, "/features/bn_final")], "/features/relu_final/Relu")
    x = g.op("GlobalAveragePool", [x], "/features/pool1/GlobalAveragePool")
    x = g.op("Flatten", [x], "/Flatten", axis=1)
    x = g.op("Gemm", [x, g.weight("output.weight", [1000, 2048]), g.weight("output.bias", [1000])],
             "/output/Gemm", alpha=1.0, beta=1.0, transB=1)
    g.output(x, "resnetv24_dense0_fwd", TensorProto.FLOAT, [1, 1000])
    return g.model("ResNet50-v2 (Gluon pre-activation bottlenecks as in the ONNX model zoo's "
                   "resnet50-v2-7, BatchNormalization kept), weightless.")


# --------------------------------------------------------------------------------------------
# MobileNetV1 1.0 / 224
# --------------------------------------------------------------------------------------------
def build_mobilenetv1() -> onnx.ModelProto:
    g = _mm().GraphBuilder("mobilenetv1")
    x = g.input("input", TensorProto.FLOAT, [1, 3, 224, 224])
    x = relu6(g, conv(g, x, 3, 32, 3, "/Conv2d_0", s=2), "/Conv2d_0/Relu6")
    cin = 32
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2), (1024, 1)]
    for i, (cout, s) in enumerate(plan, start=1):
        base = f"/Conv2d_{i}"
        x = relu6(g, conv(g, x, cin, cin, 3, f"{base}_depthwise", s=s, groups=cin), f"{base}_depthwise/Relu6")
        x = relu6(g, conv(g, x, cin, cout, 1, f"{base}_pointwise", pad=0), f"{base}_pointwise/Relu6")
        cin = cout
    x = g.op("GlobalAveragePool", [x], "/AvgPool/GlobalAveragePool")
    x = g.op("Flatten", [x], "/Flatten", axis=1)
    x = g.op("Gemm", [x, g.weight("Logits.weight", [1000, 1024]), g.weight("Logits.bias", [1000])],
             "/Logits/Gemm", alpha=1.0, beta=1.0, transB=1)
    g.output(x, "output", TensorProto.FLOAT, [1, 1000])
    return g.model("MobileNetV1 1.0 @224 (ReLU6 as Clip, BatchNorm folded), weightless.")


# --------------------------------------------------------------------------------------------
# YOLOv5 v6.0+ (n, s, m), SiLU or ReLU, Detect convs as outputs (rknn_model_zoo export)
# --------------------------------------------------------------------------------------------
def _div8(c: float) -> int:
    return int(-(-c // 8) * 8)


def _yconv(g: GraphBuilder, x: str, cin: int, cout: int, k: int, path: str, act: str, s: int = 1,
           pad: int | None = None) -> str:
    y = conv(g, x, cin, cout, k, f"{path}/conv", s=s, pad=pad)
    if act == "relu":
        return g.op("Relu", [y], f"{path}/act/Relu")
    if act == "lrelu":  # YOLOX's "lrelu": LeakyReLU(0.1)
        return g.op("LeakyRelu", [y], f"{path}/act/LeakyRelu", alpha=0.1)
    sg = g.op("Sigmoid", [y], f"{path}/act/Sigmoid")
    return g.op("Mul", [y, sg], f"{path}/act/Mul")


def _c3(g: GraphBuilder, x: str, c1: int, c2: int, n: int, shortcut: bool, path: str, act: str) -> str:
    c_ = c2 // 2
    a = _yconv(g, x, c1, c_, 1, f"{path}/cv1", act)
    b = _yconv(g, x, c1, c_, 1, f"{path}/cv2", act)
    for i in range(n):
        h = _yconv(g, a, c_, c_, 1, f"{path}/m/m.{i}/cv1", act)
        h = _yconv(g, h, c_, c_, 3, f"{path}/m/m.{i}/cv2", act)
        a = g.op("Add", [a, h], f"{path}/m/m.{i}/Add") if shortcut else h
    cat = g.op("Concat", [a, b], f"{path}/Concat", axis=1)
    return _yconv(g, cat, 2 * c_, c2, 1, f"{path}/cv3", act)


def _sppf(g: GraphBuilder, x: str, c1: int, c2: int, path: str, act: str) -> str:
    c_ = c1 // 2
    y = [_yconv(g, x, c1, c_, 1, f"{path}/cv1", act)]
    for i in range(3):
        y.append(g.op("MaxPool", [y[-1]], f"{path}/m/MaxPool" + (f"_{i}" if i else ""), ceil_mode=0,
                      dilations=[1, 1], kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1]))
    return _yconv(g, g.op("Concat", y, f"{path}/Concat", axis=1), 4 * c_, c2, 1, f"{path}/cv2", act)


def _up(g: GraphBuilder, x: str, path: str) -> str:
    return g.op("Resize", [x, "", g.f32([1.0, 1.0, 2.0, 2.0], "const_resize_scales_x2")], f"{path}/Resize",
                coordinate_transformation_mode="asymmetric", mode="nearest", nearest_mode="floor")


def build_yolov5(name: str, depth: float, width: float, act: str = "silu", seg: bool = False) -> onnx.ModelProto:
    """ultralytics yolov5 v6.0+ (``yolov5{n,s,m}.yaml``) at 640x640, 80 classes, 3 anchors.
    ``seg``: ``yolov5{n,s,m}-seg.yaml`` (v7.0), each Detect conv with 32 mask coefficients per
    anchor too, and the Proto branch (3x3 conv, nearest 2x up-sampling, 3x3 conv, 1x1 conv to 32
    masks at 160x160) as a fourth output."""
    g = _mm().GraphBuilder(name)

    def ch(c: int) -> int:
        return _div8(c * width)

    def rep(n: int) -> int:
        return max(round(n * depth), 1)

    x = g.input("images", TensorProto.FLOAT, [1, 3, 640, 640])
    o: dict[int, str] = {}
    o[0] = _yconv(g, x, 3, ch(64), 6, "/model.0", act, s=2, pad=2)
    o[1] = _yconv(g, o[0], ch(64), ch(128), 3, "/model.1", act, s=2)
    o[2] = _c3(g, o[1], ch(128), ch(128), rep(3), True, "/model.2", act)
    o[3] = _yconv(g, o[2], ch(128), ch(256), 3, "/model.3", act, s=2)
    o[4] = _c3(g, o[3], ch(256), ch(256), rep(6), True, "/model.4", act)
    o[5] = _yconv(g, o[4], ch(256), ch(512), 3, "/model.5", act, s=2)
    o[6] = _c3(g, o[5], ch(512), ch(512), rep(9), True, "/model.6", act)
    o[7] = _yconv(g, o[6], ch(512), ch(1024), 3, "/model.7", act, s=2)
    o[8] = _c3(g, o[7], ch(1024), ch(1024), rep(3), True, "/model.8", act)
    o[9] = _sppf(g, o[8], ch(1024), ch(1024), "/model.9", act)
    o[10] = _yconv(g, o[9], ch(1024), ch(512), 1, "/model.10", act)
    o[11] = _up(g, o[10], "/model.11")
    o[12] = g.op("Concat", [o[11], o[6]], "/model.12/Concat", axis=1)
    o[13] = _c3(g, o[12], 2 * ch(512), ch(512), rep(3), False, "/model.13", act)
    o[14] = _yconv(g, o[13], ch(512), ch(256), 1, "/model.14", act)
    o[15] = _up(g, o[14], "/model.15")
    o[16] = g.op("Concat", [o[15], o[4]], "/model.16/Concat", axis=1)
    o[17] = _c3(g, o[16], 2 * ch(256), ch(256), rep(3), False, "/model.17", act)
    o[18] = _yconv(g, o[17], ch(256), ch(256), 3, "/model.18", act, s=2)
    o[19] = g.op("Concat", [o[18], o[14]], "/model.19/Concat", axis=1)
    o[20] = _c3(g, o[19], 2 * ch(256), ch(512), rep(3), False, "/model.20", act)
    o[21] = _yconv(g, o[20], ch(512), ch(512), 3, "/model.21", act, s=2)
    o[22] = g.op("Concat", [o[21], o[10]], "/model.22/Concat", axis=1)
    o[23] = _c3(g, o[22], 2 * ch(512), ch(1024), rep(3), False, "/model.23", act)
    per_anchor = 85 + (32 if seg else 0)
    for i, (src, c, hw) in enumerate(((o[17], ch(256), 80), (o[20], ch(512), 40), (o[23], ch(1024), 20))):
        y = conv(g, src, c, 3 * per_anchor, 1, f"/model.24/m.{i}", pad=0)
        g.output(y, f"output{i}", TensorProto.FLOAT, [1, 3 * per_anchor, hw, hw])
    if seg:  # Proto(ch[0], npr, 32), npr = 256 scaled by the width (yolov5's parse_model)
        p = _yconv(g, o[17], ch(256), ch(256), 3, "/model.24/proto/cv1", act)
        p = _yconv(g, _up(g, p, "/model.24/proto/upsample"), ch(256), ch(256), 3, "/model.24/proto/cv2", act)
        g.output(_yconv(g, p, ch(256), 32, 1, "/model.24/proto/cv3", act), "proto", TensorProto.FLOAT, [1, 32, 160, 160])
    kind = "ReLU" if act == "relu" else "SiLU as Sigmoid*Mul"
    return g.model(f"YOLOv5 v6.0+ (depth {depth}, width {width}) at 640x640, {kind}, BatchNorm folded, "
                   "the three Detect convs as outputs (rknn_model_zoo export), weightless.")


def yolov8_trunk(
    g: GraphBuilder, x: str, ch: Callable[[int], int], rep: Callable[[int], int]
) -> tuple[str, str, str]:
    """ultralytics ``yolov8.yaml``'s backbone and neck (layers 0-21) on ``x``, channels by ``ch``
    and repeats by ``rep`` (a scale's rules): the P3, P4 and P5 outputs the head reads."""
    mm = _mm()
    o: dict[int, str] = {0: mm.y_conv(g, x, 3, ch(64), 3, "/model.0", s=2)}
    o[1] = mm.y_conv(g, o[0], ch(64), ch(128), 3, "/model.1", s=2)
    o[2] = mm.c2f(g, o[1], ch(128), ch(128), rep(3), True, "/model.2")
    o[3] = mm.y_conv(g, o[2], ch(128), ch(256), 3, "/model.3", s=2)
    o[4] = mm.c2f(g, o[3], ch(256), ch(256), rep(6), True, "/model.4")
    o[5] = mm.y_conv(g, o[4], ch(256), ch(512), 3, "/model.5", s=2)
    o[6] = mm.c2f(g, o[5], ch(512), ch(512), rep(6), True, "/model.6")
    o[7] = mm.y_conv(g, o[6], ch(512), ch(1024), 3, "/model.7", s=2)
    o[8] = mm.c2f(g, o[7], ch(1024), ch(1024), rep(3), True, "/model.8")
    o[9] = mm.sppf(g, o[8], ch(1024), ch(1024), 5, "/model.9")
    o[11] = g.op("Concat", [mm.upsample2x(g, o[9], "/model.10"), o[6]], "/model.11/Concat", axis=1)
    o[12] = mm.c2f(g, o[11], ch(1024) + ch(512), ch(512), rep(3), False, "/model.12")
    o[14] = g.op("Concat", [mm.upsample2x(g, o[12], "/model.13"), o[4]], "/model.14/Concat", axis=1)
    o[15] = mm.c2f(g, o[14], ch(512) + ch(256), ch(256), rep(3), False, "/model.15")
    o[17] = g.op("Concat", [mm.y_conv(g, o[15], ch(256), ch(256), 3, "/model.16", s=2), o[12]],
                 "/model.17/Concat", axis=1)  # fmt: skip
    o[18] = mm.c2f(g, o[17], ch(256) + ch(512), ch(512), rep(3), False, "/model.18")
    o[20] = g.op("Concat", [mm.y_conv(g, o[18], ch(512), ch(512), 3, "/model.19", s=2), o[9]],
                 "/model.20/Concat", axis=1)  # fmt: skip
    o[21] = mm.c2f(g, o[20], ch(512) + ch(1024), ch(1024), rep(3), False, "/model.21")
    return o[15], o[18], o[21]


def build_yolov8_rknn(name: str, depth: float, width: float, max_channels: int, seg: bool = False) -> onnx.ModelProto:
    """ultralytics YOLOv8 (``yolov8.yaml`` scales n/s/m) at 640x640 as airockchip's
    ``ultralytics_yolov8`` exports it for RKNN: the Detect head without its DFL and box
    decoding (they run on the CPU), per level the box branch's 64 channels, the class
    branch through a Sigmoid, and their sum over the classes clipped to [0, 1]: nine outputs.
    ``seg``: ``yolov8-seg.yaml``'s Segment head, per level the 32 mask coefficients too, and
    the Proto branch's 32 masks at 160x160 (thirteen outputs)."""
    mm = _mm()
    g = mm.GraphBuilder(name)

    def ch(c: int) -> int:  # ultralytics make_divisible(min(c, max_channels) * width, 8)
        return _div8(min(c, max_channels) * width)

    def rep(n: int) -> int:
        return max(round(n * depth), 1)

    x = g.input("images", TensorProto.FLOAT, [1, 3, 640, 640])
    p3, p4, p5 = yolov8_trunk(g, x, ch, rep)
    levels = ((p3, ch(256), 80), (p4, ch(512), 40), (p5, ch(1024), 20))
    c2, c3 = max(16, levels[0][1] // 4, 64), max(levels[0][1], 80)  # Detect's branch widths (reg_max 16, 80 classes)
    for i, (feat, c, hw) in enumerate(levels):
        d = "/model.22"
        b = mm.y_conv(g, mm.y_conv(g, feat, c, c2, 3, f"{d}/cv2.{i}.0"), c2, c2, 3, f"{d}/cv2.{i}.1")
        g.output(mm.conv(g, b, c2, 64, 1, f"{d}/cv2.{i}.2", pad=0), f"box{i}", TensorProto.FLOAT, [1, 64, hw, hw])
        k = mm.y_conv(g, mm.y_conv(g, feat, c, c3, 3, f"{d}/cv3.{i}.0"), c3, c3, 3, f"{d}/cv3.{i}.1")
        cls = g.op("Sigmoid", [mm.conv(g, k, c3, 80, 1, f"{d}/cv3.{i}.2", pad=0)], f"{d}/Sigmoid_{i}",
                   outputs=[f"cls{i}"])  # fmt: skip
        total = g.op("ReduceSum", [cls, g.i64([1])], f"{d}/ReduceSum_{i}", keepdims=1)
        score = g.op("Clip", [total, g.f32(0.0), g.f32(1.0)], f"{d}/Clip_{i}")
        g.output(cls, f"cls{i}", TensorProto.FLOAT, [1, 80, hw, hw])
        g.output(score, f"score_sum{i}", TensorProto.FLOAT, [1, 1, hw, hw])
        if seg:  # Segment's cv4: mask coefficients, max(ch[0] // 4, 32) wide
            c4 = max(levels[0][1] // 4, 32)
            m = mm.y_conv(g, mm.y_conv(g, feat, c, c4, 3, f"{d}/cv4.{i}.0"), c4, c4, 3, f"{d}/cv4.{i}.1")
            g.output(mm.conv(g, m, c4, 32, 1, f"{d}/cv4.{i}.2", pad=0), f"seg{i}", TensorProto.FLOAT, [1, 32, hw, hw])
    if seg:
        g.output(_proto(g, p3, ch(256), ch(256)), "proto", TensorProto.FLOAT, [1, 32, 160, 160])
    return g.model(f"YOLOv8 (depth {depth}, width {width}, max channels {max_channels}) at 640x640 as "
                   "airockchip/ultralytics_yolov8 exports it for RKNN (no DFL, no decoding), weightless.")


def _csp(g: GraphBuilder, x: str, cin: int, cout: int, n: int, shortcut: bool, path: str, act: str) -> str:
    """YOLOX's CSPLayer (expansion 0.5, bottlenecks of expansion 1.0)."""
    h = cout // 2
    a = _yconv(g, x, cin, h, 1, f"{path}/conv1", act)
    b = _yconv(g, x, cin, h, 1, f"{path}/conv2", act)
    for i in range(n):
        y = _yconv(g, _yconv(g, a, h, h, 1, f"{path}/m.{i}/conv1", act), h, h, 3, f"{path}/m.{i}/conv2", act)
        a = g.op("Add", [y, a], f"{path}/m.{i}/Add") if shortcut else y
    return _yconv(g, g.op("Concat", [a, b], f"{path}/Concat", axis=1), 2 * h, cout, 1, f"{path}/conv3", act)


def _focus(g: GraphBuilder, x: str, cout: int, act: str) -> str:
    """YOLOX's Focus stem: the four pixel phases side by side (strided Slices), then a 3x3 conv."""
    parts = []
    for i, (h0, w0) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
        parts.append(g.op("Slice", [x, g.i64([h0, w0]), g.i64([640, 640]), g.i64([2, 3]), g.i64([2, 2])],
                          f"/backbone/stem/Slice_{i}"))  # fmt: skip
    return _yconv(g, g.op("Concat", parts, "/backbone/stem/Concat", axis=1), 12, cout, 3, "/backbone/stem/conv", act)


def build_yolox(name: str, depth: float, width: float, act: str = "silu") -> onnx.ModelProto:
    """Megvii YOLOX (``yolox_s`` 0.33/0.50, ``yolox_m`` 0.67/0.75) at 640x640: CSPDarknet with a
    Focus stem and SPP, PAFPN, the decoupled head (per level a 1x1 stem, two 3x3 convs each for
    classes and for boxes); per level the box, objectness Sigmoid and class Sigmoid concatenated,
    the decoding left out, as YOLOX's ONNX export without ``decode_in_inference``: three outputs."""
    g = _mm().GraphBuilder(name)

    def w(c: int) -> int:  # YOLOX's int(c * width)
        return int(c * width)

    bd = max(round(depth * 3), 1)
    x = g.input("images", TensorProto.FLOAT, [1, 3, 640, 640])
    y = _focus(g, x, w(64), act)
    feats = []
    for i, (cin, cout, n) in enumerate(((64, 128, bd), (128, 256, 3 * bd), (256, 512, 3 * bd), (512, 1024, bd))):
        y = _yconv(g, y, w(cin), w(cout), 3, f"/backbone/dark{i + 2}/conv", act, s=2)
        if i == 3:  # SPPBottleneck: 5/9/13 max pools beside the input
            h = _yconv(g, y, w(cout), w(cout) // 2, 1, "/backbone/dark5/spp/conv1", act)
            pools = [g.op("MaxPool", [h], f"/backbone/dark5/spp/MaxPool_{k}", kernel_shape=[k, k], pads=[k // 2] * 4,
                          strides=[1, 1]) for k in (5, 9, 13)]  # fmt: skip
            y = _yconv(g, g.op("Concat", [h, *pools], "/backbone/dark5/spp/Concat", axis=1), 2 * w(cout), w(cout), 1,
                       "/backbone/dark5/spp/conv2", act)  # fmt: skip
        y = _csp(g, y, w(cout), w(cout), n, i < 3, f"/backbone/dark{i + 2}/csp", act)
        feats.append(y)
    x2, x1, x0 = feats[1:]
    n3 = round(3 * depth)
    fpn0 = _yconv(g, x0, w(1024), w(512), 1, "/neck/lateral_conv0", act)
    f0 = _csp(g, g.op("Concat", [_up(g, fpn0, "/neck/up0"), x1], "/neck/Concat_0", axis=1), w(1024), w(512), n3, False,
              "/neck/C3_p4", act)  # fmt: skip
    fpn1 = _yconv(g, f0, w(512), w(256), 1, "/neck/reduce_conv1", act)
    p2 = _csp(g, g.op("Concat", [_up(g, fpn1, "/neck/up1"), x2], "/neck/Concat_1", axis=1), w(512), w(256), n3, False,
              "/neck/C3_p3", act)  # fmt: skip
    d2 = _yconv(g, p2, w(256), w(256), 3, "/neck/bu_conv2", act, s=2)
    p1 = _csp(g, g.op("Concat", [d2, fpn1], "/neck/Concat_2", axis=1), w(512), w(512), n3, False, "/neck/C3_n3", act)
    d1 = _yconv(g, p1, w(512), w(512), 3, "/neck/bu_conv1", act, s=2)
    p0 = _csp(g, g.op("Concat", [d1, fpn0], "/neck/Concat_3", axis=1), w(1024), w(1024), n3, False, "/neck/C3_n4", act)
    for i, (feat, c, hw) in enumerate(((p2, w(256), 80), (p1, w(512), 40), (p0, w(1024), 20))):
        d, hc = f"/head/{i}", w(256)
        stem = _yconv(g, feat, c, hc, 1, f"{d}/stem", act)
        cls = _yconv(g, _yconv(g, stem, hc, hc, 3, f"{d}/cls_convs.0", act), hc, hc, 3, f"{d}/cls_convs.1", act)
        reg = _yconv(g, _yconv(g, stem, hc, hc, 3, f"{d}/reg_convs.0", act), hc, hc, 3, f"{d}/reg_convs.1", act)
        box = conv(g, reg, hc, 4, 1, f"{d}/reg_preds", pad=0)
        obj = g.op("Sigmoid", [conv(g, reg, hc, 1, 1, f"{d}/obj_preds", pad=0)], f"{d}/obj/Sigmoid")
        cls = g.op("Sigmoid", [conv(g, cls, hc, 80, 1, f"{d}/cls_preds", pad=0)], f"{d}/cls/Sigmoid")
        g.output(g.op("Concat", [box, obj, cls], f"{d}/Concat", axis=1), f"output{i}", TensorProto.FLOAT, [1, 85, hw, hw])
    kind = {"silu": "SiLU as Sigmoid*Mul", "lrelu": "LeakyReLU(0.1)", "relu": "ReLU"}[act]
    return g.model(f"YOLOX (depth {depth}, width {width}) at 640x640, {kind}, BatchNorm folded, "
                   "per level box/objectness/classes concatenated, no decoding, weightless.")


def _halves(g: GraphBuilder, x: str, c: int, path: str) -> list[str]:
    """``x`` split into two ``c``-channel halves."""
    return list(g.op_multi("Split", [x, g.i64([c, c])], path, 2, axis=1))


def _bottleneck(g: GraphBuilder, x: str, c: int, hidden: int, shortcut: bool, path: str) -> str:
    """ultralytics Bottleneck: 3x3 conv to ``hidden``, 3x3 conv back, the input added."""
    mm = _mm()
    y = mm.y_conv(g, mm.y_conv(g, x, c, hidden, 3, f"{path}/cv1"), hidden, c, 3, f"{path}/cv2")
    return g.op("Add", [x, y], f"{path}/Add") if shortcut else y


def _c3k2(g: GraphBuilder, x: str, c1: int, c2: int, n: int, c3k: bool, e: float, path: str, shortcut: bool = True) -> str:
    """YOLO11's C3k2: C2f whose blocks are Bottlenecks of half width, or C3k (a C3 of two
    full-width Bottlenecks) when ``c3k``."""
    mm = _mm()
    c = int(c2 * e)
    ys = _halves(g, mm.y_conv(g, x, c1, 2 * c, 1, f"{path}/cv1"), c, f"{path}/Split")
    for i in range(n):
        b = f"{path}/m.{i}"
        if c3k:
            h = c // 2
            a = mm.y_conv(g, ys[-1], c, h, 1, f"{b}/cv1")
            for j in range(2):
                a = _bottleneck(g, a, h, h, shortcut, f"{b}/m.{j}")
            cat = g.op("Concat", [a, mm.y_conv(g, ys[-1], c, h, 1, f"{b}/cv2")], f"{b}/Concat", axis=1)
            ys.append(mm.y_conv(g, cat, 2 * h, c, 1, f"{b}/cv3"))
        else:
            ys.append(_bottleneck(g, ys[-1], c, c // 2, shortcut, b))
    return mm.y_conv(g, g.op("Concat", ys, f"{path}/Concat", axis=1), (2 + n) * c, c2, 1, f"{path}/cv2")


def _c2psa(g: GraphBuilder, x: str, c1: int, path: str) -> str:
    """YOLO11's C2PSA with one PSABlock: half the channels through multi-head self-attention over
    the feature map's positions (heads of 64 channels, keys half as wide) plus a depthwise 3x3
    positional term, then a 1x1 feed-forward, each with its residual."""
    mm = _mm()
    c, heads = c1 // 2, c1 // 2 // 64
    hd, kd = c // heads, c // heads // 2
    a, b = _halves(g, mm.y_conv(g, x, c1, 2 * c, 1, f"{path}/cv1"), c, f"{path}/Split")
    qkv = mm.conv(g, b, c, c + 2 * kd * heads, 1, f"{path}/m.0/attn/qkv", pad=0)
    qkv = g.op("Reshape", [qkv, g.i64([1, heads, 2 * kd + hd, -1])], f"{path}/m.0/attn/Reshape")
    q, k, v = g.op_multi("Split", [qkv, g.i64([kd, kd, hd])], f"{path}/m.0/attn/Split", 3, axis=2)
    qt = g.op("Transpose", [q], f"{path}/m.0/attn/Transpose", perm=[0, 1, 3, 2])
    att = g.op("Mul", [g.op("MatMul", [qt, k], f"{path}/m.0/attn/MatMul"), g.f32(kd**-0.5)], f"{path}/m.0/attn/Mul")
    att = g.op("Softmax", [att], f"{path}/m.0/attn/Softmax", axis=-1)
    at = g.op("Transpose", [att], f"{path}/m.0/attn/Transpose_1", perm=[0, 1, 3, 2])
    shape = g.op("Shape", [b], f"{path}/m.0/attn/Shape")
    o = g.op("Reshape", [g.op("MatMul", [v, at], f"{path}/m.0/attn/MatMul_1"), shape], f"{path}/m.0/attn/Reshape_1")
    pe = mm.conv(g, g.op("Reshape", [v, shape], f"{path}/m.0/attn/Reshape_2"), c, c, 3, f"{path}/m.0/attn/pe",
                 groups=c)  # fmt: skip
    o = mm.conv(g, g.op("Add", [o, pe], f"{path}/m.0/attn/Add"), c, c, 1, f"{path}/m.0/attn/proj", pad=0)
    y = g.op("Add", [b, o], f"{path}/m.0/Add")
    f = mm.conv(g, mm.y_conv(g, y, c, 2 * c, 1, f"{path}/m.0/ffn.0"), 2 * c, c, 1, f"{path}/m.0/ffn.1", pad=0)
    y = g.op("Add", [y, f], f"{path}/m.0/Add_1")
    return mm.y_conv(g, g.op("Concat", [a, y], f"{path}/Concat", axis=1), 2 * c, c1, 1, f"{path}/cv2")


def build_yolo11_rknn(name: str, width: float, max_channels: int, c3k: bool) -> onnx.ModelProto:
    """ultralytics YOLO11 (``yolo11.yaml``, depth 0.50; n/s/m widths 0.25/0.50/1.00, m with 512
    channels at most and C3k blocks everywhere) at 640x640 as airockchip's ``ultralytics_yolo11``
    exports it for RKNN, like :func:`build_yolov8_rknn`: per level the box branch's 64 channels,
    the class branch (YOLO11's: depthwise 3x3 then 1x1, twice) through a Sigmoid and its clipped
    sum; nine outputs."""
    mm = _mm()
    g = mm.GraphBuilder(name)

    def ch(c: int) -> int:
        return _div8(min(c, max_channels) * width)

    x = g.input("images", TensorProto.FLOAT, [1, 3, 640, 640])
    y = mm.y_conv(g, mm.y_conv(g, x, 3, ch(64), 3, "/model.0", s=2), ch(64), ch(128), 3, "/model.1", s=2)
    p2 = _c3k2(g, y, ch(128), ch(256), 1, c3k, 0.25, "/model.2")
    p3 = _c3k2(g, mm.y_conv(g, p2, ch(256), ch(256), 3, "/model.3", s=2), ch(256), ch(512), 1, c3k, 0.25, "/model.4")
    p4 = _c3k2(g, mm.y_conv(g, p3, ch(512), ch(512), 3, "/model.5", s=2), ch(512), ch(512), 1, True, 0.5, "/model.6")
    y = _c3k2(g, mm.y_conv(g, p4, ch(512), ch(1024), 3, "/model.7", s=2), ch(1024), ch(1024), 1, True, 0.5, "/model.8")
    p5 = _c2psa(g, mm.sppf(g, y, ch(1024), ch(1024), 5, "/model.9"), ch(1024), "/model.10")
    cat = g.op("Concat", [mm.upsample2x(g, p5, "/model.11"), p4], "/model.12/Concat", axis=1)
    h13 = _c3k2(g, cat, ch(1024) + ch(512), ch(512), 1, c3k, 0.5, "/model.13")
    cat = g.op("Concat", [mm.upsample2x(g, h13, "/model.14"), p3], "/model.15/Concat", axis=1)
    h16 = _c3k2(g, cat, ch(512) + ch(512), ch(256), 1, c3k, 0.5, "/model.16")
    cat = g.op("Concat", [mm.y_conv(g, h16, ch(256), ch(256), 3, "/model.17", s=2), h13], "/model.18/Concat", axis=1)
    h19 = _c3k2(g, cat, ch(256) + ch(512), ch(512), 1, c3k, 0.5, "/model.19")
    cat = g.op("Concat", [mm.y_conv(g, h19, ch(512), ch(512), 3, "/model.20", s=2), p5], "/model.21/Concat", axis=1)
    h22 = _c3k2(g, cat, ch(512) + ch(1024), ch(1024), 1, True, 0.5, "/model.22")
    levels = ((h16, ch(256), 80), (h19, ch(512), 40), (h22, ch(1024), 20))
    c2, c3 = max(16, levels[0][1] // 4, 64), max(levels[0][1], 80)
    for i, (feat, c, hw) in enumerate(levels):
        d = "/model.23"
        b = mm.y_conv(g, mm.y_conv(g, feat, c, c2, 3, f"{d}/cv2.{i}.0"), c2, c2, 3, f"{d}/cv2.{i}.1")
        g.output(mm.conv(g, b, c2, 64, 1, f"{d}/cv2.{i}.2", pad=0), f"box{i}", TensorProto.FLOAT, [1, 64, hw, hw])
        k = feat
        for j, (cin, cout) in enumerate(((c, c3), (c3, c3))):
            k = mm.y_conv(g, mm.y_conv(g, k, cin, cin, 3, f"{d}/cv3.{i}.{j}.0", groups=cin), cin, cout, 1,
                          f"{d}/cv3.{i}.{j}.1")  # fmt: skip
        cls = g.op("Sigmoid", [mm.conv(g, k, c3, 80, 1, f"{d}/cv3.{i}.2", pad=0)], f"{d}/Sigmoid_{i}",
                   outputs=[f"cls{i}"])  # fmt: skip
        total = g.op("ReduceSum", [cls, g.i64([1])], f"{d}/ReduceSum_{i}", keepdims=1)
        g.output(cls, f"cls{i}", TensorProto.FLOAT, [1, 80, hw, hw])
        g.output(g.op("Clip", [total, g.f32(0.0), g.f32(1.0)], f"{d}/Clip_{i}"), f"score_sum{i}", TensorProto.FLOAT,
                 [1, 1, hw, hw])  # fmt: skip
    return g.model(f"YOLO11 (width {width}, max channels {max_channels}) at 640x640 as airockchip/ultralytics_yolo11 "
                   "exports it for RKNN (no DFL, no decoding), weightless.")


def _proto(g: GraphBuilder, x: str, c1: int, c_: int) -> str:
    """ultralytics Proto: 3x3 conv, a 2x2 stride-2 ConvTranspose, 3x3 conv, 1x1 conv to 32 masks
    (``c_``: the yaml's 256 protos scaled like any width)."""
    mm = _mm()
    y = mm.y_conv(g, x, c1, c_, 3, "/model.22/proto/cv1")
    w, b = g.weight("model.22.proto.upsample.weight", [c_, c_, 2, 2]), g.weight("model.22.proto.upsample.bias", [c_])
    y = g.op("ConvTranspose", [y, w, b], "/model.22/proto/upsample/ConvTranspose", kernel_shape=[2, 2], strides=[2, 2],
             pads=[0, 0, 0, 0], dilations=[1, 1], group=1)  # fmt: skip
    y = mm.y_conv(g, y, c_, c_, 3, "/model.22/proto/cv2")
    return mm.y_conv(g, y, c_, 32, 1, "/model.22/proto/cv3")


#: ultralytics' published GFLOPs of the YOLOv8 segment models (12.6 / 42.6 / 110.2 at 640). Not
#: in :data:`PUBLISHED_GMACS`, whose check (``count_macs``) leaves ConvTranspose out: hwsim counts
#: 6.00 / 20.04 / 52.27 GMACs, and thop, which ultralytics counts with, charges the Proto's 2x2
#: stride-2 ConvTranspose per output pixel, four times its MACs (+0.31 / 1.26 / 2.83 G): 6.31 /
#: 21.30 / 55.10, half the published figures within 0.2 % (tests/benchmarks/test_bench_rk3588_published.py).
SEG_GFLOPS = {"yolov8n_seg_rknn": 12.6, "yolov8s_seg_rknn": 42.6, "yolov8m_seg_rknn": 110.2}


#: Held out of every fit and not bundled: architectures checked against rknn_model_zoo's
#: figures by ``benchmarks/bench_rk3588_published.py`` (ultralytics yolov8.yaml scales; ``_rknn``:
#: not the bundled ``yolov8n``, whose head keeps the DFL and the box decoding).
HELD_OUT: dict[str, Callable[[], onnx.ModelProto]] = {
    "yolov8n_rknn": lambda: build_yolov8_rknn("yolov8n_rknn", 0.33, 0.25, 1024),
    "yolov8s_rknn": lambda: build_yolov8_rknn("yolov8s_rknn", 0.33, 0.50, 1024),
    "yolov8m_rknn": lambda: build_yolov8_rknn("yolov8m_rknn", 0.67, 0.75, 768),
    "yolov5n_seg": lambda: build_yolov5("yolov5n_seg", 0.33, 0.25, seg=True),
    "yolov5s_seg": lambda: build_yolov5("yolov5s_seg", 0.33, 0.50, seg=True),
    "yolov5m_seg": lambda: build_yolov5("yolov5m_seg", 0.67, 0.75, seg=True),
    "yolo11n_rknn": lambda: build_yolo11_rknn("yolo11n_rknn", 0.25, 1024, False),
    "yolo11s_rknn": lambda: build_yolo11_rknn("yolo11s_rknn", 0.50, 1024, False),
    "yolo11m_rknn": lambda: build_yolo11_rknn("yolo11m_rknn", 1.00, 512, True),
    "yolox_s": lambda: build_yolox("yolox_s", 0.33, 0.50),
    "yolox_m": lambda: build_yolox("yolox_m", 0.67, 0.75),
    "yolox_s_leaky": lambda: build_yolox("yolox_s_leaky", 0.33, 0.50, act="lrelu"),
    "yolov8n_seg_rknn": lambda: build_yolov8_rknn("yolov8n_seg_rknn", 0.33, 0.25, 1024, seg=True),
    "yolov8s_seg_rknn": lambda: build_yolov8_rknn("yolov8s_seg_rknn", 0.33, 0.50, 1024, seg=True),
    "yolov8m_seg_rknn": lambda: build_yolov8_rknn("yolov8m_seg_rknn", 0.67, 0.75, 768, seg=True),
}


def model_graph(name: str) -> ModelGraph | None:
    """The graph of a bundled model (``examples/models/NAME.onnx``), else of one :data:`HELD_OUT`
    builds, else None: how the published-figure benchmarks find a model by name."""
    from graph_ir import load_onnx
    from graph_ir.onnx_import import from_model_proto

    path = Path(__file__).resolve().parent / "models" / f"{name}.onnx"
    if path.exists():
        return load_onnx(path)
    build = HELD_OUT.get(name)
    return None if build is None else from_model_proto(build(), name=name)


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet50_v2": build_resnet50_v2,
    "mobilenetv1": build_mobilenetv1,
    "yolov5n": lambda: build_yolov5("yolov5n", 0.33, 0.25),
    "yolov5s": lambda: build_yolov5("yolov5s", 0.33, 0.50),
    "yolov5s_relu": lambda: build_yolov5("yolov5s_relu", 0.33, 0.50, act="relu"),
    "yolov5m": lambda: build_yolov5("yolov5m", 0.67, 0.75),
}


def main() -> int:
    """``--macs``: print each model's MACs against :data:`PUBLISHED_GMACS`; exit 1 beyond 1%."""
    ok = True
    for name, build in {**MODELS, **HELD_OUT}.items():
        gmacs = sum(_mm().count_macs(build()).values()) / 1e9
        if name not in PUBLISHED_GMACS:  # see SEG_GFLOPS
            print(f"{name:14s} {gmacs:7.3f} GMAC  without ConvTranspose (see SEG_GFLOPS)")
            continue
        err = gmacs / PUBLISHED_GMACS[name] - 1
        ok &= abs(err) <= 0.01
        print(f"{name:14s} {gmacs:7.3f} GMAC  published {PUBLISHED_GMACS[name]:6.3f}  {err:+.2%}")
    return 0 if ok else 1


if __name__ == "__main__" and "--macs" in sys.argv:
    raise SystemExit(main())
