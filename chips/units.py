"""Units of time, bandwidth and energy: the one home of every conversion constant.

Spec fields carry their unit in their name (``bandwidth_gbps``, ``latency_ns``, ``active_w``,
``energy_pj_per_byte``); the engine counts integer picoseconds. Everything that converts between
them reads these constants.

>>> 2 * PS_PER_NS, PS_PER_MS, NS_PER_MS
(2000, 1000000000, 1000000)
>>> 10.0 / GBPS_PER_BYTES_PER_PS  # 10 GB/s in bytes per picosecond
0.01
"""

from __future__ import annotations

__all__ = [
    "GBPS_PER_BYTES_PER_PS", "NS_PER_MS", "PJ_PER_MJ", "PJ_PER_W_NS", "PS_PER_MS", "PS_PER_NS", "PS_PER_S",
]

#: Picoseconds per nanosecond: the engine's integer clock ticks in picoseconds.
PS_PER_NS = 1000
#: Nanoseconds per millisecond.
NS_PER_MS = 1_000_000
#: Picoseconds per millisecond.
PS_PER_MS = PS_PER_NS * NS_PER_MS
#: Picoseconds per second (thermal time constants are in seconds).
PS_PER_S = PS_PER_MS * 1000
#: 1 byte/ps = 1e12 B/s = 1000 GB/s.
GBPS_PER_BYTES_PER_PS = 1000.0
#: Picojoules in one watt for one nanosecond (W x ns = 1e-9 J = 1e3 pJ).
PJ_PER_W_NS = 1e3
#: Picojoules per millijoule.
PJ_PER_MJ = 1e9
