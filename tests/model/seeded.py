"""Random histories of a state machine from a seed that a failure names, for the model tests."""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as use_seed
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test


def seed_from(variable: str) -> int:
    """The seed the environment ``variable`` names (to replay a run), else a fresh one."""
    return int(os.environ.get(variable) or random.SystemRandom().randrange(2**32))


def play_histories(machine: type[RuleBasedStateMachine], *, histories: int, steps: int,
                   min_steps: int, seed: int, replay: str) -> None:
    """Play ``histories`` histories of ``min_steps`` to ``steps`` steps of ``machine`` from
    ``seed``; hypothesis shrinks a failure to its shortest steps, and the error carries
    ``replay`` (how to play the run again)."""
    run = get_state_machine_test(
        machine,
        settings=settings(max_examples=histories, stateful_step_count=steps, deadline=None,
                          database=None, derandomize=False, print_blob=True,
                          phases=[Phase.generate, Phase.shrink],
                          suppress_health_check=list(HealthCheck)),
        _min_steps=min_steps)
    try:
        use_seed(seed)(run)()
    except BaseException as err:
        err.add_note(replay)
        raise
