"""`temper quickstart`'s run: the whole closed loop offline on a tiny executor, bounded by work.

plan.py      the fixed amount of work (epochs, GRPO steps, tasks) and the time estimate
             from a short calibration
progress.py  the live progress bar (phase, step, reward, ETA) and the run's text lines
curves.py    the plot an RL engineer reads: reward's moving average, held-out success
run.py       the run itself, top to bottom
"""

from connectors.quickstart.plan import Calibration, QuickstartPlan
from connectors.quickstart.run import run_quickstart

__all__ = ["Calibration", "QuickstartPlan", "run_quickstart"]
