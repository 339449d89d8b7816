"""Fixtures shared by the simulation tests: a two-sample test of Monte-Carlo samples, a Dask cluster."""

import numpy as np
import pytest


def _z_scores(a, b):
    """z of the differences of the means and of the variances of samples a, b (per column).

    The variance's standard error is the plug-in one, ``sqrt((m4 - v^2) / k)``, so the statistic is
    asymptotically N(0, 1) for any law with a finite fourth moment.
    """
    n, m = a.shape[0], b.shape[0]
    z_mean = (a.mean(0) - b.mean(0)) / np.sqrt(a.var(0, ddof=1) / n + b.var(0, ddof=1) / m)

    def var_and_se(s, k):
        c = s - s.mean(0)
        v = (c**2).mean(0)
        return v * k / (k - 1), np.sqrt(np.maximum((c**4).mean(0) - v**2, 0.0) / k)

    (va, sa), (vb, sb) = var_and_se(a, n), var_and_se(b, m)
    return z_mean, (va - vb) / np.sqrt(sa**2 + sb**2)


@pytest.fixture
def z_scores():
    """The two-sample z statistics of the means and variances of per-network samples (one per column)."""
    return _z_scores


@pytest.fixture(scope="module")
def client():
    """A local Dask cluster of two single-threaded worker processes (skipped without distributed)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster, set_as_default=False)
    yield c
    c.close()
    cluster.close()
