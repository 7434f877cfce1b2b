/* ushmem device API: the handle kernels receive, and its constants.
 *
 * Plain C (C99 and later, C++, CUDA, NVRTC): the host library fills a
 * shmemx_dev_t (shmemx_dev_get / shmemx_team_dev_get in shmemx.h) and the
 * program passes it by value to kernels, which use it through the functions of
 * shmemx_device.cuh. Python mirrors the layout (ushmem.device_handle()); a
 * test checks the two against offsetof. Pointers are stored as uint64_t so the
 * layout is the same for every compiler and for ctypes. */
#ifndef SHMEMX_DEVICE_TYPES_H
#define SHMEMX_DEVICE_TYPES_H

#if defined(__CUDACC_RTC__)
/* NVRTC has no host headers: the fixed-width types it needs. */
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef unsigned long long uintptr_t;
#else
#include <stdint.h>
#endif

#define SHMEMX_DEV_MAGIC   0x75534844u /* "uSHD" */
#define SHMEMX_DEV_VERSION 2u          /* 2: near_first, near_n, near_base */

/* Heap bases the handle carries itself (near_base): a kernel that takes the handle as a
 * __grid_constant__ parameter reads them from the constant bank, which the acquire loads
 * of waits do not invalidate (the peer_base table in global memory goes through L1). */
#define SHMEMX_DEV_NEAR_MAX 12 /* the handle stays within 256 bytes */

/* flags */
#define SHMEMX_DEV_F_WAIT_OK      0x1u /* device-side waits and barriers may spin */
#define SHMEMX_DEV_F_PEER_ATOMICS 0x2u /* every mapped peer has native GPU atomics */
#define SHMEMX_DEV_F_WORLD        0x4u /* the handle's team is SHMEM_TEAM_WORLD */
#define SHMEMX_DEV_F_TIMESLICED   0x8u /* waits allowed by USHMEM_DEVICE_WAIT=timesliced */
/* every PE of the job is on this GPU and mapped here: barriers order at GPU scope */
#define SHMEMX_DEV_F_ONE_GPU 0x10u

/* wait_reason: why SHMEMX_DEV_F_WAIT_OK is clear (shmemx_dev_why() says it in words). */
#define SHMEMX_DEV_WAIT_SAFE       0 /* waits are allowed */
#define SHMEMX_DEV_WAIT_SHARED_GPU 1 /* PEs share a GPU without MPS */
#define SHMEMX_DEV_WAIT_MPS_SHARES 2 /* MPS, but the PEs' SM shares exceed the GPU */
#define SHMEMX_DEV_WAIT_NO_DEVICE  3 /* this PE has no device heap */

/* Comparison and signal operators: the values of SHMEM_CMP_* / SHMEM_SIGNAL_*
 * (shmem.h), usable where shmem.h is not (NVRTC). */
#define SHMEMX_DEV_CMP_EQ     0
#define SHMEMX_DEV_CMP_NE     1
#define SHMEMX_DEV_CMP_GT     2
#define SHMEMX_DEV_CMP_GE     3
#define SHMEMX_DEV_CMP_LT     4
#define SHMEMX_DEV_CMP_LE     5
#define SHMEMX_DEV_SIGNAL_SET 0
#define SHMEMX_DEV_SIGNAL_ADD 1

/* Layout of the device sync area, at heap_base + SHMEMX_DEV_SYNC_OFFSET of
 * every PE (inside the device heap's internal region, same offsets on every
 * PE):
 *   epoch[s]      this PE's completed device barriers on team slot s
 *   inbox[s][i]   the epoch team member i reached in its latest barrier on s
 *   reported      set once this PE printed a refusal (one line per job)
 *   any_next      where this PE's next device test_any / wait_until_any scan
 *                 starts (shmemx_device_wait.cuh)
 *   scan[s][r]    the device collect's prefix-sum cells on slot s: round r's
 *                 partial sum + 1, 0 when empty; the last word hands the
 *                 result to the calling group (shmemx_device_coll.cuh)
 *   stage[s][b]   two buffers per slot that small device collectives push
 *                 into (b: the parity of the slot's epoch at their entry) */
#define SHMEMX_DEV_SYNC_OFFSET  ((uint64_t)128 << 10)
#define SHMEMX_DEV_TEAM_SLOTS   256
#define SHMEMX_DEV_BARRIER_MAX  128 /* team members a device barrier supports */
#define SHMEMX_DEV_EPOCH_OFF    0
#define SHMEMX_DEV_REPORTED_OFF ((uint64_t)SHMEMX_DEV_TEAM_SLOTS * 8)
#define SHMEMX_DEV_ANY_OFF      (SHMEMX_DEV_REPORTED_OFF + 8)
#define SHMEMX_DEV_INBOX_OFF    ((uint64_t)4 << 10)
#define SHMEMX_DEV_SCAN_WORDS   8 /* per slot: log2(SHMEMX_DEV_BARRIER_MAX) rounds + 1 */
#define SHMEMX_DEV_SCAN_OFF                                                                        \
    (SHMEMX_DEV_INBOX_OFF + (uint64_t)SHMEMX_DEV_TEAM_SLOTS * SHMEMX_DEV_BARRIER_MAX * 8)
#define SHMEMX_DEV_STAGE_OFF                                                                       \
    (SHMEMX_DEV_SCAN_OFF + (uint64_t)SHMEMX_DEV_TEAM_SLOTS * SHMEMX_DEV_SCAN_WORDS * 8)
#define SHMEMX_DEV_STAGE_BYTES 8192 /* per buffer */
#define SHMEMX_DEV_SYNC_SIZE                                                                       \
    (SHMEMX_DEV_STAGE_OFF + (uint64_t)SHMEMX_DEV_TEAM_SLOTS * 2 * SHMEMX_DEV_STAGE_BYTES)

typedef struct shmemx_dev {
    uint32_t magic;       /* SHMEMX_DEV_MAGIC: a zeroed handle traps instead of writing */
    uint32_t version;     /* SHMEMX_DEV_VERSION */
    int32_t my_pe, n_pes; /* in the handle's team: device calls take team-relative PEs */
    int32_t team_start;   /* team PE i is world PE team_start + i * team_stride */
    int32_t team_stride;
    int32_t world_pe;    /* this PE in SHMEM_TEAM_WORLD */
    int32_t world_n_pes; /* entries of peer_base */
    int32_t team_slot;   /* the team's sync slot (device barrier state) */
    uint32_t flags;      /* SHMEMX_DEV_F_* */
    int32_t wait_reason; /* SHMEMX_DEV_WAIT_* */
    int32_t gpu_pes;     /* PEs of the job on this PE's GPU */
    int32_t sm_sum;      /* MPS: SMs the PEs on this GPU may use together */
    int32_t sm_total;    /* SMs of this GPU */
    int32_t gpu_pci[3];  /* PCI domain, bus, device of this PE's GPU */
    int32_t reserved0;
    uint64_t heap_base;       /* this PE's device heap: symmetric addresses are */
    uint64_t heap_size;       /* [heap_base, heap_base + heap_size) */
    uint64_t peer_base;       /* device address of uint64_t[world_n_pes]: world PE w's heap as
                                 mapped here, 0 if not mapped; entry world_pe is heap_base */
    uint64_t sync;            /* device address of this PE's sync area */
    uint64_t abort_flag;      /* device address of a uint32_t, non-zero once the job is ending */
    uint64_t wait_timeout_ns; /* a device wait longer than this traps; 0: no limit */
    uint64_t proxy;           /* device address of this PE's reverse-offload ring
                                 (ushmemi_dev_ring_t): requests for PEs whose heap is
                                 not mapped here (other hosts); 0: none */
    uint64_t reserved[3];
    int32_t near_first; /* world PE of near_base[0] */
    int32_t near_n;     /* entries of near_base in use (0 .. SHMEMX_DEV_NEAR_MAX) */
    uint64_t near_base[SHMEMX_DEV_NEAR_MAX]; /* peer_base[near_first + i], copied */
} shmemx_dev_t;

/* ---- reverse offload (internal: the library and shmemx_device.cuh) ----
 * A kernel hands a request for an unmapped PE to a proxy thread of its own
 * process through a ring: it takes a ticket (device atomic on head), waits
 * for room (free_cache, free_upto), writes the 7 payload words of its slot and
 * then the slot's seq (ticket + 1); a request the kernel waits on gets its
 * result in ret[slot] (value, then seq), which the kernel acks.
 * src/transport/proxy/ring.h is the protocol and its host consumer; the
 * layout below is its ushmemi_ring_t (pointers as device addresses) plus the
 * quiet word. */
typedef struct ushmemi_dev_ring {
    uint64_t head;       /* device memory: tickets handed out */
    uint64_t free_cache; /* device memory: producers' copy of free_upto */
    uint64_t free_upto;  /* host (device-mapped): tickets below may be written */
    uint64_t abort_word; /* host: nonzero once the proxy stopped */
    uint64_t slots;      /* host: 64-byte descriptors, w[7] then seq */
    uint64_t ret;        /* host: 32-byte results, value, seq, ack, pad */
    uint64_t mask;       /* cap - 1 */
    uint32_t cap, pad;
    uint64_t quiet_upto; /* host: every request below this ticket is done and quiet */
} ushmemi_dev_ring_t;

/* Request word 0: op | flags | len << 8 | aux << 16 | (uint64_t)world_pe << 32. */
#define USHMEMI_REQ_PUT               1 /* w1 dest (symmetric), w2 src (local), w3 bytes */
#define USHMEMI_REQ_PUT_INLINE        2 /* w1 dest; len bytes (<= 40) in w2..w6 */
#define USHMEMI_REQ_GET               3 /* w1 src (symmetric), w2 dest (local), w3 bytes */
#define USHMEMI_REQ_GET_SMALL         4 /* w1 src; len bytes (<= 8) come back as the result */
#define USHMEMI_REQ_AMO               5 /* w1 dest, w2 value, w3 cond; aux: op | size << 8 */
#define USHMEMI_REQ_PUT_SIGNAL        6 /* w1 dest, w2 src, w3 bytes, w4 sig, w5 signal; aux sig_op */
#define USHMEMI_REQ_PUT_SIGNAL_INLINE 7    /* w1 dest, len bytes (<= 16) in w2..w3, w4, w5, aux */
#define USHMEMI_REQ_QUIET             8    /* every earlier request is complete at its target */
#define USHMEMI_REQ_WAIT              0x80 /* flag: the kernel waits for the result */
#define USHMEMI_REQ_W0(op, len, aux, pe)                                                           \
    ((uint64_t)(op) | (uint64_t)(len) << 8 | (uint64_t)(aux) << 16 | (uint64_t)(uint32_t)(pe) << 32)
#define USHMEMI_REQ_INLINE_MAX        40
#define USHMEMI_REQ_SIGNAL_INLINE_MAX 16

#endif /* SHMEMX_DEVICE_TYPES_H */
