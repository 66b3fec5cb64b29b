"""`python -m pypto`: the pypto command line, the same as the `pypto` script (see pypto.cli)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
