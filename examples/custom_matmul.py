"""The tutorial's full example, end to end: a custom MatMul instruction from an IDL file.

In a temporary directory: (1) the tutorial's matmul.idl, (2) ``python3 -m pto.codegen --idl
matmul.idl --output_dir ./generated --target pypto``, (3) ``g++ -shared -fPIC -O2 -o
matmul_pypto.so generated/matmul_pypto.cpp`` (no CANN needed for the pypto target), (4) the
tutorial's Python: load the library before init(), load_insn("MatMul"), execute, print.
Run: .venv/bin/python examples/custom_matmul.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        shutil.copy(HERE / "idl" / "matmul.idl", "matmul.idl")                                   # 1
        subprocess.run([sys.executable, "-m", "pto.codegen", "--idl", "matmul.idl",              # 2
                        "--output_dir", "./generated", "--target", "pypto"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["g++", "-shared", "-fPIC", "-O2", "-o", "matmul_pypto.so",               # 3
                        "generated/matmul_pypto.cpp"], check=True)

        import pypto                                                                             # 4
        pypto.load_custom_insn("./matmul_pypto.so")   # note: before init()
        pypto.init()
        matmul_insn = pypto.load_insn("MatMul")
        a = pypto.Tensor([[1, 2], [3, 4], [5, 6]], dtype=pypto.float32)       # [3, 2]
        b = pypto.Tensor([[7, 8, 9], [10, 11, 12]], dtype=pypto.float32)      # [2, 3]
        c = pypto.Tensor([[0, 0, 0], [0, 0, 0], [0, 0, 0]], dtype=pypto.float32)
        matmul_insn.set_operand(0, a)
        matmul_insn.set_operand(1, b)
        matmul_insn.set_operand(2, c)
        matmul_insn.execute()
        print(f"matmul result:\n{c.numpy()}")


if __name__ == "__main__":
    main()
