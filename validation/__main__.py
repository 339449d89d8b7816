from .runner import main

if __name__ == "__main__":  # not when a spawned worker process re-imports the main module
    raise SystemExit(main(prog="python -m meanfield.validation"))
