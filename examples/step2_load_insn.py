import pypto
pypto.init()
add_insn = pypto.load_insn("add")
print(f"name: {add_insn.name}")                 # add
print(f"id: {hex(add_insn.insn_id)}")           # 0x1001
print(f"operands: {add_insn.num_operands}")     # 3  (2 inputs, 1 output)
