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
UNDEFINED = 11     # checks="strict": err[1] kind (UB_* below), err[2] operand index, err[3] row,
                   # err[4] col, err[5] the offending value (as int64 bits for floats)
VALID_COLS = 12    # err[1] operand index, err[2] its valid cols, err[3] dst valid cols
RANGE = 13         # err[1] what (RANGE_* below), err[2] value, err[3] lo, err[4] hi
UNIT_RULE = 14     # a rule of one instruction's own (its unit decodes it: faults.UNIT_RULES):
                   # err[1] the unit's rule id, err[2..6] the values involved
COMM = 15          # a communication instruction failed in Python (sim/lib/comm.py): err[1] the
                   # ticket of its parked PtoError (sim/world.py take_error)

SIZE = 16
SITE = 7
BLOCK = 8
STRICT = 15        # set to 1 by the simulator before a launch with SimOptions(checks="strict")

# Kinds of UNDEFINED: where the NPU's result is not defined, the simulator gives a documented
# deterministic value by default and reports the use with checks="strict".
UB_DIV_ZERO = 1    # integer division (or remainder) by zero
UB_SHIFT = 2       # a shift count outside 0 .. bits - 1
UB_NAN_ORDER = 3   # a NaN where the NPU's ordering of NaNs is undefined (sorts)
UB_INDEX = 4       # a gather/scatter index outside the tile or tensor
UB_CVT_NAN = 5     # NaN or inf converted to an integer type
UB_DUP_INDEX = 6   # two scatter indices hit the same element (which write wins is undefined)
UB_OUT_OF_TILE = 7  # the NPU's code reads or writes outside an operand tile (a5 TCOLSUM isBinary, 1 row)

# What a RANGE fault is about (a runtime value outside a range the instruction needs).
RANGE_OFFSET = 1   # TEXTRACT/TINSERT window offset
RANGE_COUNT = 2    # a count operand (TMRGSORT lists, TSORT32 blocks, ...)
RANGE_INDEX = 3    # a gather / scatter index (always checked: outside memory)
RANGE_EXTENT = 4   # a runtime size an instruction writes (TTRANS: src valid cols/rows vs dst)
RANGE_MKN = 5      # a cube operation's m, k or n (1 .. 4095)
