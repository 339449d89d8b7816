"""Initialisers.

Dense laws (this module): :func:`dense_weights` (Gaussian, uniform, Rademacher, orthogonal),
:func:`haar_orthogonal`, :func:`he_sigma_w2`, :func:`glorot_sigma_w2`. Each family of
initialisers lives in a private submodule and is re-exported here.
"""

from ._dense import *  # noqa: F401,F403
from ._dense import __all__ as _dense_all

__all__ = list(_dense_all)
