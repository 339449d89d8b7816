from meanfield.cli import validate_main

if __name__ == "__main__":  # not when a spawned worker process re-imports the main module
    raise SystemExit(validate_main(prog="python -m meanfield.validation"))
