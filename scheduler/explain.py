"""Why each task went where: affinity, locality or a faster finish (one line per task)."""

from __future__ import annotations

from scheduler.problem import Problem, Solution

__all__ = ["explain"]


def _fmt(t: float) -> str:
    return f"{t:.6g}"


def explain(problem: Problem, sol: Solution, time_unit: str = "") -> list[str]:
    """A human-readable reason for each task's unit, judged against the final schedule.

    For each other unit able to run the task, its finish there is estimated with every other
    task left in place (inputs' arrival plus run time, queueing ignored).
    """
    has_aff = bool(problem.affinity.any())
    aff = problem.affinity.tolist() if has_aff else []
    ex, ps, pl = problem.exec_list, problem.pair_scale, problem.pair_lat
    out: list[str] = []
    sol_unit, finish = sol.unit, sol.finish_ns

    def alone(i: int, v: int) -> float:
        ready = 0.0
        for j, vol in problem.preds[i]:
            uj = sol_unit[j]
            t = finish[j] + (vol * ps[uj][v] + pl[uj][v] if vol and uj != v else 0.0)
            if t > ready:  # noqa: PLR1730 (a call to max costs here: once per task and unit)
                ready = t
        return ready + ex[i][v]

    for i in range(problem.n):
        u = sol.unit[i]
        name = problem.units[u]
        others = [v for v in problem.capable[i] if v != u]
        if not others:
            out.append(f"only {name} can run it")
            continue
        kind = problem.kinds[i] or "this task"
        if has_aff:
            row = aff[i]
            pref = min(problem.capable[i], key=lambda v: (row[v], v))
            if pref == u:
                out.append(f"affinity: {name} is the chip's preferred unit for {kind}")
                continue
        here = alone(i, u)
        there, rival = min([(alone(i, v), v) for v in others])
        saved = [
            (vol * ps[sol.unit[j]][rival] + pl[sol.unit[j]][rival], problem.tasks[j])
            for j, vol in problem.preds[i]
            if sol.unit[j] == u and vol
        ]
        if saved and max(saved)[0] > 0 and here <= there + max(saved)[0]:
            c, prod = max(saved)
            out.append(f"locality: stays on {name} with its producer {prod}, saving a {_fmt(c)}{time_unit} transfer")
        elif here <= there:
            out.append(f"faster finish: {name} finishes at {_fmt(here)}{time_unit}, {problem.units[rival]} at {_fmt(there)}{time_unit}")
        else:
            out.append(
                f"global: {problem.units[rival]} alone would finish it earlier ({_fmt(there)} vs {_fmt(here)}{time_unit}) "
                "but would delay other tasks"
            )
    return out
