"""Cost of Blumenfeld et al.'s Fig. 4 and of the group-behaviour validation row.

``figures.blumenfeld2020.fig_4`` reads the cached ConstNet runs of Figs. 3 and 6 (``_constnet_runs``,
an ``functools.lru_cache``); ``meanfield reproduce`` runs every figure in one process
(``figures.runner.run_figures``, sorted names: ``fig_3`` before ``fig_4`` before ``fig_6``), so
Fig. 4 only draws. Run alone (``meanfield figures blumenfeld2020.fig_4``) it trains the four runs
first. The validation row (``symmetry_groups.group_behaviour``) trains its own 4-network ensemble.

Run::

    python benchmarks/bench_symmetry_groups.py [--size default]

Prints, in one process: wall and CPU seconds (``time.process_time``) of fig_3 (trains the shared
runs), then fig_4 and fig_6 (cache hits), then the validation run, with the load average before and
after, and the ratio fig_4 / fig_3. Prints ratios measured in one run (never a timed test). No GPU
path: these runs are CPU only (``honours_backend=False``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def _timed(label, fn):
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{label:<48s} wall {wall:7.2f} s   cpu {cpu:7.2f} s")
    return wall, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="default", choices=("smoke", "default", "full"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    os.environ.setdefault("MEANFIELD_NO_PROGRESS", "1")
    from meanfield.figures import blumenfeld2020 as B
    from meanfield.validation import symmetry_groups as sg

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as out:
        kw = {"size": args.size, "backend": "numpy", "rng": args.seed}
        _, cpu3 = _timed("fig_3 (trains the 4 shared ConstNet runs)", lambda: B.fig_3(out, **kw))
        _, cpu4 = _timed("fig_4 (cached runs: drawing only)", lambda: B.fig_4(out, **kw))
        _timed("fig_6 (cached runs: drawing only)", lambda: B.fig_6(out, **kw))
        sg.clear_cache()
        _timed("validation: group_behaviour (4 nets, own runs)", lambda: sg.group_behaviour(args.size, rng=args.seed))
    print(f"CPU ratio fig_4 / fig_3: {cpu4 / cpu3:.3f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
