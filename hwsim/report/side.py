"""Work in a forked process beside this one: a large run's figures are drawn while its
``trace.json`` is written (:func:`hwsim.report.files.write_reports`).

A fork shares the finished run without copying or pickling it. It is used only where it is
safe: a POSIX system, and this process running one thread (a fork copies no other thread, so
a lock another thread held would stay locked in the child).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Protocol

__all__ = ["Join", "can_fork", "in_side_process"]

#: The most bytes of the child's error text passed back.
_MESSAGE_BYTES = 4_000


class Join(Protocol):
    """Waits for the child (once; a later call does nothing)."""

    def __call__(self, kill: bool = False) -> None: ...


def can_fork() -> bool:
    """A fork is available and safe here: POSIX, and no other thread is running."""
    return hasattr(os, "fork") and threading.active_count() == 1


def in_side_process(work: Callable[[], None]) -> Join:
    """Start ``work()`` in a forked child; return ``join``, which waits for it.

    ``join()`` raises RuntimeError with the child's error when ``work`` failed there;
    ``join(kill=True)`` stops the child first and raises nothing (the caller is failing already).
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 1
        try:
            os.close(read_end)
            work()
            code = 0
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            os.write(write_end, f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:_MESSAGE_BYTES])
        finally:
            os._exit(code)
    os.close(write_end)
    return _Child(pid, read_end)


class _Child:
    """A forked child and the read end of its error pipe; waited for once."""

    def __init__(self, pid: int, read_end: int) -> None:
        self.pid, self.read_end, self.done = pid, read_end, False

    def __call__(self, kill: bool = False) -> None:
        if self.done:
            return
        self.done = True
        if kill:
            os.kill(self.pid, signal.SIGKILL)
        with os.fdopen(self.read_end, "rb") as fh:
            message = fh.read().decode("utf-8", "replace")
        _, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0 and not kill:
            raise RuntimeError(f"the side process writing report files failed: {message or f'exit code {code}'}")
