"""The quickstart's output: timestamped text lines, and on a terminal a live progress bar.

The bar counts the plan's estimated seconds (plan.py), advanced by each finished unit's
estimate, so rich's remaining time, which divides what is left by the speed measured so far,
corrects the calibration as the run goes. Its fields: the phase, the step within it, the last
training reward. Lines print above the bar; without a terminal (tests, logs) only the lines do.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class QuickstartProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.started = time.time()
        self._live = self.console.is_terminal
        self._bar = Progress(
            TextColumn("[bold]{task.fields[phase]}[/bold] {task.fields[step]}"),
            BarColumn(),
            TextColumn("{task.fields[reward]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self._task = self._bar.add_task("quickstart", total=None, phase="calibrating", step="", reward="")

    def __enter__(self) -> QuickstartProgress:
        if self._live:
            self._bar.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._live:
            self._bar.stop()

    def say(self, text: str) -> None:
        """A line of the run's record, stamped with seconds since the start."""
        self.console.print(
            f"[{time.time() - self.started:5.0f}s] {text}", markup=False, highlight=False, soft_wrap=True
        )

    def plan(self, total_s: float) -> None:
        """The work ahead, in estimated seconds (the estimate may be revised with `replan`)."""
        self._bar.update(self._task, total=total_s, completed=0)

    def replan(self, total_s: float) -> None:
        self._bar.update(self._task, total=total_s)

    def phase(self, name: str, step: str = "") -> None:
        self._bar.update(self._task, phase=name, step=step)

    def done(self, estimated_s: float, *, step: str = "", reward: float | None = None) -> None:
        """One unit of work finished; it was planned to take `estimated_s`."""
        fields: dict[str, str] = {"step": step}
        if reward is not None:
            fields["reward"] = f"reward {reward:.2f}"
        self._bar.update(self._task, advance=estimated_s, **fields)
