"""Runtime fault codes written to err[0] by the numba implementations; err[1..6] carry details,
err[7] the site id of the failing IR node (set by the caller)."""
SRC_VALID = 1      # err[1] operand index, err[2..5] src vr, vc, dst vr, vc
SHAPE = 2          # err[1..4] view rows, cols, tile vr, vc
GM_BOUNDS = 3      # err[1] bound index, err[2] value, err[3] limit
SET_VALID = 4      # err[1] rows, err[2] cols, err[3] cap rows, err[4] cap cols
ASSIGN_ALIGN = 5   # err[1] addr, err[2] align
ASSIGN_CAP = 6     # err[1] addr, err[2] nbytes, err[3] capacity
