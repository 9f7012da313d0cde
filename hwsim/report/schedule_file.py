"""Schedule files: a run's schedule kept as versioned JSON, to replay or compare.

``hwsim run --export-schedule FILE.json`` writes one (every report folder holds one too,
``schedule.json``); ``hwsim run --schedule FILE.json`` replays it (:func:`to_schedule`), and
``hwsim diff`` compares two. The format is the frozen pydantic model :class:`ScheduleFile`
(``hwsim schema --schedule`` prints its JSON Schema); times are simulated nanoseconds.

A file of an older :data:`SCHEMA_VERSION` is migrated on load, one version at a time, by the
functions of :data:`MIGRATIONS`; a newer one is refused.

Version 2 records each op's mapping signature (:class:`cost_models.mapping.OpMapping`, the knobs
set: unit pin, cores, dataflow, layout, tile, forced fusion); a replay applies it
(:func:`mapping_of`), so a mapped run's file reproduces its latency exactly.

>>> SCHEMA_VERSION, sorted(MIGRATIONS)
(2, [0, 1])
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, PositiveInt, ValidationError

from chips.schema import Chip
from chips.units import PS_PER_NS
from cost_models.mapping import OpMapping
from cost_models.table import CostTable
from graph_ir.files import field_path
from graph_ir.ir import ModelGraph
from hwsim.pipeline import RunResult
from hwsim.report.provenance import hwsim_version
from hwsim.report.replay import OriginalRun
from scheduler import Schedule
from scheduler.schedule import Placement, implied_transfers

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ScheduleFile",
    "ScheduleFileError",
    "ScheduledOp",
    "load_schedule_file",
    "mapping_of",
    "migrate",
    "schedule_file",
    "schedule_file_chunks",
    "schedule_file_json",
    "to_schedule",
]

#: The version :class:`ScheduleFile` writes.
SCHEMA_VERSION = 2


class ScheduleFileError(ValueError):
    """A schedule file that cannot be read or replayed here (bad input: one line, exit 2)."""


class ScheduledOp(BaseModel, frozen=True, extra="forbid"):
    """One op of a schedule: where it ran, in which order, and when (simulated ns, frame 0)."""

    op: str
    op_type: str
    unit: str
    core: int
    #: Every core it occupied (``core`` first; more than one: split by the engine).
    cores: tuple[int, ...]
    #: Its position in its core's order (0 first).
    order: int
    #: Cores the schedule asked to split it over (None: the engine decides).
    split: PositiveInt | None = None
    #: The head of the fusion group it ran in (None: not fused).
    fusion_group: str | None = None
    dtype: str
    start_ns: float
    finish_ns: float
    #: The scheduler's own estimate (ns), kept so that a replay reports the same estimate.
    est_start_ns: float
    est_finish_ns: float
    dram_bytes: int
    on_critical_path: bool = False
    reason: str = ""
    #: The op's mapping signature, the knobs set only (:meth:`cost_models.mapping.OpMapping.as_dict`;
    #: empty: a plain run's op).
    mapping: dict[str, str | int | bool] = {}


class ScheduleFile(BaseModel, frozen=True, extra="forbid"):
    """A whole schedule with its provenance (see the module docstring)."""

    schema_version: int = SCHEMA_VERSION
    hwsim_version: str
    chip: str
    chip_sha256: str
    model: str
    model_sha256: str
    precision: str
    #: The schedule's name (the policy or candidate that produced it).
    policy: str
    est_makespan_ns: float
    latency_ns: float
    #: How the run that wrote the file chose the schedule, for a replay's summary.json
    #: (:mod:`hwsim.report.replay`; None: not recorded, an older file or an API run).
    original: OriginalRun | None = None
    #: Last, so that :func:`schedule_file_chunks` can stream it.
    ops: tuple[ScheduledOp, ...]


def _with_op_field(data: dict[str, Any], key: str, default: Callable[[dict[str, Any]], Any]) -> list[Any] | Any:
    """``data``'s ops, each op that lacks ``key`` given ``default(op)``; ops that are not a list of
    objects are left as they are, for validation to name."""
    ops = data.get("ops", [])
    if not isinstance(ops, list):
        return ops
    return [{**op, key: op.get(key, default(op))} if isinstance(op, dict) else op for op in ops]


def _v0_to_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (pre-release): no ``cores`` per op (an op ran on its ``core``)."""
    return {**data, "ops": _with_op_field(data, "cores", lambda op: [op.get("core", 0)]), "schema_version": 1}


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1: no mapping signature per op (every op ran as a plain run maps it)."""
    return {**data, "ops": _with_op_field(data, "mapping", lambda op: {}), "schema_version": 2}


#: Migrations: version -> the function that turns a file of that version into the next.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _v0_to_v1, 1: _v1_to_v2}


def migrate(data: dict[str, Any], source: str = "") -> dict[str, Any]:
    """``data`` (a parsed file; no ``schema_version``: version 0) brought to :data:`SCHEMA_VERSION`.

    Raises
    ------
    ScheduleFileError
        A version newer than this hwsim writes, or one no migration starts from.
    """
    where = f"{source}: " if source else ""
    version = data.get("schema_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ScheduleFileError(f"{where}schema_version must be a whole number, got {version!r}")
    if version > SCHEMA_VERSION:
        raise ScheduleFileError(
            f"{where}schedule file version {version} is newer than this hwsim reads ({SCHEMA_VERSION}); upgrade hwsim"
        )
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise ScheduleFileError(f"{where}no migration from schedule file version {version}")
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    return data


def load_schedule_file(path: str | Path) -> ScheduleFile:
    """Read, migrate and validate a schedule file.

    Raises
    ------
    ScheduleFileError
        A file that is missing, not JSON, of a newer version or not a schedule file.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ScheduleFileError(f"{path}: cannot read a schedule file: {exc}") from None
    if not isinstance(data, dict):
        raise ScheduleFileError(f"{path}: a schedule file is a JSON object, got {type(data).__name__}")
    data = migrate(data, str(path))
    try:
        return ScheduleFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ScheduleFileError(f"{path}: {field_path(err['loc'])}: {err['msg']}") from None


def _fusion_groups(result: RunResult) -> dict[str, str]:
    head: dict[str, str] = {}
    for pair in result.fused:
        h = head.get(pair.producer, pair.producer)
        head[pair.producer] = h
        head[pair.consumer] = h
    return head


def schedule_file(
    result: RunResult, chip_sha256: str, model_sha256: str, original: OriginalRun | None = None
) -> ScheduleFile:
    """The schedule of a finished run as a :class:`ScheduleFile` (times of frame 0); ``original``:
    how the run chose it (:func:`hwsim.report.replay.original_run`)."""
    sched = result.schedule
    recs = {r.op: r for r in result.trace.ops if r.frame == 0}
    order = {op: i for ops in sched.core_order.values() for i, op in enumerate(ops)}
    groups = _fusion_groups(result)
    critical = set(result.analysis.critical_path)
    mapping = result.mapping or {}
    ops = []
    for name, p in sched.placements.items():
        r = recs[name]
        ops.append(ScheduledOp(
            op=name, op_type=r.op_type, unit=p.unit, core=p.core, cores=r.cores or (r.core,), order=order[name],
            split=p.cores, fusion_group=groups.get(name), dtype=result.table.costs[name][p.unit].dtype,
            start_ns=r.start_ps / PS_PER_NS, finish_ns=r.end_ps / PS_PER_NS, est_start_ns=p.est_start_ns,
            est_finish_ns=p.est_finish_ns, dram_bytes=r.dram_bytes, on_critical_path=name in critical,
            reason=p.reason, mapping=mapping[name].as_dict() if name in mapping else {},
        ))  # fmt: skip
    return ScheduleFile(
        hwsim_version=hwsim_version(), chip=result.chip.name, chip_sha256=chip_sha256, model=result.graph.name,
        model_sha256=model_sha256, precision=result.precision, policy=sched.policy,
        est_makespan_ns=sched.est_makespan_ns, latency_ns=result.trace.makespan_ps / PS_PER_NS, ops=tuple(ops),
        original=original,
    )  # fmt: skip


def schedule_file_json(sf: ScheduleFile) -> bytes:
    """The file's bytes: indented JSON, keys in the model's order, a final newline
    (``json.dumps(sf.model_dump(mode="json"), indent=1) + "\\n"``)."""
    return b"".join(schedule_file_chunks(sf))


def schedule_file_chunks(sf: ScheduleFile, ops_per_chunk: int = 2_000) -> Iterator[bytes]:
    """The bytes of :func:`schedule_file_json` in chunks of ``ops_per_chunk`` ops, so that a
    100,000-op schedule streams to its file without its whole dump and text in memory.

    >>> from hwsim.pipeline import run
    >>> sf = schedule_file(run("rk3588", "examples/models/yolov8n.onnx"), "", "")
    >>> b"".join(schedule_file_chunks(sf, 7)) == (json.dumps(sf.model_dump(mode="json"), indent=1) + "\\n").encode()
    True
    """
    head = json.dumps(sf.model_dump(mode="json", exclude={"ops"}), indent=1)
    if not sf.ops:  # "ops" is the model's last field
        yield (head[:-2] + ',\n "ops": []\n}\n').encode("utf-8")
        return
    yield (head[:-2] + ',\n "ops": [').encode("utf-8")
    for i in range(0, len(sf.ops), ops_per_chunk):
        ops = (_op_json(o) for o in sf.ops[i : i + ops_per_chunk])
        yield (("," if i else "") + ",".join("\n  " + o for o in ops)).encode("utf-8")
    yield b"\n ]\n}\n"


_encode_str: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


def _float_text(x: float) -> str:
    """``x`` as :mod:`json` writes it (``NaN`` and ``Infinity`` as it does)."""
    if math.isfinite(x):
        return float.__repr__(x)
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def indented_json(value: Any, level: int = 0) -> str:
    r"""``json.dumps(value, indent=1)`` for plain JSON values (dicts with string keys, lists,
    strings, numbers, booleans, None), its lines after the first indented by ``level`` more
    spaces: the same text without the standard library's generator per value (a
    100,000-op ``schedule.json`` spent most of its time there).

    >>> v = {"a": [1, 2.5, None], "b": {}, "c": {"d": "\u00e9", "e": []}, "f": True, "g": float("inf")}
    >>> indented_json(v) == json.dumps(v, indent=1)
    True
    >>> indented_json(v, 2) == json.dumps(v, indent=1).replace("\n", "\n  ")
    True
    """
    if isinstance(value, str):
        return _encode_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float_text(value)
    inner = "\n" + " " * (level + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = (_encode_str(k) + ": " + indented_json(v, level + 1) for k, v in value.items())
        return "{" + inner + ("," + inner).join(items) + "\n" + " " * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[" + inner + ("," + inner).join(indented_json(v, level + 1) for v in value) + "\n" + " " * level + "]"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: Each op field's name as it opens its line in ``schedule.json`` (an op is a list item, level 2).
_OP_KEYS = tuple(f"\n   {_encode_str(name)}: " for name in ScheduledOp.model_fields)
_OP_NAMES = tuple(ScheduledOp.model_fields)


def _op_json(op: ScheduledOp) -> str:
    """``indented_json(op.model_dump(mode="json"), 2)``, read straight from the op's fields: a
    field's value is already its JSON value but for ``cores`` (a tuple, written as the list it
    dumps to), so the dump per op (a tenth of a 100,000-op run's ``schedule.json``) is skipped."""
    fields = op.__dict__
    text = _plain_op_json(fields)
    if text is not None:
        return text
    parts = []
    for key, name in zip(_OP_KEYS, _OP_NAMES):
        v = fields[name]
        t = type(v)
        if t is str:
            text = _encode_str(v)
        elif t is int:
            text = int.__repr__(v)
        elif t is float:
            text = _float_text(v)
        else:
            text = indented_json(v, 3)
        parts.append(key + text)
    return "{" + ",".join(parts) + "\n  }"


def _plain_op_json(f: Mapping[str, Any]) -> str | None:
    """:func:`_op_json` of an op whose fields are the usual ones (names and reason text, finite
    float times, no mapping) in one f-string; None for another (the general path writes it)."""
    times = (f["start_ns"], f["finish_ns"], f["est_start_ns"], f["est_finish_ns"])
    if f["mapping"] or not all(type(t) is float and math.isfinite(t) for t in times):
        return None
    core, order, nbytes, cores = f["core"], f["order"], f["dram_bytes"], f["cores"]
    split, group = f["split"], f["fusion_group"]
    if not (type(core) is int and type(order) is int and type(nbytes) is int and type(f["on_critical_path"]) is bool):
        return None
    if not (split is None or type(split) is int) or not (group is None or type(group) is str):
        return None
    if type(cores) is not tuple or not cores or not all(type(c) is int for c in cores):
        return None
    enc = _encode_str
    cores_text = ",\n    ".join(map(int.__repr__, cores))
    return (
        f'{{\n   "op": {enc(f["op"])},\n   "op_type": {enc(f["op_type"])},\n   "unit": {enc(f["unit"])},'
        f'\n   "core": {core},\n   "cores": [\n    {cores_text}\n   ],'
        f'\n   "order": {order},\n   "split": {"null" if split is None else split},'
        f'\n   "fusion_group": {"null" if group is None else enc(group)},\n   "dtype": {enc(f["dtype"])},'
        f'\n   "start_ns": {times[0]!r},\n   "finish_ns": {times[1]!r},\n   "est_start_ns": {times[2]!r},'
        f'\n   "est_finish_ns": {times[3]!r},\n   "dram_bytes": {nbytes},'
        f'\n   "on_critical_path": {"true" if f["on_critical_path"] else "false"},'
        f'\n   "reason": {enc(f["reason"])},\n   "mapping": {{}}\n  }}'
    )


def _check_model(sf: ScheduleFile, graph: ModelGraph, model_sha256: str, source: str) -> None:
    if sf.model_sha256 != model_sha256:
        raise ScheduleFileError(
            f"{source}: the schedule is for another model ({sf.model}, sha256 {sf.model_sha256[:12]}...; "
            f"this one's is {model_sha256[:12]}...)"
        )
    have, want = {o.op for o in sf.ops}, set(graph.order)
    if have != want:
        odd = sorted(want - have) or sorted(have - want)
        raise ScheduleFileError(
            f"{source}: the schedule is for another model: its ops differ from {graph.name}'s "
            f"({len(want - have)} missing, {len(have - want)} unknown, e.g. {odd[0]!r})"
        )


def to_schedule(
    sf: ScheduleFile, graph: ModelGraph, chip: Chip, table: CostTable, model_sha256: str, source: str = ""
) -> Schedule:
    """The :class:`scheduler.Schedule` of ``sf`` for ``graph`` on ``chip``: the same placements
    and per-core orders; the transfers follow from them on this chip.

    Raises
    ------
    ScheduleFileError
        A schedule for another model (sha256 or op names differ), or a placement on a unit or
        core this chip does not have.
    """
    source = source or "schedule"
    _check_model(sf, graph, model_sha256, source)
    units = {u.name: u.cores for u in chip.units}
    by_core: dict[tuple[str, int], list[tuple[int, str]]] = {(u, c): [] for u, n in units.items() for c in range(n)}
    placements: dict[str, Placement] = {}
    for o in sf.ops:
        if (o.unit, o.core) not in by_core:
            raise ScheduleFileError(f"{source}: op {o.op!r} is placed on {o.unit} core {o.core}, which {chip.name} lacks")
        if table.costs[o.op].get(o.unit) is None:
            raise ScheduleFileError(f"{source}: op {o.op!r} cannot run on {o.unit} of {chip.name}")
        _check_split(o, chip, source)
        placements[o.op] = Placement(o.op, o.unit, o.core, o.est_start_ns, o.est_finish_ns, o.reason, o.split)
        by_core[(o.unit, o.core)].append((o.order, o.op))
    core_order = {k: tuple(op for _, op in sorted(v)) for k, v in by_core.items()}
    _check_no_deadlock(graph, core_order, source)
    transfers = implied_transfers(graph, chip, table, {n: p.unit for n, p in placements.items()})
    return Schedule(sf.policy, placements, core_order, transfers, sf.est_makespan_ns)


def _check_no_deadlock(graph: ModelGraph, core_order: Mapping[tuple[str, int], tuple[str, ...]], source: str) -> None:
    """Refuse core orders that contradict the data dependencies (the engine would wait forever):
    the dependencies plus each core's order must have no cycle."""
    import networkx as nx

    g = nx.DiGraph(graph.g.edges)
    for (unit, core), ops in core_order.items():
        g.add_edges_from(pairwise(ops), where=f"{unit} core {core}")
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    path = " -> ".join(str(e[0]) for e in cycle[:4]) + (" -> ..." if len(cycle) > 4 else "")
    raise ScheduleFileError(f"{source}: the order on the cores contradicts the data flow and would deadlock ({path})")


def _check_split(o: ScheduledOp, chip: Chip, source: str) -> None:
    """A split the op's unit cannot make (more cores than it has, or an op type it does not split)."""
    unit = chip.unit(o.unit)
    if o.split is None or o.split == 1:
        return
    if o.split > unit.cores:
        raise ScheduleFileError(f"{source}: op {o.op!r}: split {o.split} over {o.unit}, which has {unit.cores} cores")
    if o.op_type not in unit.split_ops:
        raise ScheduleFileError(f"{source}: op {o.op!r}: {o.unit} does not split {o.op_type} ops")


def mapping_of(sf: ScheduleFile) -> dict[str, OpMapping]:
    """The mapping signature of each mapped op of ``sf`` (ops without one left out).

    Raises
    ------
    ScheduleFileError
        A knob this hwsim does not know, or a value of the wrong kind.
    """
    out: dict[str, OpMapping] = {}
    for o in sf.ops:
        if o.mapping:
            try:
                out[o.op] = OpMapping.from_dict(o.mapping)
            except ValueError as exc:
                raise ScheduleFileError(f"op {o.op!r}: {exc}") from None
    return out


def op_index(sf: ScheduleFile) -> Mapping[str, ScheduledOp]:
    """The ops of ``sf`` by name."""
    return {o.op: o for o in sf.ops}
