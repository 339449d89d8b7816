"""Monte-Carlo simulation of finite random networks and theory-versus-simulation comparisons.

:mod:`meanfield.validation.simulators` simulates finite random networks of every theory (dense and
periodic convolutional networks, Burkholz & Dubatovka's ReLU networks, Grzejdziak's kurtosis networks, Blumenfeld et al.'s
ConstNet / LeakyNet; NumPy, or CuPy via ``backend="cupy"``); one module per theory compares the
library's predictions with simulation.
``python -m meanfield.validation`` runs every comparison; ``python -m meanfield.validation.NAME`` runs one.
"""

__all__ = ["backend", "simulators"]
