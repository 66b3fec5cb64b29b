import numpy as np, pypto
pypto.init()
add_insn = pypto.load_insn("add")
a = np.array([1, 2, 3, 4, 5], dtype=np.float32)
b = np.array([10, 20, 30, 40, 50], dtype=np.float32)
c = np.zeros(5, dtype=np.float32)
add_insn.set_operand(0, a)   # input 0
add_insn.set_operand(1, b)   # input 1
add_insn.set_operand(2, c)   # output
add_insn.execute()
print(f"result: {c}")        # [11. 22. 33. 44. 55.]
