"""Device-initiated puts from Numba: a numba.cuda kernel on each PE stores its
data straight into its right neighbour's symmetric device buffer, through the
neighbour's memory as mapped in this process (DeviceHandle.peer_address), and
then signals it: each block synchronizes, one thread fences at system scope
(cuda.threadfence_system, fence.sc.sys) and adds 1 to the neighbour's signal
word with an atomic. The neighbour waits in stream order
(ushmem.signal_wait_until_on_stream on its Numba stream: no kernel spins, so it
is right with several PEs on one GPU and no MPS) and checks what arrived.

    build/tools/ushrun -n 2 python3 examples/python/device_numba.py

(with PYTHONPATH=python and the extension built for that python3; needs
numba-cuda; prints why and exits 0 without it or without a GPU).
"""
import sys

import numpy as np

import ushmem

# Older numba-cuda releases register an overload for np.row_stack, which newer NumPy
# removed: their first kernel compile then fails with AttributeError. Same function.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

try:
    from numba import cuda
except Exception as e:  # noqa: BLE001 - missing, or broken against this numpy
    cuda, numba_error = None, e


def device_array(addr, shape, dtype):
    """A Numba device array over device memory at addr (not owned: nothing is freed)."""
    class Mem:
        __cuda_array_interface__ = {"data": (addr, False), "shape": tuple(shape),
                                    "typestr": np.dtype(dtype).str, "strides": None,
                                    "version": 3, "stream": None}
    return cuda.as_cuda_array(Mem())


def stream_handle(stream):
    """The CUstream of a Numba stream as an int (its .handle is a ctypes pointer or a
    cuda-python CUstream, depending on the Numba version)."""
    h = stream.handle
    return int(getattr(h, "value", None) or int(h))


def make_kernel():
    @cuda.jit
    def put_signal(src, remote_dst, remote_sig):
        i = cuda.grid(1)
        if i < src.size:
            remote_dst[i] = src[i]          # a plain store into the peer's memory
        cuda.syncthreads()                  # the block's stores, then one signal for them
        if cuda.threadIdx.x == 0:
            cuda.threadfence_system()       # visible to every PE before the signal
            cuda.atomic.add(remote_sig, 0, np.uint64(1))
    return put_signal


def main():
    if cuda is None:
        print(f"device_numba: numba-cuda is not usable here ({type(numba_error).__name__}: "
              f"{numba_error}); nothing to do")
        return 0
    if not cuda.is_available():
        print("device_numba: Numba sees no CUDA GPU here; nothing to do")
        return 0
    ushmem.init(device="cuda")  # the local rank modulo the GPUs
    me, n = ushmem.my_pe(), ushmem.n_pes()
    right, left = (me + 1) % n, (me - 1) % n
    cuda.select_device(ushmem.cuda_device())
    put_signal = make_kernel()
    elems, threads = 1 << 18, 256
    blocks = (elems + threads - 1) // threads

    inbox = ushmem.create_buffer(elems * 4, device="cuda", zero=True)  # float32[elems]
    sig = ushmem.create_buffer(8, device="cuda", zero=True)            # uint64 signal word
    h = ushmem.device_handle()
    if not h.peer_atomics and right != me:
        print(f"PE {me}: the GPUs lack native peer atomics; the signal would not be atomic")
    remote_inbox = device_array(h.peer_address(inbox.ptr, right), (elems,), np.float32)
    remote_sig = device_array(h.peer_address(sig.ptr, right), (1,), np.uint64)
    stream = cuda.stream()
    src = cuda.to_device(np.arange(elems, dtype=np.float32) + 1000.0 * me, stream=stream)
    ushmem.barrier_all()  # every inbox and signal exists (zeroed) before any store

    put_signal[blocks, threads, stream](src, remote_inbox, remote_sig)
    # every block of the left neighbour's kernel adds 1
    ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_GE, blocks, stream_handle(stream))
    got = device_array(inbox.ptr, (elems,), np.float32).copy_to_host(stream=stream)
    stream.synchronize()
    ok = np.array_equal(got, np.arange(elems, dtype=np.float32) + 1000.0 * left)
    print(f"PE {me}/{n}: {elems * 4 >> 10} KiB from PE {left} through a Numba kernel's "
          f"stores: {'ok' if ok else 'WRONG DATA'} (signal {ushmem.signal_fetch(sig)})",
          flush=True)
    ushmem.barrier_all()  # every kernel is done before anyone frees
    inbox.free()
    sig.free()
    ushmem.finalize()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
