"""Initialisers.

Each family lives in a private submodule and is re-exported here:

- dense laws (``_dense``): :func:`dense_weights` (Gaussian, uniform, Rademacher, orthogonal),
  :func:`haar_orthogonal`, :func:`he_sigma_w2`, :func:`glorot_sigma_w2`;
- looks-linear (``_looks_linear``, seed 001 Sec. 3): :func:`looks_linear`, :func:`gsm`,
  :func:`orthogonal_looks_linear`, :func:`looks_linear_input`;
- convolution kernels (``_conv``, seed 003 Sec. 2.4 and Algorithm 1): orthogonal and
  delta-orthogonal kernels;
- ZerO (``_zero``, seed 002 part 3 Sec. A): deterministic Hadamard-based initialisation and ZerO*;
- MetaInit (``_metainit``, Dauphin & Schoenholz 2019): norms tuned to minimise the gradient quotient;
- symmetric initialisations (``_symmetry``, seed 000): ConstNet / LeakyNet weights.

Every stochastic initialiser takes ``rng`` (``None``, an ``int`` or a ``numpy.random.Generator``;
an int ``n`` draws exactly the stream of ``numpy.random.default_rng(n)``); there is no ``seed``
keyword. Sizes are bounded (2^29 numbers per array, Algorithm 1 work ``<= MAX_KERNEL_WORK``,
``MetaInit`` steps ``<= MAX_STEPS``): absurd requests raise ``ValueError`` at once.
"""

from ._conv import *  # noqa: F401,F403
from ._conv import __all__ as _conv_all
from ._dense import *  # noqa: F401,F403
from ._dense import __all__ as _dense_all
from ._looks_linear import *  # noqa: F401,F403
from ._looks_linear import __all__ as _looks_linear_all
from ._metainit import *  # noqa: F401,F403
from ._metainit import __all__ as _metainit_all
from ._symmetry import *  # noqa: F401,F403
from ._symmetry import __all__ as _symmetry_all
from ._zero import *  # noqa: F401,F403
from ._zero import __all__ as _zero_all

__all__ = list(_dense_all) + list(_looks_linear_all) + list(_conv_all) + list(_zero_all) + list(_symmetry_all) + list(_metainit_all)
