"""Frame admission (``in_flight``) and the two ways a core mixes frames, each alone."""

from __future__ import annotations

import pytest

from hwsim.sim.frames import Admission, FrameMajor, Interleaved, dispatch_for

CPU = ("cpu", 0)


class TestAdmission:
    def test_without_in_flight_every_frame_is_admitted_at_once_and_none_later(self):
        adm = Admission(frames=3, in_flight=None, items=1)
        assert list(adm.initial()) == [0, 1, 2]
        assert adm.finished(0) is None
        assert adm.admissions() == ()

    def test_a_frame_is_admitted_when_the_one_in_flight_frames_earlier_completes(self):
        adm = Admission(frames=4, in_flight=2, items=2)
        assert list(adm.initial()) == [0, 1]
        for f in adm.initial():
            adm.admit(f, 0)
        assert adm.finished(1) is None
        assert adm.finished(1) == 3  # frame 1 completes first: frame 3 comes in
        adm.admit(3, 70)
        assert adm.finished(0) is None
        assert adm.finished(0) == 2
        adm.admit(2, 90)
        assert adm.admissions() == (0, 0, 90, 70)
        assert adm.last == 3

    def test_the_last_frames_admit_nothing(self):
        adm = Admission(frames=2, in_flight=1, items=1)
        assert adm.finished(0) == 1
        assert adm.finished(1) is None

    def test_a_window_wider_than_the_frames_admits_them_all(self):
        assert list(Admission(frames=2, in_flight=5, items=3).initial()) == [0, 1]

    def test_frames_with_nothing_to_run_are_all_admitted(self):
        adm = Admission(frames=3, in_flight=1, items=0)
        assert list(adm.initial()) == [0, 1, 2]
        assert adm.admissions() == (-1, -1, -1)  # admit() notes the times


class TestFrameMajor:
    def test_a_core_runs_its_ops_frame_after_frame(self):
        pending = [0, 0, 0, 0]  # two ops, two frames, every input there
        d = FrameMajor({CPU: [1, 0]}, n_ops=2, frames=2, pending=pending)
        order = []
        while (inst := d.ready(CPU)) >= 0:
            order.append(inst)
            d.took(CPU, inst)
        assert order == [1, 0, 3, 2]  # op 1 then op 0 (the core's order), frame 0 then frame 1

    def test_a_core_waits_for_its_next_op_even_when_a_later_frame_is_ready(self):
        pending = [0, 1, 0, 0]
        d = FrameMajor({CPU: [0, 1]}, n_ops=2, frames=2, pending=pending)
        d.took(CPU, d.ready(CPU))
        assert d.ready(CPU) == -1
        pending[1] = 0  # its input arrives
        assert d.ready(CPU) == 1

    def test_a_core_without_ops_has_nothing_ready(self):
        assert FrameMajor({CPU: []}, n_ops=2, frames=3, pending=[0] * 6).ready(CPU) == -1


class TestInterleaved:
    @staticmethod
    def _dispatch(pending, admitted=(0, 1)):
        adm = Admission(frames=2, in_flight=1, items=2)
        for f in admitted:
            adm.admit(f, 0)
        return Interleaved({CPU: [0, 1]}, n_ops=2, frames=2, pending=pending, admission=adm)

    def test_the_oldest_frame_goes_first(self):
        d = self._dispatch([0, 0, 0, 0])
        assert d.ready(CPU) == 0
        d.took(CPU, 0)
        assert d.ready(CPU) == 1

    def test_a_later_frame_runs_while_the_older_one_waits(self):
        pending = [0, 1, 0, 0]
        d = self._dispatch(pending)
        d.took(CPU, d.ready(CPU))
        assert d.ready(CPU) == 2  # frame 1's op 0
        d.took(CPU, 2)
        assert d.ready(CPU) == 3  # frame 1's op 1 is ready; frame 0's still waits
        pending[1] = 0
        assert d.ready(CPU) == 1  # the older frame again first

    def test_an_op_of_a_frame_not_admitted_never_runs(self):
        d = self._dispatch([0, 1, 0, 0], admitted=(0,))
        d.took(CPU, d.ready(CPU))
        assert d.ready(CPU) == -1  # frame 1's op 0 is ready but frame 1 is not admitted


class TestDispatchFor:
    def test_the_frame_order_names_the_dispatch(self):
        adm = Admission(2, None, 1)
        assert isinstance(dispatch_for("interleaved", {CPU: [0]}, 1, 2, [0, 0], adm), Interleaved)
        assert isinstance(dispatch_for("frame-major", {CPU: [0]}, 1, 2, [0, 0], adm), FrameMajor)

    def test_one_frame_is_frame_major(self):
        adm = Admission(1, None, 1)
        assert isinstance(dispatch_for("interleaved", {CPU: [0]}, 1, 1, [0], adm), FrameMajor)

    def test_an_unknown_order_is_an_error(self):
        with pytest.raises(ValueError, match="frame_order must be one of interleaved, frame-major"):
            dispatch_for("round-robin", {CPU: [0]}, 1, 2, [0, 0], Admission(2, None, 1))
