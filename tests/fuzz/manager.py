"""The fuzz manager: a fresh interpreter that imports the library, forks the workers and runs jobs.

Started by :func:`fuzz.harness.run_jobs` as ``python manager.py JOBS.pickle OUTCOMES.pickle``;
reads ``(jobs, fixtures, workers, memory_limit, verbose)`` and writes the list of outcomes.
"""

import importlib
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz import harness


def main(request: str, answer: str) -> int:
    jobs, fixtures, workers, memory_limit, verbose = pickle.loads(Path(request).read_bytes())
    for name in harness.PRELOAD:  # import (compile nothing) before forking, so workers share it
        importlib.import_module(name)

    def progress(outcome):
        if verbose and outcome.verdict != "OK":
            print(harness.format_line(outcome), file=sys.stderr, flush=True)

    outcomes = harness.run_jobs_here(jobs, fixtures, workers, memory_limit, progress=progress)
    Path(answer).write_bytes(pickle.dumps(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
