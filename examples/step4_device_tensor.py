import pypto
pypto.init()
add_insn = pypto.load_insn("add")
a = pypto.Tensor([1, 2, 3, 4, 5], dtype=pypto.float32)        # allocated in device (GM) memory
b = pypto.Tensor([10, 20, 30, 40, 50], dtype=pypto.float32)
c = pypto.Tensor([0, 0, 0, 0, 0], dtype=pypto.float32)
add_insn.set_operand(0, a)
add_insn.set_operand(1, b)
add_insn.set_operand(2, c)
add_insn.execute()
print(f"result: {c.numpy()}")   # device -> host copy: [11. 22. 33. 44. 55.]
