"""The session: init/finalize, device selection, the active backend and SoC profile."""
from __future__ import annotations

import weakref
from typing import Any

from . import backends, config
from .errors import DeviceError, NotInitializedError, SessionError
from .isa.soc import SocProfile, get_profile


class Session:
    """One initialised pypto runtime. ``with pypto.init():`` finalizes on exit."""

    def __init__(self, backend, soc: SocProfile, device: int, strict_host_operands: bool):
        self.backend = backend
        self.soc = soc
        self.device = device
        self.strict_host_operands = strict_host_operands
        self.tensors: "weakref.WeakSet[Any]" = weakref.WeakSet()

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        if _session is self:
            finalize()

    def __repr__(self) -> str:
        return (f"<pypto session backend={self.backend.name} soc={self.soc.name} "
                f"device={self.device}>")


_session: Session | None = None
# Called around every kernel launch when set (pypto.testing.golden records and replays through
# it): hook(kernel_function, block_dim, args, launch) where launch() runs the launch.
launch_hook = None


def _choose_backend(name: str | None) -> str:
    if name:
        return name
    env = config.env().get("PYPTO_BACKEND")
    if env:
        return env
    return "npu" if backends.usable("npu") else "sim"


def init(backend: str | None = None, soc: str | None = None, device: int = 0, *,
         strict_host_operands: bool = False, sim: Any = None, devices: int | None = None) -> Session:
    """Start the runtime: load the instruction table, pick the backend and SoC profile.

    backend: "sim" | "npu" | None (PYPTO_BACKEND, else sim unless an NPU is usable).
    soc: "a2a3" (default) | "a5". sim: a pypto.SimOptions. devices: simulated NPUs, one per MPI
    rank (default: as many as ``mpiexec -n N`` started; this process drives device rank).
    Calling init() again with the same (or no) arguments returns the running session.
    """
    global _session
    if _session is not None:
        running = dict(backend=_session.backend.name, soc=_session.soc.name, device=_session.device,
                       strict_host_operands=_session.strict_host_operands,
                       sim=getattr(_session.backend, "options", None))
        asked = dict(backend=backend, soc=get_profile(soc).name if soc else None, device=device,
                     strict_host_operands=strict_host_operands, sim=sim)
        differs = {k: v for k, v in asked.items()
                   if v is not None and not (k == "device" and v == 0)
                   and not (k == "strict_host_operands" and v is False) and running[k] != v}
        if not differs:
            return _session
        raise SessionError(f"pypto is already initialised ({_session!r}); asked again with {differs}",
                       rule="one session at a time", fix="call pypto.finalize() before init() with other settings")
    name = _choose_backend(backend)
    profile = get_profile(soc or config.env().get("PYPTO_SOC"))
    mod = backends.module(name)
    options = sim
    if name == "sim" and options is None:
        from .backends.sim.options import SimOptions
        options = SimOptions()
    if devices is not None:
        if name != "sim":
            raise DeviceError(f"pypto.init(devices={devices}) on the {name} backend",
                              rule="devices= sets the simulator's device count; on NPUs each "
                                   "process drives the device it sets",
                              fix="leave devices out, or use backend='sim'")
        import dataclasses
        options = dataclasses.replace(options, devices=devices)
    be = mod.create(profile, device, options)
    ranked = getattr(getattr(be, "world", None), "size", 1) > 1
    if ranked and device not in (0, be.device):
        raise DeviceError(f"device {device!r}: this process is rank {be.device} of "
                          f"{be.device_count()} and drives device {be.device}",
                          rule="one simulated NPU per MPI rank (as aclrtSetDevice(rank) in HCCL "
                               "programs)", fix="leave device out")
    if not isinstance(device, int) or isinstance(device, bool) or not 0 <= device < be.device_count():
        raise DeviceError(f"device {device!r} does not exist: {name} has {be.device_count()} device(s)",
                          fix="use device=0")
    _session = Session(be, profile, be.device if ranked else device, strict_host_operands)
    return _session


def finalize() -> None:
    """Free every device tensor of the session and end it. Safe to call twice."""
    global _session
    s = _session
    if s is None:
        return
    for t in list(s.tensors):
        t._release()
    s.backend.close()
    _session = None


def is_initialized() -> bool:
    return _session is not None


def current() -> Session:
    if _session is None:
        raise NotInitializedError("pypto is not initialised",
                                  rule="device memory, instructions and kernels need a session",
                                  fix="call pypto.init() first")
    return _session


def get_device_count() -> int:
    """Devices of the active backend (or of the backend init() would pick)."""
    if _session is not None:
        return _session.backend.device_count()
    name = _choose_backend(None)
    if name == "sim":
        from .backends.sim.world import launcher_size
        return max(1, launcher_size())
    ok, _ = backends.is_available(name)
    return 0 if not ok else 1


def set_device(i: int) -> None:
    s = current()
    n = s.backend.device_count()
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
        raise DeviceError(f"set_device({i!r}): {s.backend.name} has {n} device(s)",
                          rule="device ids run from 0 to get_device_count()-1", fix="use set_device(0)")
    if n > 1 and getattr(s.backend, "world", None) is not None and i != s.backend.device:
        raise DeviceError(f"set_device({i}): this process is rank {s.backend.device} and drives "
                          f"simulated device {s.backend.device}",
                          rule="one simulated NPU per MPI rank: another device's memory is reached "
                               "with the communication instructions (pto.remote, TPUT, TGET)",
                          fix=f"call set_device(pypto.rank()) (here {s.backend.device}), as "
                              "aclrtSetDevice(rank % devices) does in HCCL programs")
    s.device = i


def rank() -> int:
    """This process's rank: the simulated device it drives (0 without MPI)."""
    w = getattr(current().backend, "world", None)
    return w.rank if w is not None else 0


def barrier() -> None:
    """Wait until every rank reaches this point (MPI_Barrier; a rank waiting here counts as
    blocked for TWAIT's deadlock report); GM written by peers is visible after it."""
    w = getattr(current().backend, "world", None)
    if w is not None:
        w.barrier()


def stats():
    """H2D/D2H copy counts and bytes, live device memory, launches, compiles."""
    from dataclasses import replace
    return replace(current().backend.stats)


def reset_stats() -> None:
    st = current().backend.stats
    live, nb, peak = st.live_tensors, st.live_bytes, st.live_bytes
    from .backends.base import Stats
    current().backend.stats = Stats(live_tensors=live, live_bytes=nb, peak_bytes=peak)
