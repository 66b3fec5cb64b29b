"""``python -m pto.codegen --idl FILE.idl --output_dir DIR --target pypto``: pypto's IDL codegen."""
import sys

from pypto.idl.codegen import main

if __name__ == "__main__":
    sys.exit(main())
