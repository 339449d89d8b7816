"""Functions with known misbehaviour, to test the harness itself (``test_fuzz_api``'s self-tests).

They are reached through registry names starting with ``"selftest."`` (see
:data:`fuzz.registry.SELFTEST_REGISTRY`) and are never part of the public-API campaign.
"""

import os
import signal
import time

import numpy as np


def well_behaved(x=1.0, flag=False):
    """Validates like the library should: finite result or a ValueError/TypeError naming x / flag."""
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"flag must be True or False, got {flag!r}")
    if isinstance(x, (bool, np.bool_, str)) or x is None or np.iscomplexobj(x):
        raise TypeError(f"x must be a real number, got {x!r}")
    x = np.asarray(x, dtype=float)
    if x.ndim or not np.isfinite(x) or x < 0 or x > 1e10:
        raise ValueError(f"x must be a finite number in [0, 1e10], got {x!r}")
    return {"value": float(np.sqrt(x)), "items": [1, 2.5]}


def hangs(x=1.0):
    """Never returns when x is NaN (a hang the timeout must catch)."""
    if x != x:
        while True:
            time.sleep(0.05)
    return float(x)


def crashes(x=1.0):
    """Kills its own process with SIGSEGV when x is negative (a crash the harness must survive)."""
    if x < 0:
        os.kill(os.getpid(), signal.SIGSEGV)
    return float(x)


def sloppy(x=1.0):
    """Returns NaN for NaN, wraps nothing, and raises messages that do not name x."""
    if isinstance(x, str):
        raise ValueError("could not convert string to float")
    if x is None:
        raise KeyError("x")
    return np.array([1.0, x])
