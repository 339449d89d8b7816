"""Initialisers, and the kernel layout and periodic convolution they are defined by.

Each family lives in a private submodule and is re-exported here:

- dense laws (``_dense``): :func:`dense_weights` (Gaussian, uniform, Rademacher, orthogonal), the
  library's one weight sampler (``batch_shape`` and ``backend`` arguments: the simulators of
  :mod:`meanfield.simulate` draw through it), :func:`haar_orthogonal`,
  :func:`he_sigma_w2`, :func:`glorot_sigma_w2`;
- looks-linear (``_looks_linear``, Burkholz & Dubatovka 2019 Sec. 3): :func:`looks_linear` (the one looks-linear
  block construction), :func:`gsm`, :func:`orthogonal_looks_linear`, :func:`looks_linear_input`;
- convolution kernels (``_conv``, the layout and the operator; ``_conv_kernels``, the initialisers; Xiao et al.
  2018 Sec. 2.4 and Algorithms 1-2): the one kernel layout ``(*kernel_spatial, c_out, c_in)`` and the periodic
  convolution it defines
  (:func:`periodic_conv`, :func:`periodic_conv_transpose`, :func:`periodic_conv_weight_grad`,
  :func:`conv_matrix`, :func:`conv_singular_values`), PyTorch's layout (:func:`to_torch_layout`,
  :func:`from_torch_layout`), Gaussian (eq. 2.2), orthogonal and delta-orthogonal kernels;
- ZerO (``_zero``, Grzejdziak 2023 part 3 Sec. A): deterministic Hadamard-based initialisation and ZerO*;
- MetaInit (``_metainit``, Dauphin & Schoenholz 2019): norms tuned to minimise the gradient quotient
  (:func:`metainit`; :func:`gradient_quotient` and its exact log-norm derivative
  :func:`gradient_quotient_gradient`);
- symmetric initialisations (``_symmetry``, Blumenfeld et al. 2020): ConstNet / LeakyNet weights.

Conventions: weights scale by ``sigma_w2`` everywhere (``W_ij ~ N(0, sigma_w2 / fan_in)``; an
orthogonal construction is multiplied by ``sqrt(sigma_w2)``, i.e. ``sigma_w2 = gain^2``). Dense
weights have shape ``(n_out, n_in)`` and convolution kernels ``(*kernel_spatial, c_out, c_in)``,
so that a kernel tap acts on channels as a dense matrix acts on a column.

Every stochastic initialiser takes ``rng`` (``None``, an ``int``, a ``SeedSequence`` or a
``numpy.random.Generator``; an int ``n`` draws exactly the stream of ``numpy.random.default_rng(n)``);
there is no ``seed`` keyword. Sizes are bounded (2^29 numbers per array, 2^31 per batched draw,
Algorithm 1 work ``<= MAX_KERNEL_WORK``, ``MetaInit`` steps ``<= MAX_STEPS``): absurd requests
raise ``ValueError`` at once.
"""

from __future__ import annotations

from ._conv import *  # noqa: F403
from ._conv import __all__ as _conv_all
from ._conv_kernels import *  # noqa: F403
from ._conv_kernels import __all__ as _conv_kernels_all
from ._dense import *  # noqa: F403
from ._dense import __all__ as _dense_all
from ._looks_linear import *  # noqa: F403
from ._looks_linear import __all__ as _looks_linear_all
from ._metainit import *  # noqa: F403
from ._metainit import __all__ as _metainit_all
from ._symmetry import *  # noqa: F403
from ._symmetry import __all__ as _symmetry_all
from ._zero import *  # noqa: F403
from ._zero import __all__ as _zero_all

__all__ = (
    list(_dense_all)
    + list(_looks_linear_all)
    + list(_conv_all)
    + list(_conv_kernels_all)
    + list(_zero_all)
    + list(_symmetry_all)
    + list(_metainit_all)
)
