/* team_common.h: what every kernel whose work-items reduce or scan a row in teams shares
 * (reduce_rows.cl, row_scan.cl, and through row_common.h softmax.cl, row_norm.cl and
 * row_scale.cl): the sub-group modes, the checks of the team macros against each other and
 * against the API, the kernel's sub-group-width attribute, the xor shuffle of one ACC_T,
 * element loads and stores, and the lane / team of a work-item.
 *
 * A kernel file `#include "team_common.h"`s it; clreduce/kernels.py splices the text in (so
 * the source hash and the program caches see it; no include path at build time).
 *
 * Required macros: IN_T, OUT_T, ACC_T, ACC_BYTES, ACC_IS_FLOAT, IN_HALF, OUT_HALF, WG_SIZE,
 * LANES, SG_MODE (0 local, 1 builtin, 2 KHR shuffle, 3 qcom shuffle, 4 NVIDIA OpenCL's PTX
 * shuffle), SG_SIZE, REQD_SG (0 none, 1 intel, 2 qcom half, 3 qcom full).
 * Optional: MIN_BLOCKS (CUDA's __launch_bounds__ second argument, default 1), IN_BOOL (1: IN_T
 * holds numpy bools, read as 0 / 1 by LOAD and IN_VALUE; default 0).
 */
#ifndef TEAM_COMMON_H
#define TEAM_COMMON_H

/* A pointer to local memory as a function parameter: `__local` in OpenCL C; the CUDA
 * dialect header defines it empty (shared memory pointers are generic there). */
#ifndef LOCAL_PTR
#define LOCAL_PTR __local
#endif
#define SG_LOCAL 0
#define SG_BUILTIN 1
#define SG_SHUFFLE_KHR 2
#define SG_SHUFFLE_QCOM 3
#define SG_SHUFFLE_PTX 4
#define REQD_SG_NONE 0
#define REQD_SG_INTEL 1
#define REQD_SG_QCOM_HALF 2
#define REQD_SG_QCOM_FULL 3

#ifndef IN_T
#error "IN_T (element type read) is required"
#endif
#ifndef OUT_T
#error "OUT_T (element type written) is required"
#endif
#ifndef ACC_T
#error "ACC_T (accumulator / math type) is required"
#endif
#ifndef ACC_BYTES
#error "ACC_BYTES (sizeof(ACC_T)) is required"
#endif
#ifndef ACC_IS_FLOAT
#error "ACC_IS_FLOAT (0/1) is required"
#endif
#ifndef IN_HALF
#error "IN_HALF (0/1) is required"
#endif
#ifndef OUT_HALF
#error "OUT_HALF (0/1) is required"
#endif
#ifndef WG_SIZE
#error "WG_SIZE is required"
#endif
#ifndef LANES
#error "LANES (work-items per row) is required"
#endif
#ifndef SG_MODE
#error "SG_MODE (0 local, 1 builtin, 2 KHR shuffle, 3 qcom shuffle, 4 PTX shuffle) is required"
#endif
#ifndef SG_SIZE
#error "SG_SIZE is required (any value with SG_MODE 0)"
#endif
#ifndef REQD_SG
#error "REQD_SG (0 none, 1 intel, 2 qcom half, 3 qcom full) is required"
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

#if (WG_SIZE % LANES) != 0 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two dividing WG_SIZE"
#endif
#if SG_MODE != SG_LOCAL && (WG_SIZE % SG_SIZE) != 0
#error "WG_SIZE must be a multiple of SG_SIZE"
#endif
#if SG_MODE != SG_LOCAL && FIXED_SG_SIZE && SG_SIZE != FIXED_SG_SIZE
#error "this API has one sub-group width (FIXED_SG_SIZE): SG_SIZE must equal it"
#endif
#if SG_MODE == SG_SHUFFLE_QCOM && !HAS_QCOM_SHUFFLE
#error "SG_MODE 3 (cl_qcom_subgroup_shuffle) has no meaning on this API: use 1 or 2"
#endif
#if SG_MODE == SG_SHUFFLE_PTX && !HAS_WORD_SHUFFLE
#error "SG_MODE 4 (NVIDIA OpenCL's inline-PTX warp shuffle) has no meaning on this API: use 1 or 2"
#endif
#if REQD_SG != REQD_SG_NONE && !HAS_REQD_SG_ATTRS
#error "this API cannot request a sub-group width: REQD_SG must be 0"
#endif
/* (the extensions a variant needs are enabled by cl_dialect_opencl.h from these macros) */

#if REQD_SG == REQD_SG_INTEL
#define SG_ATTR __attribute__((intel_reqd_sub_group_size(SG_SIZE)))
#elif REQD_SG == REQD_SG_QCOM_HALF
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("half")))
#elif REQD_SG == REQD_SG_QCOM_FULL
#define SG_ATTR __attribute__((qcom_reqd_sub_group_size("full")))
#else
#define SG_ATTR
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* shuffle_xor(ACC_T) and shuffle_word(uint) of the shuffle modes (reduce_state.cl uses them too) */
#include "shuffle_xor.h"

/* Loads and stores by element index, in ACC_T. The input is never written during a launch
 * (LOAD_RO: the read-only cache on CUDA); vload_half/vstore_half need only element
 * alignment. */
#ifndef IN_BOOL
#define IN_BOOL 0
#endif
#if IN_BOOL && IN_HALF
#error "IN_BOOL and IN_HALF exclude each other"
#endif
/* IN_VALUE: an input element already loaded (a vector load's lane) as ACC_T. A numpy bool is
 * any byte, nonzero for True (numpy's rule): bytes of 0xff had counted 255 in cumsum. */
#if IN_BOOL
#define IN_VALUE(v) ((ACC_T)((v) != 0))
#else
#define IN_VALUE(v) ((ACC_T)(v))
#endif
#if IN_HALF
#define LOAD(p, i) ((ACC_T)LOAD_RO_HALF((p) + (i)))
#else
#define LOAD(p, i) IN_VALUE(LOAD_RO((p) + (i)))
#endif
#if OUT_HALF
#define STORE(v, p, i) vstore_half((float)(v), (i), (p))
#else
#define STORE(v, p, i) ((p)[i] = (OUT_T)(v))
#endif

/* Lane and team of this work-item. With sub-groups and LANES <= SG_SIZE a team is an
 * aligned lane group of one sub-group, named by sub-group ids so that the butterfly's
 * partners are exactly the team's lanes. */
#define TEAMS (WG_SIZE / LANES)
#if SG_MODE != SG_LOCAL && LANES <= SG_SIZE
#define LANE_ID() ((uint)get_sub_group_local_id() % LANES)
#define TEAM_ID() ((uint)get_sub_group_id() * (SG_SIZE / LANES) + (uint)get_sub_group_local_id() / LANES)
#else
#define LANE_ID() ((uint)get_local_id(0) % LANES)
#define TEAM_ID() ((uint)get_local_id(0) / LANES)
#endif

/* __local slots of a team reduce: one per work-item for a local-memory tree, else one per
 * sub-group (its partial, when a team spans sub-groups) */
#if SG_MODE == SG_LOCAL
#define SCRATCH_LEN WG_SIZE
#else
#define SCRATCH_LEN (WG_SIZE / SG_SIZE)
#endif

#endif /* TEAM_COMMON_H */
