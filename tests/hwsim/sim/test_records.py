"""The trace records, built from the engine's logs by :func:`build_trace`."""

from __future__ import annotations

from hwsim.sim.records import OpLog, OpPhase, TransferLog, build_trace
from scheduler.schedule import Transfer


def _ops(frames: int = 1) -> OpLog:
    return OpLog.empty(("a", "b"), ("Relu", "Conv"), ("cpu", "npu"), (0, 1), frames)


def _transfers(frames: int = 1) -> TransferLog:
    t = (Transfer("x", "ddr", "sram", 64, "a", ("b",)), Transfer("y", "ddr", "sram", 0, "a", ("b",)))
    return TransferLog.empty(t, frames)


def test_an_empty_run_has_no_records_and_takes_no_time():
    empty_ops = OpLog.empty((), (), (), (), 3)
    trace = build_trace(empty_ops, TransferLog.empty((), 3), [], {"dram": 1.0}, frames=3)
    assert (trace.makespan_ps, trace.ops, trace.transfers, trace.frames) == (0, (), (), 3)


def test_op_records_are_ordered_by_start_unit_core_frame_then_graph_order():
    log = _ops(frames=2)
    # instances: 0 = a/frame 0, 1 = b/frame 0, 2 = a/frame 1, 3 = b/frame 1
    log.start_ps[:] = [50, 10, 10, 10]
    log.end_ps[:] = [60, 30, 20, 40]
    log.used_cores[3] = (1, 0)
    log.tiles[3] = 4
    log.phases[3].append(OpPhase("compute", "0", 10, 20))
    trace = build_trace(log, TransferLog.empty((), 2), [], {}, frames=2)
    got = [(r.op, r.frame, r.start_ps) for r in trace.ops]
    assert got == [("a", 1, 10), ("b", 0, 10), ("b", 1, 10), ("a", 0, 50)]  # cpu < npu
    split = trace.ops[2]
    assert (split.cores, split.all_cores, split.tiles) == ((1, 0), (1, 0), 4)
    assert split.phases == (OpPhase("compute", "0", 10, 20),)
    assert trace.ops[1].all_cores == (1,)
    assert trace.makespan_ps == 60


def test_transfer_records_are_ordered_by_start_then_frame_and_name():
    log = _transfers(frames=2)
    log.start_ps[:] = [5, 5, 1, 9]
    log.end_ps[:] = [7, 6, 4, 99]
    log.queued_ps[:] = [0, 0, 0, 3]
    log.channel[:] = [0, 1, 0, 0]
    trace = build_trace(OpLog.empty((), (), (), (), 2), log, [(0, "dram", 0.5)], {"dram": 1.0}, frames=2)
    got = [(r.tensor, r.frame, r.start_ps, r.channel) for r in trace.transfers]
    assert got == [("x", 1, 1, 0), ("x", 0, 5, 0), ("y", 0, 5, 1), ("y", 1, 9, 0)]
    assert trace.makespan_ps == 99
    assert trace.bandwidth_samples == ((0, "dram", 0.5),)


def test_what_never_finished_is_named():
    ops, xfers = _ops(frames=2), _transfers()
    ops.end_ps[:] = [10, -1, 10, -1]
    xfers.end_ps[:] = [-1, 3]
    assert ops.unfinished() == ["b", "b"]
    assert xfers.unfinished() == ["x"]


def test_the_frame_settings_are_kept():
    trace = build_trace(_ops(), _transfers(), [], {}, 1, [0, 5], 1, "frame-major")
    assert (trace.frame_admit_ps, trace.in_flight, trace.frame_order) == ((0, 5), 1, "frame-major")
