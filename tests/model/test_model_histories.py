"""The reference-model test: random histories of DDL, writes and services on real tables,
compared with :mod:`tests.model.reference` after every step and at every commit at the end.

``EVONB_MODEL_HISTORIES`` sets how many histories run (4 by default, in ``make test``; CI's
stress run (10) and ``make model-full`` run more) and ``EVONB_MODEL_STEPS`` their most steps
(at least 15 each).
The seed is drawn afresh per run and printed; ``EVONB_MODEL_SEED=<seed>`` replays a run. A
failure prints the seed and hypothesis's shortest step list, a program to paste into
``tests/model/test_model_regressions.py``.
"""

from __future__ import annotations

import os

import pytest
from pyspark.sql import SparkSession

from tests.model import machine
from tests.model.seeded import play_histories, seed_from
from tests.stress.groups import WRITERS_FUZZ_MODEL

MIN_STEPS = 15


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def play(spark: SparkSession, histories: int, label: str = "model test") -> None:
    """Play ``histories`` random histories (of ``MIN_STEPS`` to ``EVONB_MODEL_STEPS`` steps)
    against the model, from a fresh seed (``EVONB_MODEL_SEED`` replays one), printed with
    ``label``."""
    steps = max(MIN_STEPS, _int("EVONB_MODEL_STEPS", MIN_STEPS))
    seed = seed_from("EVONB_MODEL_SEED")
    print(f"{label}: seed {seed} ({histories} histories of {MIN_STEPS} to {steps} steps); "
          f"replay with EVONB_MODEL_SEED={seed}")
    machine.use_spark(spark)
    before = next(machine.HISTORIES)
    play_histories(machine.TableMachine, histories=histories, steps=steps, min_steps=MIN_STEPS,
                   seed=seed, replay=f"{label} seed: EVONB_MODEL_SEED={seed}")
    ran = next(machine.HISTORIES) - before - 1
    print(f"{label}: {ran} histories, {next(machine.STEPS)} checked steps; pyiceberg "
          f"read {machine.ICEBERG}; SQL statements {machine.SQL}; final filters "
          f"{machine.FILTERS}; reads in earlier schemas {machine.OLDER_READS[0]}; type changes "
          f"{dict(machine.RETYPES)}; write defaults {dict(machine.DEFAULTS)}")
    assert ran >= histories


@pytest.mark.model
@pytest.mark.spark
@WRITERS_FUZZ_MODEL
def test_random_histories_match_the_model(spark: SparkSession) -> None:
    play(spark, _int("EVONB_MODEL_HISTORIES", 4))
