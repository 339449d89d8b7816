from ._runner import main

raise SystemExit(main(prog="python -m meanfield.figures"))
