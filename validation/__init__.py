"""Monte-Carlo simulation of finite random networks and theory-versus-simulation comparisons.

:mod:`meanfield.validation.simulators` simulates finite random networks of every theory (dense and
periodic convolutional networks, seed 001's ReLU networks, seed 002's kurtosis networks, seed 000's
ConstNet / LeakyNet; NumPy, or CuPy via ``backend="cupy"``); one module per theory compares the
library's predictions with simulation.
``python -m meanfield.validation`` runs every comparison; ``python -m meanfield.validation.NAME`` runs one.
"""

__all__ = ["backend", "simulators"]
