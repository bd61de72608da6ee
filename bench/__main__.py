"""``python -m bench [names...] [--size quick|full] [--repeat N] [--json out.json]``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from bench import BENCHMARKS, DEFAULT_JSON, SIZES, run_suite


def printer() -> Callable[[str], None]:
    """``print`` (flushed, so a log file follows the run) until the reader of standard output
    goes away (``python -m bench | head``): then the run goes on silently, its results still
    reach the JSON file, and no ``BrokenPipeError`` traceback is printed."""
    state = {"open": True}

    def out(line: str) -> None:
        if not state["open"]:
            return
        try:
            print(line, flush=True)
        except BrokenPipeError:
            state["open"] = False
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the exit-time flush must not fail either
            os.close(devnull)

    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run evonb's benchmarks against their baselines on local Spark.")
    parser.add_argument("names", nargs="*", metavar="name",
                        help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}")
    parser.add_argument("--size", choices=list(SIZES), default="quick",
                        help="data sizes: quick for a smoke run, full for the figures "
                             "(default: quick)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed runs of each side after the warm-up (default: 5)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed warm-up runs of each side (default: 1)")
    parser.add_argument("--json", default=str(DEFAULT_JSON), metavar="PATH",
                        help="where to write the results (default: bench/results/latest.json)")
    parser.add_argument("--workdir", default=None,
                        help="folder for the benchmark tables (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the benchmark tables after the run")
    parser.add_argument("--profile", action="store_true",
                        help="after timing, run each side once more and show where its time "
                             "went (Spark jobs and their call sites, time outside jobs)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    out = printer()
    if args.list:
        for name, fn in BENCHMARKS.items():
            doc = (fn.__doc__ or "").strip().splitlines()[0]
            out(f"{name:<16} {doc}")
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be >= 1 and --warmup >= 0")
    payload = run_suite(args.names or None, size=args.size, repeat=args.repeat,
                        warmup=args.warmup, json_path=args.json, workdir=args.workdir,
                        keep=args.keep, profile=args.profile, out=out)
    return 1 if payload["summary"].get("ERROR") else 0


if __name__ == "__main__":
    sys.exit(main())
