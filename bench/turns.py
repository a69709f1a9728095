"""Timing in turns, for the compare_*.py scripts that time tiledsl beside its
peers in one process: each function is timed once a round (a do_bench
median), the rounds alternating which goes first, so that the board's clock
under its power cap treats them alike (docs/perf.md runs 92 and 98).
TURNS rounds (default 5)."""
import os

import triton

TURNS = int(os.environ.get("TURNS", "5"))


def bench(fn):
    """fn's time in ms: do_bench's median."""
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def in_turns(fns):
    """Each fn timed once a round for TURNS rounds, the rounds alternating
    which goes first: {name: [ms of each round]}."""
    times = {name: [] for name in fns}
    names = list(fns)
    for r in range(TURNS):
        for name in (names if r % 2 == 0 else names[::-1]):
            times[name].append(bench(fns[name]))
    return times
