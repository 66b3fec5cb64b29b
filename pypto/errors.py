"""One exception hierarchy: every error a user can cause is a PtoError subclass.

Each error says what was wrong, which rule it broke and how to fix it; errors raised while
running a kernel also say where (kernel, block, instruction, source line).
"""
from __future__ import annotations


class PtoError(Exception):
    """Base of every pypto error. ``rule`` names the broken rule, ``fix`` says what to do."""

    def __init__(self, message: str, *, rule: str | None = None, fix: str | None = None,
                 where: str | None = None, note: str | None = None):
        self.message = message
        self.rule = rule
        self.fix = fix
        self.where = where
        self.note = note
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [self.message]
        if self.where:
            parts.insert(0, f"[{self.where}]")
        if self.rule:
            parts.append(f"Rule: {self.rule}")
        if self.fix:
            parts.append(f"Fix: {self.fix}")
        if getattr(self, "note", None):
            parts.append(f"Note: {self.note}")
        return "\n  ".join(parts) if len(parts) > 1 else parts[0]

    def noted(self, note: str) -> "PtoError":
        """Return the same error with a note (what else the user should know)."""
        self.note = note
        self.args = (self._render(),)
        return self

    def located(self, where: str) -> "PtoError":
        """Return the same error with a location prefix (kernel, block, instruction, line)."""
        if self.where and where in self.where:
            where = self.where
        elif self.where and self.where not in where:
            where = f"{where}; {self.where}"
        self.where = where
        self.args = (self._render(),)
        return self


# -- runtime and session ---------------------------------------------------------------------
class NotInitializedError(PtoError):
    """pypto.init() was not called (or finalize() was)."""


class BackendUnavailableError(PtoError):
    """The requested backend cannot run here; the message lists every missing prerequisite."""


class SocError(PtoError):
    """Unknown SoC profile name."""


class DeviceError(PtoError):
    """Bad device index or device selection."""


class SessionError(PtoError):
    """pypto.init() asked for a different session (backend, SoC, device, options) than the one
    running."""


class ConfigError(PtoError):
    """A PYPTO_* environment variable (or option) holds a value pypto does not accept."""


class ArgumentError(PtoError, TypeError):
    """A public function or method was called with missing, extra or unknown arguments."""


# -- instructions at the seed level -----------------------------------------------------------
class InsnNotFoundError(PtoError):
    """load_insn() was given a name that is not loaded."""


class OperandError(PtoError):
    """An instruction operand is missing, out of range or of the wrong kind."""


class OperandIndexError(OperandError):
    """set_operand() index outside 0..num_operands-1."""


class OperandNotSetError(OperandError):
    """execute() with an operand slot never bound."""


class HostMemoryError(OperandError):
    """A host (numpy) array was passed where device memory is required (strict mode)."""


# -- types and shapes ---------------------------------------------------------------------------
class DTypeError(PtoError):
    """An element type that PTO (or this instruction on this SoC) does not allow."""


class DTypeMismatchError(DTypeError):
    """Operands whose element types must agree do not."""


class ShapeError(PtoError):
    """Shapes that must agree do not, or a shape is not allowed."""


# -- device (GM) memory --------------------------------------------------------------------------
class DeviceMemoryError(PtoError):
    """Base of GM (device memory) errors."""


class OutOfDeviceMemoryError(DeviceMemoryError):
    """An allocation does not fit in the SoC's GM capacity."""


class HostBackingError(OutOfDeviceMemoryError):
    """The host could not back simulated device memory (the simulator keeps GM in host RAM)."""


class UseAfterFreeError(DeviceMemoryError):
    """A freed device tensor was used."""


class GMBoundsError(DeviceMemoryError):
    """A GM view reaches outside the tensor it views."""


# -- tiles and on-chip memory ---------------------------------------------------------------------
class TileError(PtoError):
    """Base of tile declaration and placement errors."""


class TileShapeError(TileError):
    """A tile shape breaks the 32-byte / boxed-shape rules (pto-isa-semantics section 3.2)."""


class TileCapacityError(TileError):
    """A tile does not fit in its on-chip memory space."""


class TileAlignmentError(TileError):
    """A tile address is not aligned to the space's alignment."""


class ValidRegionError(TileError):
    """A valid region is out of range or does not match what the instruction needs."""


class LocationError(TileError):
    """A tile lives in a memory space the instruction cannot use."""


class LayoutError(TileError):
    """A tile's layout (ND, DN, Zz, Nz, Zn) is not one the instruction accepts."""


# -- kernels -------------------------------------------------------------------------------------
class KernelError(PtoError):
    """Misuse of the kernel DSL."""


class DslContextError(KernelError):
    """A pypto.pto function was called outside an @pypto.kernel body."""


class TraceError(KernelError):
    """The kernel body did something that cannot be traced (e.g. Python `if` on a runtime value)."""


class UndefinedBehaviorError(KernelError):
    """SimOptions(checks="strict"): the kernel did something whose NPU result is undefined
    (integer division by zero, a shift count past the width, a NaN in a sort, ...)."""


class HazardError(KernelError):
    """A mistake the chip punishes that pypto's checker found (``pypto.check`` lists them all);
    ``.finding`` holds the kind, both statements, the pipes and the bytes."""


class PipeHazardError(HazardError):
    """RAW / WAR / WAW across pipes with no flag between them, or a missing pipe_barrier."""


class FlagError(HazardError):
    """A flag set twice without a wait, or left set when the kernel ends."""


class DeadlockError(FlagError):
    """A wait_flag no set_flag satisfies: the chip would hang."""


class TileOverlapError(HazardError):
    """Bytes written through one tile read through another (overlapping tiles, UB scratch)."""


class UninitializedReadError(HazardError):
    """A read of on-chip bytes nothing wrote since the kernel started (checks="strict")."""


class StaleReadError(HazardError, ValidRegionError):
    """A read of more rows or columns of a tile than were written into it (stale data on the chip)."""


class HazardWarning(UserWarning):
    """A checker finding where the chip's behaviour is tolerated or merely unspecified."""


class IndexRangeError(KernelError):
    """A runtime index or offset operand lies outside what the instruction may touch."""


class TimelineError(PtoError):
    """pypto.timeline cannot run here (it needs the simulator's recorded instruction stream)."""


class CommError(PtoError):
    """Many devices: a communication instruction or the MPI world it runs on was misused."""


class MpiUnavailableError(CommError, BackendUnavailableError):
    """More than one device was asked for, but mpi4py (with an MPI library) is not installed."""


class CommDeadlockError(CommError, DeadlockError):
    """Every rank still running is blocked in a TWAIT that nothing can satisfy any more."""


class CommOrderError(CommError, HazardError):
    """A TNOTIFY may overtake the data of an earlier TPUT/TGET/collective (no PIPE_ALL barrier)."""


class RankFailedError(CommError):
    """pypto.launch_ranks: a rank raised (its error is in the message) or died."""


class NotSimulatedError(PtoError):
    """The instruction is in the ISA table but its semantics are not built on this backend yet."""


class VerifyError(KernelError):
    """The IR verifier found an illegal instruction use."""


# -- the NPU backend (CANN, bisheng, pto-isa's CPU backend) -----------------------------------
class NpuError(PtoError):
    """Base of the NPU backend's errors (build, runtime, launch)."""


class NpuUnavailableError(BackendUnavailableError):
    """A prerequisite of the npu / npu-cpusim backend is missing; the message lists every one."""


class NpuCompileError(NpuError):
    """The C++ compiler (bisheng or g++) rejected a kernel. Carries the argv, the return code, the
    kept source and the compiler's log paths, and the first error line."""

    def __init__(self, message: str, *, argv=(), returncode=None, source_path=None, log_path=None,
                 first_error: str = "", **kw):
        self.argv = list(argv)
        self.returncode = returncode
        self.source_path = source_path
        self.log_path = log_path
        self.first_error = first_error
        super().__init__(message, **kw)


class NpuLaunchError(NpuError):
    """A launch the backend refuses before calling the chip (block dim, argument count/types)."""


class AclError(NpuError):
    """A CANN runtime (ACL) call failed. ``api``, ``code``, ``symbol`` (e.g. ACL_ERROR_RT_NO_DEVICE)
    and ``runtime_message`` (aclGetRecentErrMsg) say which and why."""

    def __init__(self, message: str, *, api: str = "", code: int = 0, symbol: str = "",
                 runtime_message: str = "", **kw):
        self.api = api
        self.code = code
        self.symbol = symbol
        self.runtime_message = runtime_message
        super().__init__(message, **kw)


class AclInitError(AclError):
    """aclInit/aclFinalize failed (not initialised, repeat finalize, bad config)."""


class AclDeviceError(AclError):
    """No Ascend device, or an invalid device id."""


class AclMemoryError(AclError):
    """Device or host-pinned allocation failed, or a copy was given a bad pointer or size."""


class AclParamError(AclError):
    """An ACL call was given an invalid parameter or handle."""


class AclUnsupportedError(AclError):
    """The runtime or SoC does not support the requested feature."""


class KernelFaultError(AclError):
    """The kernel faulted on the device (AI Core exception, trap, timeout), reported at sync."""


# -- custom instructions (IDL) ------------------------------------------------------------------
class CustomReferenceError(PtoError):
    """A custom instruction's reference could not compute, or its result and the instruction's
    differ (CustomInsn.verify)."""


class IdlError(PtoError):
    """An IDL file (or a custom operator built from one) is wrong: carries the file, line and
    column (1-based) and shows the line with a caret under the column."""

    def __init__(self, message: str, *, file: str = "<idl>", line: int = 1, column: int = 1,
                 source: str | None = None, rule: str | None = None, fix: str | None = None,
                 note: str | None = None):
        self.file, self.line, self.column = file, line, column
        lines = source.split("\n") if source else []       # the parser counts lines at \n only
        text = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else None
        self.excerpt = None if text is None else \
            f"{text.expandtabs(1)}\n{' ' * max(0, column - 1)}^"
        head = f"{file}:{line}:{column}: {message}"
        if self.excerpt:
            head += "\n    " + self.excerpt.replace("\n", "\n    ")
        super().__init__(head, rule=rule, fix=fix, note=note)


class IdlSyntaxError(IdlError):
    """The text does not follow the IDL grammar."""


class IdlNameError(IdlError):
    """An undefined, duplicate or wrongly assigned name, or an output never assigned."""


class IdlTypeError(IdlError):
    """An unknown dtype or a dtype rule broken (mixed dtypes, @ of an illegal type, ...)."""


class IdlShapeError(IdlError):
    """Shapes that do not broadcast or multiply, or symbols bound to different sizes."""


class IdlFunctionError(IdlError):
    """An unknown function, a wrong number of arguments, or a form not lowered yet."""


__all__ = [name for name, obj in dict(globals()).items()
           if isinstance(obj, type) and issubclass(obj, PtoError)]
