"""Initialisers.

Each family lives in a private submodule and is re-exported here:

- dense laws (``_dense``): :func:`dense_weights` (Gaussian, uniform, Rademacher, orthogonal),
  :func:`haar_orthogonal`, :func:`he_sigma_w2`, :func:`glorot_sigma_w2`;
- looks-linear (``_looks_linear``, seed 001 Sec. 3): :func:`looks_linear`, :func:`gsm`,
  :func:`orthogonal_looks_linear`, :func:`looks_linear_input`.
"""

from ._dense import *  # noqa: F401,F403
from ._dense import __all__ as _dense_all
from ._looks_linear import *  # noqa: F401,F403
from ._looks_linear import __all__ as _looks_linear_all

__all__ = list(_dense_all) + list(_looks_linear_all)
from ._symmetry import *  # noqa: F401,F403,E402
from ._symmetry import __all__ as _symmetry_all  # noqa: E402

__all__ += list(_symmetry_all)
