"""The error record: an int64 array a kernel writes a fault into before it returns (the
simulator's numba code, and the guards the NPU backends emit into the C++).

err[0] code (0 = no fault), err[1..6] details, err[7] site id of the failing IR node (set by the
generated caller), err[8] block index. Codes and their details:"""
SRC_VALID = 1      # err[1] operand index, err[2..5] src vr, vc, dst vr, vc
SHAPE = 2          # err[1..4] view rows, cols, tile vr, vc
GM_BOUNDS = 3      # err[1] bound index, err[2] value, err[3] limit
SET_VALID = 4      # err[1] rows, err[2] cols, err[3] cap rows, err[4] cap cols
ASSIGN_ALIGN = 5   # err[1] addr, err[2] align
ASSIGN_CAP = 6     # err[1] addr, err[2] nbytes, err[3] capacity
ASSIGN_NEG = 7     # err[1] addr
SCALAR_RANGE = 8   # err[1] operand index, err[2] value, err[3] lo, err[4] hi (integer scalars)
SCALAR_INF = 9     # err[1] operand index (a finite float scalar overflows the element type)
VALID_ROWS = 10    # err[1] operand index, err[2] its valid rows, err[3] dst valid rows

SIZE = 16
SITE = 7
BLOCK = 8
