"""Monte-Carlo simulation of finite random networks and theory-versus-simulation comparisons.

``validation.networks`` simulates dense and periodic convolutional networks (NumPy, or CuPy via
``backend="cupy"``); one module per theory compares the library's predictions with simulation.
``python -m meanfield.validation`` runs every comparison; ``python -m meanfield.validation.NAME`` runs one.
"""

__all__ = ["backend", "networks"]
