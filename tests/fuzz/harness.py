"""Run the fuzz campaign: job list, worker processes with a per-call timeout, verdicts, report.

Verdict of one call (the project's standards):

OK
    It returned, and every numeric leaf of the result (arrays, floats, dataclass fields, list /
    tuple / dict items, recursively) is finite, except non-finite values that an :class:`Allow`
    rule of the registry documents at that field; or it raised exactly ``ValueError`` or
    ``TypeError`` (or a subclass defined by meanfield) whose message names the changed argument.
BAD
    A foreign exception (anything else, including subclasses such as ``numpy.linalg.LinAlgError``
    and Numba's ``TypingError``), a message that does not name the argument, a non-finite leaf, a
    silently accepted value that must raise (see :mod:`fuzz.catalogue`), a ``ValueError`` where a
    ``TypeError`` is required, a crashed worker, or no answer within the per-call timeout.

Bounded time: each call runs in a worker process; the manager waits at most ``timeout`` seconds
for it, then kills the worker (SIGKILL), records the hang and forks a new worker. The manager is
a fresh interpreter (``python tests/fuzz/manager.py``, started by :func:`run_jobs`) that imports
the library and this harness, then forks the workers (``multiprocessing`` fork start method), so
a worker starts in milliseconds and every call in it reuses the Numba code compiled there. The
manager never runs library code itself. It is not the test process because a process that has
run a Numba ``parallel=True`` kernel with the GNU OpenMP threading layer cannot fork safely
(measured: the child is killed with "fork() called from a process already using GNU OpenMP, this
is unsafe"), and earlier tests of the suite do run such kernels.

Each baseline call runs first (a generous timeout: the first call may compile Numba kernels into
the on-disk cache), then the mutations with the normal timeout.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import importlib
import inspect
import json
import multiprocessing as mp
import numbers
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np

_TESTS_DIR = str(Path(__file__).resolve().parent.parent)
if _TESTS_DIR not in sys.path:  # the manager process and its workers import ``fuzz`` from here
    sys.path.insert(0, _TESTS_DIR)

from fuzz import catalogue, findings  # noqa: E402
from fuzz.catalogue import RAISE, TYPE  # noqa: E402
from fuzz.modules import CORE_MODULES  # noqa: E402
from fuzz.registry import ALLOW_NONFINITE, REGISTRY, SELFTEST_REGISTRY, Fixture, Lazy  # noqa: E402

#: per-call timeout (seconds) of a mutated call
DEFAULT_TIMEOUT = float(os.environ.get("MEANFIELD_FUZZ_TIMEOUT", "20"))
#: timeout of a baseline call (it may compile Numba kernels on a cold cache)
BASELINE_TIMEOUT = float(os.environ.get("MEANFIELD_FUZZ_BASELINE_TIMEOUT", "300"))
#: address-space limit of a worker (bytes): an absurd allocation fails instead of exhausting the
#: machine's memory (a MemoryError is then reported as a foreign exception)
MEMORY_LIMIT = int(float(os.environ.get("MEANFIELD_FUZZ_MEMORY_GB", "4")) * 2**30)

ENTRIES = {e.name: e for e in REGISTRY + SELFTEST_REGISTRY}
#: modules the manager imports before forking workers
PRELOAD = [
    "meanfield",
    *CORE_MODULES,
    "meanfield.validation.report",
    "meanfield.validation.runner",
    "meanfield.figures",
]


# ---------------------------------------------------------------------------------------------
# jobs


@dataclass(frozen=True)
class Job:
    function: str
    param: str | None  # None: the baseline call
    label: str  # the mutation's label ("baseline" for the baseline)
    expect: str | None  # None, RAISE or TYPE (see fuzz.catalogue)
    timeout: float


@dataclass(frozen=True)
class Outcome:
    job: Job
    verdict: str  # "OK" or "BAD"
    detail: str
    elapsed: float


def resolve(name: str):
    """The public callable ``meanfield.<name>``."""
    parts = name.split(".")
    if parts[0] == "selftest":
        return getattr(importlib.import_module("fuzz.selftest"), parts[1])
    if parts[0] == "validation":
        obj, rest = importlib.import_module("meanfield.validation." + parts[1]), parts[2:]
    else:
        obj, rest = importlib.import_module("meanfield." + parts[0]), parts[1:]
    for p in rest:
        obj = getattr(obj, p)
    return obj


def parameter_name(func, param: str) -> str:
    """The name the function uses for table parameter ``param`` (``rng`` may still be ``seed``)."""
    params = inspect.signature(func).parameters
    if param == "rng" and "rng" not in params and "seed" in params:
        return "seed"
    return param


def _order(name: str) -> int:
    """Registry order (self-test entries last)."""
    return list(ENTRIES).index(name)


def make_jobs(full: bool, functions=None, timeout: float = DEFAULT_TIMEOUT) -> tuple[list[Job], list[Job]]:
    """(baseline jobs, mutation jobs) for the registry entries named in ``functions`` (all: None)."""
    baselines, mutated = [], []
    for entry in REGISTRY if functions is None else [ENTRIES[f] for f in sorted(functions, key=_order)]:
        func = resolve(entry.name)
        params = inspect.signature(func).parameters
        baselines.append(Job(entry.name, None, "baseline", None, BASELINE_TIMEOUT))
        for param, arg in entry.args.items():
            actual = parameter_name(func, param)
            default = params[actual].default if actual in params else inspect.Parameter.empty
            for m in catalogue.mutations(arg.kind, full):
                expect = None if (m.none and (default is None or param in entry.none_ok)) else m.expect
                if param in entry.nan_ok and m.label in catalogue.NAN_LABELS:
                    expect = None
                mutated.append(Job(entry.name, param, m.label, expect, timeout))
    return baselines, mutated


# ---------------------------------------------------------------------------------------------
# fixture files


def make_fixtures(directory) -> dict:
    """Write the files the baselines read (and their corrupt variants); name -> path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    files = {}
    # MNIST IDX: unsigned bytes, 3 images of 2 x 2
    images = rng.integers(0, 255, size=(3, 2, 2)).astype(">u1")
    header = bytes([0, 0, 0x08, 3]) + b"".join(int(s).to_bytes(4, "big") for s in images.shape)
    files["mnist"] = header + images.tobytes()
    # CIFAR-10 python batch: a pickled dict with bytes keys
    batch = {b"data": rng.integers(0, 256, size=(2, 3072), dtype=np.uint8), b"labels": [3, 7], b"batch_label": b"fuzz"}
    files["cifar"] = pickle.dumps(batch, protocol=2)
    # a figure JSON of meanfield.figures
    fig = {
        "metadata": {
            "library": "meanfield",
            "version": "0",
            "paper": "fuzz",
            "figure": "fuzz",
            "name": "fuzz",
            "seed": 0,
            "full": False,
            "backend": "numpy",
            "params": {},
            "units": {},
            "notes": "",
        },
        "axes": {"m": ["row", "column"]},
        "data": {"x": [1.0, 2.0, 3.0], "m": [[1.0, 2.0], [3.0, 4.0]]},
    }
    files["figure_json"] = json.dumps(fig).encode()
    # format-specific variants: NaN content (valid layout, non-finite numbers) and a wrong layout
    nan_idx = np.array([[1.0, np.nan], [np.inf, 2.0]], dtype=">f8")
    variants = {
        "mnist": {
            ".nan": bytes([0, 0, 0x0E, 2])
            + b"".join(int(s).to_bytes(4, "big") for s in nan_idx.shape)
            + nan_idx.tobytes(),
            ".wrongshape": bytes([0, 0, 0x08, 3])
            + b"".join(int(s).to_bytes(4, "big") for s in (3, 100, 100))
            + images.tobytes(),
        },
        "cifar": {
            ".nan": pickle.dumps({b"data": np.full((2, 3072), np.nan), b"labels": [3, 7]}, protocol=2),
            ".wrongshape": pickle.dumps(
                {b"data": np.zeros((2, 100), dtype=np.uint8), b"labels": [3, 7, 1]}, protocol=2
            ),
        },
        "figure_json": {
            ".nan": json.dumps(dict(fig, data={"x": [1.0, "nan", "inf"]})).encode(),
            ".wrongshape": json.dumps({"data": [1, 2]}).encode(),
        },
    }
    # the audit's corrupt IDX headers (tried on every reader): an unknown type code, sizes whose
    # product overflows, zero dimensions
    corrupt_idx = {
        ".badtype": bytes([0, 0, 0x07, 1]) + (3).to_bytes(4, "big") + bytes(3),
        ".overflow": bytes([0, 0, 0x08, 3]) + b"".join((2**31 - 1).to_bytes(4, "big") for _ in range(3)) + bytes(8),
        ".zerondim": bytes([0, 0, 0x08, 0]) + bytes(8),
    }
    paths = {}
    for name, payload in files.items():
        path = d / (name + (".json" if name == "figure_json" else ".bin"))
        path.write_bytes(payload)
        garbage = bytes(rng.integers(0, 256, size=64, dtype=np.uint8))
        Path(str(path) + ".garbage").write_bytes(garbage)
        Path(str(path) + ".garbage.gz").write_bytes(garbage)
        Path(str(path) + ".empty").write_bytes(b"")
        Path(str(path) + ".truncated").write_bytes(payload[: len(payload) // 2])
        for suffix, content in (variants[name] | corrupt_idx).items():
            Path(str(path) + suffix).write_bytes(content)
        paths[name] = str(path)
    return paths


# ---------------------------------------------------------------------------------------------
# building a call and judging it (in the worker)


def _materialize(value, fixtures):
    if isinstance(value, Lazy):
        return value.fn()
    if isinstance(value, Fixture):
        return fixtures[value.name]
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def build_call(job: Job, fixtures) -> tuple:
    """(callable, kwargs, name of the changed parameter in the function's signature)."""
    entry = ENTRIES[job.function]
    func = resolve(entry.name)
    kwargs, changed = {}, None
    for param, arg in entry.args.items():
        actual = parameter_name(func, param)
        value = _materialize(arg.value, fixtures)
        if param == job.param:
            if job.label.startswith(findings.PREFIX):  # a call of the audit replay (fuzz.findings)
                mutation = findings.mutation(job.label)
            else:
                mutation = next(m for m in catalogue.KINDS[arg.kind] if m.label == job.label)
            value = mutation.make(value)
            changed = actual
        kwargs[actual] = value
    return func, kwargs, changed


def names_argument(message: str, name: str) -> bool:
    """Whether ``message`` names the parameter ``name`` (as a word, any case: the paper's ``W`` names
    ``w``; one-letter names must read as the subject, be quoted or be followed by punctuation:
    ``a must ...``, ``'a'``, ``a=``, so that the article "a" does not count)."""
    if len(name) > 1:
        return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message, re.IGNORECASE) is not None
    pattern = (
        rf"(^|[\s(\[,;'\"`]){re.escape(name)}"
        rf"(?=\s*[=:,;\[\]()'\"`.]|\s+(must|has|is|are|should|cannot|needs|of|shape|entries|contains|was|and|or)\b|$)"
    )
    return re.search(pattern, message, re.IGNORECASE) is not None


def names_alternative(message: str, function: str) -> bool:
    """Whether ``message`` says "use NAME" with NAME a public function of the function's module
    (``use log_expected_squared_norm``) or one of its parameters (``use log=True``)."""
    func = resolve(function)
    module = importlib.import_module(func.__module__) if getattr(func, "__module__", None) else None
    params = set(inspect.signature(func).parameters)
    for name in re.findall(r"\buse\s+`{0,2}([A-Za-z_][A-Za-z_0-9]*)", message):
        if name in params or (
            module is not None and not name.startswith("_") and callable(getattr(module, name, None))
        ):
            return True
    return False


def _field_path(path: str) -> str:
    """ "ret.fixed_point.xi_c[3]" -> "fixed_point.xi_c" (indices dropped)."""
    p = re.sub(r"\[[^\]]*\]", "", path)
    return p[4:] if p.startswith("ret.") else ("" if p == "ret" else p)


def _walk(obj, path, out, depth=0):
    """Collect (path, value) of every numeric leaf holding a non-finite value."""
    if depth > 8 or obj is None or isinstance(obj, (str, bytes, bool, np.bool_, numbers.Integral)):
        return
    if isinstance(obj, (float, complex, np.floating, np.complexfloating)):
        if not np.isfinite(obj):
            out.append((path, np.asarray(obj)))
        return
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc":
            if not np.all(np.isfinite(obj)):
                out.append((path, obj))
        elif obj.dtype.kind == "O":
            for i, item in enumerate(obj.flat[:10_000]):
                _walk(item, f"{path}[{i}]", out, depth + 1)
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _walk(getattr(obj, f.name, None), f"{path}.{f.name}", out, depth + 1)
        return
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj[:10_000]):
            _walk(item, f"{path}[{i}]", out, depth + 1)
        return
    if isinstance(obj, dict):
        for key, item in list(obj.items())[:10_000]:
            _walk(item, f"{path}[{key!r}]", out, depth + 1)
    # anything else (callables, scipy distributions, Activation functions): no numeric leaf


def _describe(values: np.ndarray) -> str:
    bad = values[~np.isfinite(values)]
    kinds = sorted(
        {("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")) for v in np.real(bad).ravel()[:1000]}
        | ({"complex-nonfinite"} if np.iscomplexobj(bad) else set())
    )
    return f"{bad.size}/{values.size} non-finite {kinds}"


def nonfinite_problems(function: str, result, kwargs) -> list[str]:
    """Non-finite leaves of ``result`` that no Allow rule of ``function`` covers."""
    found = []
    _walk(result, "ret", found)
    problems = []
    rules = [r for r in ALLOW_NONFINITE if r.function == function]
    for path, values in found:
        field = _field_path(path)
        rule = next((r for r in rules if r.field == field), None)
        if rule is not None:
            try:
                vals = np.real(values)
                nonfinite = ~np.isfinite(vals)
                allowed = np.broadcast_to(np.asarray(rule.where(result, kwargs), dtype=bool), vals.shape)
                ok = not np.any(nonfinite & ~allowed)
                if not rule.nan and np.any(np.isnan(vals)):
                    ok = False
                if rule.sign and np.any(np.isinf(vals) & (np.sign(vals) != rule.sign)):
                    ok = False
            except Exception as exc:
                ok = False
                path += f" (allow-rule failed: {type(exc).__name__})"
            if ok:
                continue
            path += " (outside the documented condition)"
        problems.append(f"{path}: {_describe(values)}")
    return problems


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _summary(result) -> str:
    if isinstance(result, np.ndarray):
        return f"ndarray {result.dtype} {result.shape}"
    return _short(type(result).__name__, 40)


def _is_contract_exception(exc: BaseException) -> bool:
    t = type(exc)
    if t in (ValueError, TypeError):
        return True
    return issubclass(t, (ValueError, TypeError)) and t.__module__.split(".")[0] == "meanfield"


#: Path mutations for which the operating system's own error is the documented contract of a
#: file reader (Python's open()): a missing file or a directory may raise these OSErrors.
OS_ERRORS_FOR = {"missing file": (FileNotFoundError,), "a directory": (IsADirectoryError, PermissionError)}


def judge(
    job: Job, function: str, changed: str | None, kwargs, result=None, exc: BaseException | None = None
) -> tuple[str, str]:
    """(verdict, detail) of one call."""
    if exc is not None:
        what = f"{type(exc).__module__}.{type(exc).__name__}".replace("builtins.", "")
        if job.param is None:
            return "BAD", f"baseline raised {what}: {_short(exc)}"
        kind = ENTRIES[function].args[job.param].kind
        if kind == "path" and isinstance(exc, OS_ERRORS_FOR.get(job.label, ())):
            return "OK", f"{what}: {_short(exc, 80)}"
        if not _is_contract_exception(exc):
            return "BAD", f"foreign exception {what}: {_short(exc)}"
        if job.expect == TYPE and not isinstance(exc, TypeError):
            return "BAD", f"{what} where TypeError is required: {_short(exc)}"
        path_named = (
            kind == "path" and isinstance(kwargs.get(changed), str) and kwargs[changed] and kwargs[changed] in str(exc)
        )
        if names_argument(str(exc), changed) or path_named:
            return "OK", f"{what}: {_short(exc, 80)}"
        # A value that may be valid on its own (expect None: -1, 0, 10**12, an empty array, ...)
        # can conflict with another argument; an error naming that other parameter is then right
        # ("kurtosis does not reach threshold=10.0 within max_depth=1000 layers").
        others = [p for p in inspect.signature(resolve(function)).parameters if p != changed]
        if job.expect is None and any(names_argument(str(exc), p) for p in others):
            return "OK", f"{what} (a conflict with another argument): {_short(exc, 80)}"
        # The standards' overflow contract: "raise a ValueError that says so and names the
        # alternative" -- a log-scale function of the same module or a parameter (``use log=True``).
        if job.expect is None and isinstance(exc, ValueError) and names_alternative(str(exc), function):
            return "OK", f"{what} (out of range; names the alternative): {_short(exc, 80)}"
        return "BAD", f"{what} message does not name {changed!r}: {_short(exc)}"
    problems = nonfinite_problems(function, result, kwargs)
    if job.param is not None and job.expect in (RAISE, TYPE):
        need = "TypeError" if job.expect == TYPE else "ValueError/TypeError"
        extra = f"; and {'; '.join(problems[:2])}" if problems else ""
        return "BAD", f"accepted silently (returned {_summary(result)}; must raise {need} naming {changed!r}){extra}"
    if problems:
        return "BAD", "non-finite result: " + "; ".join(problems[:4])
    return "OK", f"returned {_summary(result)}"


def run_job(job: Job, fixtures) -> Outcome:
    t0 = time.perf_counter()
    try:
        func, kwargs, changed = build_call(job, fixtures)
    except Exception as exc:
        return Outcome(job, "BAD", f"fuzz table error building the call: {type(exc).__name__}: {_short(exc)}", 0.0)
    try:
        result = func(**kwargs)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        verdict, detail = judge(job, job.function, changed, kwargs, exc=exc)
    else:
        try:
            verdict, detail = judge(job, job.function, changed, kwargs, result=result)
        except Exception as exc:
            verdict, detail = "BAD", f"result could not be inspected: {type(exc).__name__}: {_short(exc)}"
    return Outcome(job, verdict, detail, time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------------
# worker processes


def _worker_main(conn, fixtures, memory_limit):
    """Loop of a worker: receive a Job, send back its Outcome; None ends the loop."""
    import gc
    import resource
    import signal
    import warnings

    os.environ["MEANFIELD_NO_PROGRESS"] = "1"
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    if memory_limit:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        except (ValueError, OSError):
            pass
    warnings.simplefilter("ignore")
    try:
        import numba

        numba.set_num_threads(1)  # the workers share the cores; one thread each
    except Exception:
        pass
    gc.collect()
    gc.freeze()  # the imported library: never scanned again, so the collection after a call is cheap
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        # backstop: a worker whose manager died (so nobody kills it on timeout) ends by itself
        signal.alarm(int(2 * job.timeout) + 10)
        outcome = run_job(job, fixtures)
        # Collect the call's garbage now, so that a call that corrupts memory crashes here and is
        # blamed, not a later one (measured: after three_layer_flow(rtol=1+1j) raised inside
        # scipy's LSODA, the next collection segfaults).
        gc.collect()
        gc.freeze()
        signal.alarm(0)
        conn.send(outcome)


class _Worker:
    def __init__(self, ctx, fixtures, memory_limit):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, fixtures, memory_limit), daemon=True)
        self.proc.start()
        child.close()
        self.job = None  # (index, job, deadline, start)
        self.history = collections.deque(maxlen=4)  # (index, job) of the calls this worker answered before

    def kill(self):
        try:
            self.proc.kill()
        finally:
            self.proc.join(5)
            self.conn.close()


def default_workers() -> int:
    return int(os.environ.get("MEANFIELD_FUZZ_WORKERS", min(2, os.cpu_count() or 1)))


def run_jobs(
    jobs: list[Job], fixtures, workers: int | None = None, memory_limit: int = MEMORY_LIMIT, verbose: bool = False
) -> list[Outcome]:
    """Run ``jobs`` in a fresh manager process (see the module notes); the outcomes in job order."""
    import subprocess
    import tempfile

    if workers is None:
        workers = default_workers()
    with tempfile.TemporaryDirectory(prefix="meanfield-fuzz-jobs-") as tmp:
        request, answer = Path(tmp) / "jobs.pickle", Path(tmp) / "outcomes.pickle"
        request.write_bytes(pickle.dumps((jobs, fixtures, workers, memory_limit, verbose)))
        manager = Path(__file__).resolve().parent / "manager.py"
        env = dict(os.environ, MEANFIELD_NO_PROGRESS="1")
        proc = subprocess.run([sys.executable, str(manager), str(request), str(answer)], env=env, check=False)
        if proc.returncode != 0 or not answer.exists():
            raise RuntimeError(f"the fuzz manager process failed (exit code {proc.returncode})")
        return pickle.loads(answer.read_bytes())


def _why(code) -> str:
    return f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"


def _run_sequence(ctx, fixtures, memory_limit, sequence) -> tuple[list, int | None, str | None]:
    """Run ``sequence`` in order in one fresh worker: (outcomes so far, exit code, "died"/"timeout"/None)."""
    w = _Worker(ctx, fixtures, memory_limit)
    outcomes = []
    try:
        for job in sequence:
            w.conn.send(job)
            if not w.conn.poll(job.timeout):
                return outcomes, None, "timeout"
            try:
                outcomes.append(w.conn.recv())
            except (EOFError, OSError):
                w.proc.join(5)
                return outcomes, w.proc.exitcode, "died"
        return outcomes, None, None
    finally:
        w.kill()


def _blame_crash(ctx, fixtures, memory_limit, results, i, job, code, history, elapsed):
    """A worker died during ``job``: find out whether ``job`` alone kills a fresh process; if not,
    report the calls the worker made before (one of them may have corrupted the process: after
    three_layer_flow(rtol=1+1j) raises inside scipy's LSODA, the next garbage collection or a
    later call segfaults)."""
    alone, code_alone, status = _run_sequence(ctx, fixtures, memory_limit, [job])
    if status == "died":
        results[i] = Outcome(
            job,
            "BAD",
            f"worker process died ({_why(code_alone)}) in this call or the garbage "
            "collection after it (reproduced in a fresh worker)",
            elapsed,
        )
        return
    alone_outcome = (
        alone[0] if alone else Outcome(job, "BAD", f"timeout: no answer within {job.timeout:g} s", job.timeout)
    )
    before = (
        "; ".join(
            f"{h.param or 'baseline'}={h.label}" if h.function == job.function else f"{h.function}({h.param}={h.label})"
            for _, h in history
        )
        or "none"
    )
    # Memory corruption shows up later and depends on the heap's layout: blame this call and name
    # the calls the worker made before it (one of them may be the culprit).
    results[i] = Outcome(
        job,
        "BAD",
        f"worker process died ({_why(code)}) in this call; the worker's previous calls: {before}; "
        f"alone in a fresh worker this call gives: {alone_outcome.verdict} {alone_outcome.detail}",
        elapsed,
    )


def run_jobs_here(
    jobs: list[Job], fixtures, workers: int, memory_limit: int = MEMORY_LIMIT, progress=None
) -> list[Outcome]:
    """Run ``jobs`` on ``workers`` forked processes of THIS process (the manager); the outcomes in
    job order. Baseline jobs (``param is None``) all finish before any other job starts."""
    ctx = mp.get_context("fork")
    results: list[Outcome | None] = [None] * len(jobs)
    phases = [
        [i for i, j in enumerate(jobs) if j.param is None],
        [i for i, j in enumerate(jobs) if j.param is not None],
    ]
    pool = [_Worker(ctx, fixtures, memory_limit) for _ in range(max(1, workers))]
    try:
        for phase in phases:
            pending = collections.deque(phase)
            while pending or any(w.job for w in pool):
                for k, w in enumerate(pool):
                    if w.job is None and pending:
                        i = pending.popleft()
                        now = time.monotonic()
                        try:
                            w.conn.send(jobs[i])
                        except (OSError, BrokenPipeError):
                            w.kill()
                            pool[k] = w = _Worker(ctx, fixtures, memory_limit)
                            w.conn.send(jobs[i])
                        w.job = (i, jobs[i], now + jobs[i].timeout, now)
                busy = [w for w in pool if w.job]
                if not busy:
                    continue
                deadline = min(w.job[2] for w in busy)
                ready = wait([w.conn for w in busy], timeout=max(0.0, deadline - time.monotonic()))
                for k, w in enumerate(pool):
                    if w.job is None:
                        continue
                    i, job, deadline, start = w.job
                    if w.conn in ready:
                        try:
                            results[i] = w.conn.recv()
                            w.job = None
                            w.history.append((i, job))
                        except (EOFError, OSError):
                            w.proc.join(5)
                            code = w.proc.exitcode
                            history = list(w.history)
                            w.kill()
                            pool[k] = _Worker(ctx, fixtures, memory_limit)
                            _blame_crash(
                                ctx, fixtures, memory_limit, results, i, job, code, history, time.monotonic() - start
                            )
                    elif time.monotonic() > deadline:
                        results[i] = Outcome(
                            job, "BAD", f"timeout: no answer within {job.timeout:g} s (killed)", job.timeout
                        )
                        w.kill()
                        pool[k] = _Worker(ctx, fixtures, memory_limit)
                    else:
                        continue
                    if progress is not None:
                        progress(results[i])
    finally:
        for w in pool:
            try:
                w.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for w in pool:
            w.proc.join(2)
            if w.proc.is_alive():
                w.kill()
    return results  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# campaign and report


@dataclass
class Campaign:
    outcomes: list[Outcome]
    full: bool
    wall: float
    timeout: float
    workers: int

    @property
    def bad(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.verdict != "OK"]

    def bad_for(self, module: str) -> list[Outcome]:
        return [o for o in self.bad if ENTRIES[o.job.function].module == module]


def module_of(function: str) -> str:
    return ENTRIES[function].module


def run_campaign(
    full: bool = False,
    functions=None,
    fixtures_dir=None,
    workers=None,
    timeout: float = DEFAULT_TIMEOUT,
    verbose: bool = False,
) -> Campaign:
    import tempfile

    if workers is None:
        workers = default_workers()
    with tempfile.TemporaryDirectory(prefix="meanfield-fuzz-") as tmp:
        fixtures = make_fixtures(fixtures_dir or tmp)
        baselines, mutated = make_jobs(full, functions, timeout)
        t0 = time.monotonic()
        outcomes = run_jobs(baselines + mutated, fixtures, workers, verbose=verbose)
        wall = time.monotonic() - t0
    return Campaign(outcomes, full, wall, timeout, workers)


def category(o: Outcome) -> str:
    d = o.detail
    if d.startswith("timeout"):
        return "timeout (hang)"
    if "worker process died" in d:
        return "process crash"
    if d.startswith("foreign exception"):
        return "foreign " + d.split(":")[0].rsplit(".", 1)[-1].replace("foreign exception ", "")
    if d.startswith("accepted silently"):
        return "invalid value accepted"
    if d.startswith("non-finite"):
        return "non-finite result"
    if "does not name" in d:
        return "message does not name the argument"
    if "where TypeError is required" in d:
        return "ValueError instead of TypeError"
    if d.startswith("baseline"):
        return "baseline call fails"
    return "other"


def format_line(o: Outcome) -> str:
    j = o.job
    call = "baseline call" if j.param is None else f"{j.param}={j.label}"
    return f"BAD  {j.function:<44} {call:<40} {o.detail}"


def format_report(c: Campaign, title: str = "meanfield public-API fuzz report") -> str:
    functions = sorted({o.job.function for o in c.outcomes})
    lines = [
        f"# {title}",
        f"# {len(c.outcomes)} calls of {len(functions)} public functions, catalogue: {'full' if c.full else 'fast subset'}; "
        f"{len(c.bad)} BAD; per-call timeout {c.timeout:g} s; {c.workers} workers; wall {c.wall:.1f} s",
        "# One line per BAD call: function, the argument changed and its value (all others at the baseline), what happened.",
        "# OK = finite result (or a documented infinity, see ALLOW_NONFINITE) or ValueError/TypeError naming the argument.",
        "",
    ]
    kinds = collections.Counter(category(o) for o in c.bad)
    lines.append("# BAD calls by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    lines.append("")
    by_module = collections.defaultdict(list)
    for o in c.bad:
        by_module[module_of(o.job.function)].append(o)
    counts = collections.Counter(module_of(o.job.function) for o in c.outcomes)
    for module in sorted(counts):
        bad = by_module.get(module, [])
        lines.append(f"## {module}: {len(bad)} BAD of {counts[module]} calls")
        lines.extend(format_line(o) for o in bad)
        lines.append("")
    slow = sorted((o for o in c.outcomes if o.verdict == "OK"), key=lambda o: -o.elapsed)[:10]
    lines.append(
        "# slowest OK calls (s): "
        + ", ".join(f"{o.job.function}[{o.job.param or 'baseline'}={o.job.label}] {o.elapsed:.2f}" for o in slow)
    )
    return "\n".join(lines) + "\n"


def expected_report_path():
    return os.environ.get("MEANFIELD_FUZZ_REPORT")
