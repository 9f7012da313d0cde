"""ONNX shape inference that cannot take the process down.

onnx 1.21+ wheels for Linux are built with libstdc++ assertions, and Slice's shape inference
clamps into ``[0, dim - 1]`` without checking that a dim is not negative: a Slice over a
negative dim aborts the process with SIGABRT, no exception to catch (onnx/onnx#8481, open for
onnx 1.23). A negative dim comes from an op before it whose geometry does not fit (a Conv
kernel larger than its padded input gives ``-13``), which onnx's checker and shape inference
let through. So a model that holds a Slice is inferred in a forked child process; a child that
dies is reported as an :class:`InferenceAborted` (an ``InferenceError``) naming the op that made
a dim negative. A model without Slice, or a platform without ``fork``, is inferred in process.
"""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Callable, Iterator

import onnx
from onnx import shape_inference

__all__ = ["ABORTING_OPS", "InferenceAborted", "infer_guarded", "infer_strict_shapes", "negative_dim", "refuse_aborting"]

#: Op types whose shape inference can abort the process on a negative input dim.
ABORTING_OPS = frozenset({"Slice"})

Infer = Callable[[onnx.ModelProto], onnx.ModelProto]


class InferenceAborted(shape_inference.InferenceError):
    """onnx's shape inference killed the child it ran in (the message names the op that made a
    dim negative)."""


def _nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Every node of ``graph`` and of the bodies its nodes hold, at any depth."""
    from graph_ir.rewrites.edit import bodies

    for node in graph.node:
        yield node
        for body in bodies(node):
            yield from _nodes(body)


def infer_guarded(model: onnx.ModelProto, infer: Infer) -> onnx.ModelProto:
    """``infer(model)``, in a forked child when ``model`` holds one of :data:`ABORTING_OPS`.

    Raises
    ------
    InferenceAborted
        The child died (the message names the op that made a dim negative).
    onnx.shape_inference.InferenceError
        When ``infer`` raised it in the child.
    onnx.checker.ValidationError, RuntimeError
        When ``infer`` raised one in the child (the same message).
    """
    if not hasattr(os, "fork") or not any(n.op_type in ABORTING_OPS for n in _nodes(model.graph)):
        return infer(model)
    ok, payload = _in_child(lambda: infer(model).SerializeToString())
    if ok:
        return onnx.load_from_string(payload)
    raise _error(payload, model)


def infer_strict_shapes(model: onnx.ModelProto, check_type: bool) -> onnx.ModelProto:
    """onnx's strict shape inference with data propagation (shapes computed by Shape, Gather,
    Concat... become static), and without it where it alone fails: onnx's data propagation
    keeps one table across sibling subgraphs, so two Loop bodies that reuse a local name
    (valid ONNX, as an exporter writes two copies of one loop, or as unrolling a nested Loop
    copies its body) raise "Data for input 0 already exists". A model wrong without data
    propagation too raises that error."""
    try:
        return shape_inference.infer_shapes(model, check_type=check_type, strict_mode=True, data_prop=True)
    except shape_inference.InferenceError:
        try:
            return shape_inference.infer_shapes(model, check_type=check_type, strict_mode=True, data_prop=False)
        except shape_inference.InferenceError:
            pass
        raise


def refuse_aborting(model: onnx.ModelProto) -> None:
    """Raise where onnx's own shape inference would abort on ``model`` (onnxruntime's quantizer
    runs it in process): a model without :data:`ABORTING_OPS` returns at once, another is
    inferred leniently in a child.

    Raises
    ------
    InferenceAborted
        The child died; the message names the op that made a dim negative.
    """
    try:
        infer_guarded(model, lambda m: shape_inference.infer_shapes(m, data_prop=True))
    except InferenceAborted:
        raise
    except (shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError):
        pass  # what onnx's lenient inference refuses, the caller's own reader reports


_ERRORS: dict[str, type[Exception]] = {
    "InferenceError": shape_inference.InferenceError,
    "ValidationError": onnx.checker.ValidationError,
}


def _error(payload: bytes, model: onnx.ModelProto) -> Exception:
    """The exception for what the child sent: its own error, or the signal that killed it."""
    kind, _, message = payload.decode("utf-8", "replace").partition("\n")
    if kind.startswith("signal "):
        name = signal.Signals(int(kind.split()[1])).name
        where = negative_dim(model) or "a dim made negative before a Slice"
        return InferenceAborted(
            f"onnx's shape inference aborted ({name}; onnx/onnx#8481): {where}"
        )
    return _ERRORS.get(kind, RuntimeError)(message)


def negative_dim(model: onnx.ModelProto) -> str | None:
    """Where the first negative dim comes from, by a lenient inference (one that goes past what
    it cannot infer) with every Slice made an Identity, in a child too; None when none is found."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for node in _nodes(probe.graph):
        if node.op_type in ABORTING_OPS:
            node.op_type = "Identity"
            del node.input[1:]
            del node.attribute[:]
    try:
        ok, payload = _in_child(lambda: shape_inference.infer_shapes(probe, data_prop=True).SerializeToString())
    except OSError:
        return None
    if not ok:
        return None
    shapes = {v.name: v.type.tensor_type.shape for v in onnx.load_from_string(payload).graph.value_info}
    for node in probe.graph.node:
        for out in node.output:
            dims = [d.dim_value if d.HasField("dim_value") else "?" for d in shapes[out].dim] if out in shapes else []
            if any(isinstance(d, int) and d < 0 for d in dims):
                return f"node {node.name or out!r} ({node.op_type}) makes {out!r} of shape {dims}"
    return None


def _in_child(work: Callable[[], bytes]) -> tuple[bool, bytes]:
    """Run ``work`` in a forked child: (True, its bytes), or (False, ``"KIND\\nmessage"`` for the
    exception it raised, ``"signal N"`` for the signal that killed it)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, and prints nothing (an abort's message included)
        try:
            os.close(read_end)
            faulthandler.disable()  # pytest's would print the abort's Python stack
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            try:
                data = b"\x01" + work()
            except Exception as exc:  # noqa: BLE001 (sent to the parent, which raises it)
                data = b"\x00" + f"{type(exc).__name__}\n{exc}".encode("utf-8", "replace")
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return False, f"signal {os.WTERMSIG(status)}".encode()
    if not data:
        return False, b"RuntimeError\nshape inference's child process ended without an answer"
    return data[:1] == b"\x01", data[1:]
