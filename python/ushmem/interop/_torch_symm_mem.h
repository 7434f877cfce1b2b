// Internal to the torch symmetric-memory backend: what the ops of
// _torch_symm_mem_ops.cpp (torch.ops.ushmem) use of the allocator and handles
// of _torch_symm_mem.cpp. Both files are compiled into one extension by
// torch_symm_mem.py.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/symm_mem/SymmetricMemory.hpp>

#include <string>

#include "../ushmem_capi.h"

namespace ushmem_symm
{

using c10d::symmetric_memory::SymmetricMemory;

// The package's C API table (set by ushmem_symm_mem_set_capi), and the check
// every entry point makes first: loaded through the Python module, ushmem
// initialized. call names the caller in the error.
extern const ushmem_capi_t *capi;
const ushmem_capi_t *api(const char *call);

void cuda_check(cudaError_t e, const char *what);

// Where PE pe's copy of [ptr, ptr + nbytes) is, as an address of this PE's heap
// (what ushmem's calls take with pe), from any rendezvous of ptr's block that
// includes pe; a TORCH_CHECK naming ushmem.<call> when there is none.
void *peer_addr(const void *ptr, size_t nbytes, int pe, const char *call);

// The rendezvous of the block holding ptr on group (made if needed: collective
// over the group then), positioned at ptr.
c10::intrusive_ptr<SymmetricMemory> handle_of(void *ptr, const std::string &group);

// Of a handle from handle_of (torch's header declares some of these only in
// some releases, so they are reached here, not through SymmetricMemory):
size_t handle_offset(SymmetricMemory &h);                      // ptr's offset in its block
bool handle_direct(SymmetricMemory &h);                        // every member mapped here
int handle_pe(SymmetricMemory &h, int r);                      // group rank r's ushmem PE
void *handle_peer_addr(SymmetricMemory &h, int r, size_t off); // r's copy of ptr + off

} // namespace ushmem_symm
