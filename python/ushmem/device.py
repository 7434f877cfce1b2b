"""The device API's handle from Python: what kernels (CUDA C++, Triton, Numba)
need to put, get and signal on the device symmetric heap themselves.

    h = ushmem.device_handle()          # world handle; device_handle(team) for a team
    h.bytes()                           # the shmemx_dev_t a CUDA kernel takes by value
    h.peer_address(buf.ptr, pe)         # pe's copy of a device-heap address, mapped here
    h.peer_bases()                      # [heap base of each team PE as mapped here, 0: not]
    h.wait_ok                           # device-side waits allowed (else device_why() says why)

DeviceHandle is a ctypes.Structure with the fields of shmemx_dev_t
(include/shmemx_device_types.h), in the same order and of the same types; the
test suite checks the layout against offsetof in C. Pointers are uint64 ints.
"""
import ctypes

from . import _ushmem

_u32, _i32, _u64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64


def _error(code, message):
    e = _ushmem.Error(message)
    e.code, e.message = code, message
    return e


class DeviceHandle(ctypes.Structure):
    """shmemx_dev_t: the handle a kernel takes by value (see include/shmemx_device.cuh).

    Made by device_handle(); its fields are a snapshot of shmemx_dev_get /
    shmemx_team_dev_get. PE numbers (my_pe, n_pes, and the pe of the methods) are
    relative to the handle's team."""

    _fields_ = [
        ("magic", _u32),         # DEV_MAGIC
        ("version", _u32),       # DEV_VERSION
        ("my_pe", _i32),         # in the handle's team
        ("n_pes", _i32),
        ("team_start", _i32),    # team PE i is world PE team_start + i * team_stride
        ("team_stride", _i32),
        ("world_pe", _i32),
        ("world_n_pes", _i32),   # entries of the peer_base table
        ("team_slot", _i32),
        ("flags", _u32),         # DEV_F_*
        ("wait_reason", _i32),   # DEV_WAIT_*
        ("gpu_pes", _i32),
        ("sm_sum", _i32),
        ("sm_total", _i32),
        ("gpu_pci", _i32 * 3),
        ("reserved0", _i32),
        ("heap_base", _u64),     # this PE's device heap: [heap_base, heap_base + heap_size)
        ("heap_size", _u64),
        ("peer_base", _u64),     # device address of uint64[world_n_pes], by world PE
        ("sync", _u64),
        ("abort_flag", _u64),
        ("wait_timeout_ns", _u64),
        ("proxy", _u64),         # device address of the reverse-offload ring, 0: none
        ("reserved", _u64 * 3),
        ("near_first", _i32),    # world PE of near_base[0]
        ("near_n", _i32),        # entries of near_base in use
        ("near_base", _u64 * _ushmem.DEV_NEAR_MAX),  # peer_base[near_first + i], copied
    ]

    def bytes(self):
        """The raw shmemx_dev_t (sizeof(shmemx_dev_t) bytes), for a kernel argument blob."""
        return ctypes.string_at(ctypes.addressof(self), ctypes.sizeof(self))

    @property
    def peer_base_ptr(self):
        """Device address (int) of the world peer table: uint64[world_n_pes], entry w is
        world PE w's device heap as mapped here (0: not mapped; this PE: heap_base).
        Index it with world_pe_of(pe) for a team handle."""
        return int(self.peer_base)

    @property
    def wait_ok(self):
        """Whether device-side waits and barriers may spin on this PE (DEV_F_WAIT_OK);
        when False, ushmem.device_why() says why."""
        return bool(self.flags & _ushmem.DEV_F_WAIT_OK)

    @property
    def peer_atomics(self):
        """Whether every mapped peer has native GPU atomics (DEV_F_PEER_ATOMICS)."""
        return bool(self.flags & _ushmem.DEV_F_PEER_ATOMICS)

    @property
    def one_gpu(self):
        """Whether every PE of the job is on this PE's GPU and mapped here (DEV_F_ONE_GPU):
        device barriers and collectives then order at GPU scope (USHMEM_DEVICE_SCOPE)."""
        return bool(self.flags & _ushmem.DEV_F_ONE_GPU)

    @property
    def team(self):
        """The team the handle was made for (None: TEAM_WORLD)."""
        return self.__dict__.get("_team")

    def world_pe_of(self, pe):
        """The world PE of the handle's team PE pe."""
        pe = self._check_pe(pe)
        return self.team_start + pe * self.team_stride

    def _check_pe(self, pe):
        if isinstance(pe, bool) or not isinstance(pe, int):
            raise TypeError(f"pe must be an int, not {type(pe).__name__}")
        if not 0 <= pe < self.n_pes:
            raise _error(_ushmem.ERR_BADPE,
                         f"PE {pe} is out of range (the handle's team has {self.n_pes} PEs)")
        return pe

    def peer_bases(self):
        """[int] for each team PE in team order: the base of its device heap as mapped in
        this process (what the device table holds for it), 0 where it is not mapped."""
        cached = self.__dict__.get("_peer_bases")
        if cached is None:
            cached = _ushmem._dev_peer_bases(self.team)
            self.__dict__["_peer_bases"] = cached
        return list(cached)

    def peer_address(self, addr, pe):
        """The address of symmetric device address addr (an int, or anything with .ptr or
        .data_ptr()) on team PE pe, usable by kernels on this GPU; addr itself for this PE.
        Raises ValueError when addr is not in the device heap, ushmem.Error
        (ERR_UNREACHABLE) when pe's heap is not mapped here."""
        if hasattr(addr, "data_ptr"):
            addr = addr.data_ptr()
        elif hasattr(addr, "ptr") and not isinstance(addr, int):
            addr = addr.ptr
        if isinstance(addr, bool) or not isinstance(addr, int):
            raise TypeError(f"addr must be an int address, not {type(addr).__name__}")
        pe = self._check_pe(pe)
        off = addr - self.heap_base
        if not 0 <= off < self.heap_size:
            raise ValueError(f"address {addr:#x} is not in this PE's device heap "
                             f"[{self.heap_base:#x}, +{self.heap_size:#x})")
        if pe == self.my_pe:
            return addr
        base = self.peer_bases()[pe]
        if base == 0:
            raise _error(_ushmem.ERR_UNREACHABLE,
                         f"PE {pe}'s device heap is not mapped on this GPU (another host, or "
                         "no peer access between the GPUs)")
        return base + off

    def __repr__(self):
        return (f"DeviceHandle(my_pe={self.my_pe}, n_pes={self.n_pes}, world_pe={self.world_pe}, "
                f"heap_base={self.heap_base:#x}, heap_size={self.heap_size:#x}, "
                f"flags={self.flags:#x}, wait_ok={self.wait_ok})")


def device_handle(team=None):
    """The device API handle of team (None: TEAM_WORLD) on this PE, a DeviceHandle
    (shmemx_dev_get / shmemx_team_dev_get). Raises ushmem.Error with the library's
    reason when this PE has no device heap (ERR_UNSUPPORTED) or the team is not usable."""
    raw = _ushmem._dev_get(team)
    if len(raw) != ctypes.sizeof(DeviceHandle):  # pragma: no cover - the layout test catches it
        raise RuntimeError(f"shmemx_dev_t is {len(raw)} bytes, DeviceHandle "
                           f"{ctypes.sizeof(DeviceHandle)}: the mirror is out of date")
    h = DeviceHandle.from_buffer_copy(raw)
    h.__dict__["_team"] = None if team is None or team is _ushmem.TEAM_WORLD else team
    return h


def device_why():
    """Why device-side waits and barriers are off on this PE (one line), or None when
    they are allowed (shmemx_dev_why)."""
    return _ushmem._dev_why()
