"""The benchmark harness's tests run every benchmark group at its tiny size: minutes of Spark
work that checks the harness, not the product. Only `make test-bench` (and so CI) collects
them; the default run leaves them out to stay short."""

from __future__ import annotations

import os

BENCH_TESTS_ENV = "EVONB_BENCH_TESTS"

collect_ignore_glob = [] if os.environ.get(BENCH_TESTS_ENV) == "1" else ["test_*.py"]
