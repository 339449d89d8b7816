"""Theory-versus-simulation comparisons: one module per paper, each ``run(...)`` returning rows.

The simulations themselves are the library's (:mod:`meanfield.simulate`: dense and periodic
convolutional networks, Burkholz & Dubatovka's ReLU networks, Grzejdziak's kurtosis networks,
Blumenfeld et al.'s ConstNet / LeakyNet; NumPy, CuPy or PyTorch via ``backend=``); the modules here
compare the library's predictions with them. ``meanfield.validation.simulators`` is a deprecated
alias of :mod:`meanfield.simulate`.
``python -m meanfield.validation`` runs every comparison; ``python -m meanfield.validation.NAME`` runs one.
"""

__all__ = ["backend"]
