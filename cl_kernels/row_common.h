/* row_common.h: the row machinery softmax.cl, row_norm.cl and row_scale.cl share (beyond
 * team_common.h, which it includes): macro checks, the team reduce (one per SG_MODE behind
 * one name), compensated sums, vector runs, the kernels' common start and the task
 * decomposition of split rows.
 *
 * The kernel files `#include "row_common.h"`; clreduce/kernels.py splices this text in
 * where the include stands (the program is one string, so the source hash and the program
 * caches see this file too, and no include path is needed at build time).
 *
 * Required macros: those of team_common.h, and CACHE, NPER, LOCAL_LEN, SPLIT, PHASE, VEC,
 * WALK_RUNS.
 *
 * Tasks. A task is one row (SPLIT 1) or one of SPLIT chunks of chunk_len elements of a row
 * (task t: row t / SPLIT, chunk t % SPLIT). Teams walk the n_rows * SPLIT tasks with a grid
 * stride; every work-item of a group runs the same number of trips (a team past the last
 * task works on an empty chunk), so barriers and sub-group collectives stay uniform.
 *   PHASE 0  SPLIT 1: the whole row in one launch (statistics, then the write)
 *   PHASE 1  SPLIT > 1: each task writes its chunk's partial statistics, two ACC_T values,
 *            to partials[2 * task], partials[2 * task + 1]
 *   PHASE 2  SPLIT > 1: each team folds its row's SPLIT partials, then writes its chunk
 * Split rows are read again in phase 2: CACHE must be 2 (none) there.
 */
#ifndef ROW_COMMON_H
#define ROW_COMMON_H

/* team_common.h: sub-group modes, API checks, shuffle, LOAD/STORE, lanes and teams */
#include "team_common.h"

#define CACHE_REG 0
#define CACHE_LOCAL 1
#define CACHE_NONE 2
#define K_SUM 0
#define K_MAX 1

#ifndef CACHE
#error "CACHE (0 registers, 1 local memory, 2 none) is required"
#endif
#ifndef NPER
#error "NPER (elements per lane cached in registers; any value unless CACHE 0) is required"
#endif
#ifndef LOCAL_LEN
#error "LOCAL_LEN (elements per team cached in local memory; any value unless CACHE 1) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row; 1 = whole rows) is required"
#endif
#ifndef PHASE
#error "PHASE (0 whole rows, 1 chunk partials, 2 apply from partials) is required"
#endif
#ifndef VEC
#error "VEC (elements per load of a run; 1 = element loads) is required"
#endif
#ifndef WALK_RUNS
#error "WALK_RUNS (1: rows read from memory go run by run through each family's run body) is required"
#endif
#if WALK_RUNS && !(VEC > 1 && CACHE == CACHE_NONE)
#error "WALK_RUNS needs VEC > 1 and CACHE 2"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4 && VEC != 8 && VEC != 16
#error "VEC must be 1, 2, 4, 8 or 16"
#endif
#if VEC > 1 && ((CACHE == CACHE_REG && (NPER % VEC) != 0) || CACHE == CACHE_LOCAL)
#error "VEC > 1 needs NPER a multiple of VEC with CACHE 0, and no CACHE 1 (its buffer is re-read element-wise)"
#endif

#if ACC_IS_FLOAT != 1
#error "the row ops compute in float or double: ACC_IS_FLOAT must be 1"
#endif
#if (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two"
#endif
#if SG_MODE == SG_BUILTIN && LANES > 1 && LANES < SG_SIZE
#error "built-in sub-group reduce covers whole sub-groups: use a shuffle mode for LANES < SG_SIZE"
#endif
#ifndef FLAT_WRITE
#define FLAT_WRITE 0
#endif
#if (PHASE == 0) != (SPLIT == 1) || PHASE < 0 || PHASE > 3 || (PHASE == 3 && !FLAT_WRITE)
#error "PHASE 0 goes with SPLIT 1; PHASE 1 and 2 with SPLIT > 1; PHASE 3 with FLAT_WRITE (row_norm.cl)"
#endif
#if SPLIT > 1 && CACHE != CACHE_NONE
#error "split rows are read again in phase 2: CACHE must be 2 (none)"
#endif

/* max propagates NaN like numpy's max (fmax would drop it). A function, so a shuffle passed
 * as an argument runs in every lane. */
inline ACC_T comb(const ACC_T a, const ACC_T b, const int kind) {
    return kind == K_SUM ? a + b : ((isnan(a) || a > b) ? a : b);
}

#if SG_MODE != SG_LOCAL
/* Reduce over aligned groups of `width` lanes of a sub-group; every lane gets the value.
 * The built-in covers the whole sub-group (width == SG_SIZE); xor masks below `width`
 * stay inside the group, so several rows share a sub-group in the shuffle modes. */
inline ACC_T sg_reduce(ACC_T v, const int kind, const uint width) {
#if SG_MODE == SG_BUILTIN
    if (kind == K_SUM) {
        return sub_group_reduce_add(v);
    }
    const ACC_T r = sub_group_reduce_max(v);
    return sub_group_any(isnan(v)) ? (ACC_T)NAN : r;  /* the built-in leaves NaN unspecified */
#else
    for (uint m = width >> 1; m > 0; m >>= 1) {
        v = comb(v, shuffle_xor(v, m), kind);
    }
    return v;
#endif
}
#endif

/* Reduce `v` over the team; every lane of the team gets the result. Called by every
 * work-item of the group the same number of times (it may hold barriers). */
inline ACC_T team_reduce(ACC_T v, const int kind, LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
#if LANES == 1
    return v;
#elif SG_MODE == SG_LOCAL
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = LANES >> 1; s > 0; s >>= 1) {
        if (lane < s) {
            scratch[lid] = comb(scratch[lid], scratch[lid + s], kind);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    v = scratch[lid - lane];
    barrier(CLK_LOCAL_MEM_FENCE);  /* the next reduce overwrites scratch */
    return v;
#elif LANES <= SG_SIZE
    return sg_reduce(v, kind, LANES);
#else
    /* Work-group teams: each sub-group reduces, lane 0 parks the partial, every lane folds
     * its team's partials in the same order (so all lanes agree bit for bit). */
    v = sg_reduce(v, kind, SG_SIZE);
    if (get_sub_group_local_id() == 0) {
        scratch[get_sub_group_id()] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint first = (lid - lane) / SG_SIZE;
    ACC_T r = scratch[first];
    for (uint j = 1; j < LANES / SG_SIZE; ++j) {
        r = comb(r, scratch[first + j], kind);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#endif
}

/* Neumaier's compensated sum: (s, c) carry the running sum and the rounding error of
 * every step, so a lane's sum of a long row stays accurate in float32. A non-finite sum
 * keeps its IEEE value (the compensation of inf - inf would turn it into NaN). */
inline void nsum_add(ACC_T *s, ACC_T *c, const ACC_T x) {
    const ACC_T t = *s + x;
    *c += fabs(*s) >= fabs(x) ? (*s - t) + x : (x - t) + *s;
    *s = t;
}
inline ACC_T nsum_value(const ACC_T s, const ACC_T c) { return isfinite(s) ? s + c : s; }

/* Register-cached rows add their terms run by run (VEC terms plainly, ~VEC ulp). A lane of a
 * GPU holds at most 32 elements, a few runs, and adds the run sums plainly too (the
 * compensation's flops made an H100 compute-bound); a CPU work-item may hold a whole row of
 * up to REG_FLOATS_CPU elements (plan_rowops.py), hundreds of runs, whose sums are added
 * Neumaier-compensated so the row keeps the accuracy of the walked rows. */
#if CACHE == CACHE_REG && NPER / VEC > 8
#define RUN_SUM_ADD(s, c, x) nsum_add(&(s), &(c), (x))
#else
#define RUN_SUM_ADD(s, c, x) ((s) += (x))
#endif

/* Where task `task` lies: its row, the first element of its chunk, and its length (0 for a
 * team past the last task). The planner never makes an empty chunk. */
typedef struct { ulong task, row, start, len; } task_t;
inline task_t task_at(const ulong task, const ulong n_rows, const ulong row_len, const ulong chunk_len) {
    const int live = task < n_rows * SPLIT;
    task_t t;
    t.task = task;
    t.row = live ? task / SPLIT : 0;
    t.start = live ? (task % SPLIT) * chunk_len : 0;
    t.len = live ? min(chunk_len, row_len - t.start) : 0;
    return t;
}
/* The start of a task's trip (kernel arguments in, in_offset, out, out_offset, n_rows,
 * row_len, chunk_len): the task `t`, its first input element `p`, and where the kernel file
 * says so (ROW_WRITES, ROW_WALKS, set before it includes this file) its first output
 * element `q` and its walk `w` (below). */
#ifndef ROW_VEC_STORES
#define ROW_VEC_STORES 1
#endif
#if !defined(ROW_WRITES) || !defined(ROW_WALKS)
#error "the kernel file defines ROW_WRITES and ROW_WALKS (0/1) before including row_common.h"
#endif
#if ROW_WRITES
#define TASK_Q __global OUT_T *q = out + out_offset + t.row * row_len + t.start
#else
#define TASK_Q (void)0
#endif
#if ROW_WALKS
#define TASK_W const walk_t w = walk_of(p, t.len)
#else
#define TASK_W (void)0
#endif
/* ROW_READS (default 1): the task reads its row through `p`; 0 where a phase reads only
 * partials and never names p (nvcc -Werror: a pointer set but never used) */
#ifndef ROW_READS
#define ROW_READS 1
#endif
#if ROW_READS
#define TASK_P __global const IN_T *p = in + in_offset + t.row * row_len + t.start
#else
#define TASK_P (void)0
#endif
#define TASK_START(base)                                                                      \
    const task_t t = task_at((base) + team, n_rows, row_len, chunk_len);                      \
    TASK_P;                                                                                   \
    TASK_Q;                                                                                   \
    TASK_W

/* Register-cached rows (CACHE 0): a lane owns NPER / VEC runs of VEC consecutive elements;
 * run j of a lane starts at element RUN_START(j) = (j * LANES + lane) * VEC, so the team's
 * runs tile the row and neighbouring lanes read neighbouring runs (one 16-byte load per run
 * on GPUs: element loads of half moved 64 bytes per warp instruction and left an H100 at a
 * quarter of its bandwidth). The planner makes VEC divide row_len, so a run lies wholly in
 * the row or wholly past it. `vec_ok` (uniform over the launch): the input and output
 * addresses allow VEC-wide loads and stores; else the same runs go element by element. */
#define RUN_START(j) (((uint)(j) * LANES + lane) * VEC)
/* ROW_RUNS_EXACT 1 (the planner's, register rows only): row_len == LANES * NPER, so every run
 * of a live task lies in its row and a task of len 0 reads its row's (row 0's) runs: no clamp
 * of the runs' loads, and a run is in the row where the task is live */
#ifndef ROW_RUNS_EXACT
#define ROW_RUNS_EXACT 0
#endif
#if ROW_RUNS_EXACT && CACHE != CACHE_REG
#error "ROW_RUNS_EXACT: register rows only"
#endif
#define RUN_IN(j, len) (ROW_RUNS_EXACT ? (len) > 0 : RUN_START(j) < (len))
#if IN_HALF
#define VLOAD_IN(n, p, d) VLOAD_HALF_ARRAY(n, p, d)
#else
#define VLOAD_IN(n, p, d) VLOAD_ARRAY(n, p, d)
#endif
/* ROW_WIDE_STORES (the kernel file's choice, or the planner's where the file lets it; default
 * 0): VEC-wide runs go out through VSTORE_WIDE, one 16-byte store instruction on CUDA where
 * VSTORE_ARRAY gives four (the same on OpenCL). Measured per family on an H100 (benchmarks/rowops_wide_stores_h100_2026-11-25). */
#ifndef ROW_WIDE_STORES
#define ROW_WIDE_STORES 0
#endif
#if OUT_HALF && ROW_WIDE_STORES
#define VSTORE_OUT(n, d, p) VSTORE_HALF_WIDE(n, d, p)
#elif OUT_HALF
#define VSTORE_OUT(n, d, p) VSTORE_HALF_ARRAY(n, d, p)
#elif ROW_WIDE_STORES
#define VSTORE_OUT(n, d, p) VSTORE_WIDE(n, d, p)
#else
#define VSTORE_OUT(n, d, p) VSTORE_ARRAY(n, d, p)
#endif
#if VEC > 1
#define VEC_OK(in_p, out_p) (VLOAD_ALIGNED(in_p, VEC) && VLOAD_ALIGNED(out_p, VEC))
#else
#define VEC_OK(in_p, out_p) 0
#endif
/* One run of VEC elements: a VEC-wide access where `vec_ok`, else element by element. */
#define RUN_ACCESS(vec_ok, wide, one) do {                                                    \
        if (VEC > 1 && (vec_ok)) {                                                            \
            wide;                                                                             \
        } else {                                                                              \
            UNROLL_LOOP for (uint e_ = 0; e_ < VEC; ++e_) {                                   \
                one;                                                                          \
            }                                                                                 \
        }                                                                                     \
    } while (0)
inline void load_run(__global const IN_T *p, const int vec_ok, ACC_T *d) {
    RUN_ACCESS(vec_ok, VLOAD_IN(VEC, p, d), d[e_] = LOAD(p, e_));
}
/* ROW_VEC_STORES 0 (int8 quantize: OUT_T is no float type, so no VEC-wide store of ACC_T
 * values): the runs are stored element by element */
inline void store_run(const ACC_T *d, __global OUT_T *q, const int vec_ok) {
#if ROW_VEC_STORES
    RUN_ACCESS(vec_ok, VSTORE_OUT(VEC, d, q), STORE(d[e_], q, e_));
#else
    RUN_ACCESS(0 && vec_ok, (void)0, STORE(d[e_], q, e_));
#endif
}
/* STREAM_WRITE (the planner's: CUDA softmax rows read twice from memory whose rows in flight
 * pass the L2, as WALK_BACK below; default 0): the write walk's loads read each run for the
 * last time and its stores write runs this launch never reads, so both go through the
 * evict-first cache hints (ld.global.cs / st.global.cs; plain on OpenCL) and leave L2 to the
 * lines the walk back still wants. H200, float32 softmax 4096 x 65536 (rows of 256 KB):
 * 2465-2473 -> 2781-2803 GB/s; with the stores alone 2547-2554
 * (benchmarks/softmax_stream_write_h200_2026-11-28/). */
#ifndef STREAM_WRITE
#define STREAM_WRITE 0
#endif
#if STREAM_WRITE && !(ROW_WIDE_STORES && ROW_VEC_STORES && VEC > 1)
#error "STREAM_WRITE needs ROW_WIDE_STORES, ROW_VEC_STORES and VEC > 1"
#endif
#if STREAM_WRITE
#if IN_HALF
#define VLOAD_LAST_IN(n, p, d) VLOAD_LAST_HALF_ARRAY(n, p, d)
#else
#define VLOAD_LAST_IN(n, p, d) VLOAD_LAST_ARRAY(n, p, d)
#endif
#if OUT_HALF
#define VSTORE_OUT_STREAM(n, d, p) VSTORE_HALF_WIDE_STREAM(n, d, p)
#else
#define VSTORE_OUT_STREAM(n, d, p) VSTORE_WIDE_STREAM(n, d, p)
#endif
/* the write walk's load (its input is aligned there) and store of a run */
#define WRITE_LOAD_RUN(p, d) RUN_ACCESS(1, VLOAD_LAST_IN(VEC, (p), (d)), (d)[e_] = LOAD((p), e_))
#define WRITE_STORE_RUN(d, q, vec_ok) RUN_ACCESS((vec_ok), VSTORE_OUT_STREAM(VEC, (d), (q)), STORE((d)[e_], (q), e_))
#else
#define WRITE_LOAD_RUN(p, d) load_run((p), 1, (d))
#define WRITE_STORE_RUN(d, q, vec_ok) store_run((d), (q), (vec_ok))
#endif

#if CACHE == CACHE_REG
/* CACHE 0: this lane's runs of a task of `len` elements at p into v[NPER]; `pad` past its end.
 * With the dialect's LOAD_RUNS_TOGETHER, VEC-wide runs load with no branch: a run past the end
 * reads the task's last run again (a cached line; a task of len 0 reads its row's first run,
 * which exists: VEC divides row_len) and is then padded by a select. Each run's load in its
 * own branch, converted there from half, made CUDA wait out one memory latency per run:
 * float16 softmax rows of 16384 in groups of 512 ran at 2250 GB/s on an H100 where a kernel
 * with the loads issued together ran at 3000. */
/* padded 0 (the caller's every use of a run past the row is guarded by RUN_START(j) < len):
 * with LOAD_RUNS_TOGETHER such runs keep what the clamped load read, no select (float16
 * layer_norm rows of 16 on an H200: 8 of ~235 instructions a trip) */
inline void load_runs_padded(ACC_T *v, __global const IN_T *p, const ulong len, const int vec_ok, const uint lane,
                             const ACC_T pad, const int padded) {
    if (LOAD_RUNS_TOGETHER && VEC > 1 && vec_ok) {
        const ulong last = len >= VEC ? len - VEC : 0;
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            VLOAD_IN(VEC, p + (ROW_RUNS_EXACT ? (ulong)RUN_START(j) : min((ulong)RUN_START(j), last)), v + j * VEC);
        }
        if (!padded) {
            return;
        }
        UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
            const int past = !RUN_IN(j, len);
            UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                v[j * VEC + e] = past ? pad : v[j * VEC + e];
            }
        }
        return;
    }
    UNROLL_LOOP for (uint j = 0; j < NPER / VEC; ++j) {
        if (RUN_START(j) < len) {
            load_run(p + RUN_START(j), vec_ok, v + j * VEC);
        } else {
            UNROLL_LOOP for (uint e = 0; e < VEC; ++e) {
                v[j * VEC + e] = pad;
            }
        }
    }
}
inline void load_runs(ACC_T *v, __global const IN_T *p, const ulong len, const int vec_ok, const uint lane,
                      const ACC_T pad) {
    load_runs_padded(v, p, len, vec_ok, lane, pad, 1);
}
#endif

/* How every row-op kernel starts (a macro: __local arrays belong to the kernel's own scope):
 * the team-reduce scratch, this work-item's place, the grid stride over tasks, with CACHE 0
 * `vec_ok` (register runs may be VEC-wide accesses), with CACHE 1 the teams' row buffers
 * (`c`: this team's). */
#if CACHE == CACHE_LOCAL
#define ROW_BUFFERS                                                                           \
    __local ACC_T rowbuf[TEAMS * LOCAL_LEN];                                                  \
    LOCAL_PTR ACC_T *c = rowbuf + team * LOCAL_LEN
#else
#define ROW_BUFFERS (void)0
#endif
#if CACHE == CACHE_REG
#define ROW_VEC_OK const int vec_ok = VEC_OK(in + in_offset, out + out_offset); (void)vec_ok
#else
#define ROW_VEC_OK (void)0
#endif
#define ROW_KERNEL_START                                                                      \
    __local ACC_T scratch[SCRATCH_LEN];                                                       \
    const uint lid = (uint)get_local_id(0);                                                   \
    const uint lane = LANE_ID();                                                              \
    const uint team = TEAM_ID();                                                              \
    const ulong stride = (ulong)get_num_groups(0) * TEAMS;                                    \
    ROW_VEC_OK;                                                                               \
    ROW_BUFFERS
/* The grid-stride loop's first task base of this group (every work-item of a group runs the
 * same trips; a team past the last task works on an empty chunk). */
#define FIRST_BASE ((ulong)get_group_id(0) * TEAMS)

/* Passes that read the task from memory (CACHE 1 and 2, the split phases) walk [0, len) at p
 * in three parts: `head` elements up to an address aligned for VEC-wide loads (VLOAD_HEAD:
 * none on OpenCL), `runs` runs of VEC elements (run r at head + r * VEC, to lane r % LANES,
 * so neighbouring lanes read neighbouring runs), then the tail. The head and tail ("odd"
 * elements, fewer than 2 * VEC) go one element per lane. With VEC 1 this is the plain walk
 * i = lane, lane + LANES, ... (CACHE 1 re-reads its row buffer that way: VEC must be 1 there).
 * Element loads had left long rows at a fraction of the reductions' bandwidth (issue 10). */
typedef struct { ulong head, runs, odd; } walk_t;
inline walk_t walk_of(__global const IN_T *p, const ulong len) {
    walk_t w;
    w.head = min((ulong)VLOAD_HEAD(p, VEC), len);
    w.runs = (len - w.head) / VEC;
    w.odd = len - w.runs * VEC;
    return w;
}
/* Walk this lane's share of a task: for each element, `x` (a mutable ACC_T) holds it and `i`
 * is its index when `body` runs; with WRITE 1, x is then stored to q[i] (VEC-wide where
 * q + head is aligned for it, else element by element). A macro: the body is each
 * kernel's own statement. */
#define LANE_WALK(w, p, WRITE, q, i, x, body)                                                 \
    LANE_WALK_RUNS(w, p, WRITE, q, d_, ELEMENTS_OF_RUN(d_, i, x, body), i, x, body)
#define ELEMENTS_OF_RUN(d, i, x, body)                                                        \
    UNROLL_LOOP for (uint e_ = 0; e_ < VEC; ++e_) {                                           \
        const ulong i = i0_ + e_;                                                             \
        ACC_T x = (d)[e_];                                                                    \
        (void)i;                                                                              \
        body;                                                                                 \
        (d)[e_] = x;                                                                          \
    }
/* WALK_BACK (the planner's choice, default 0): the write walk takes the runs last to first.
 * A row read twice from memory (statistics, then the write) finds in L2 only what its first
 * walk read last; walking forward again it first asks for the oldest lines, which the rows in
 * flight have evicted where they pass the L2 (LRU's worst case, nothing hits), walking back it
 * starts with the lines still there. Neighbouring lanes keep neighbouring runs. */
#ifndef WALK_BACK
#define WALK_BACK 0
#endif
#if WALK_BACK
#define WRITE_RUN_FIRST(runs) ((runs) - 1 - lane)
#define WRITE_RUN_NEXT(r) ((r) - LANES)
#else
#define WRITE_RUN_FIRST(runs) ((ulong)lane)
#define WRITE_RUN_NEXT(r) ((r) + LANES)
#endif
/* The same walk with one statement per run: `run_body` sees the run's VEC elements in the
 * ACC_T array `d` (stored back to q with WRITE 1; its first index is i0_), the head and tail
 * elements go through `body` one by one. For bodies with a vector form (softmax.cl's
 * WALK_RUNS: PoCL runs built-ins such as exp on vectors several times faster than on
 * scalars). A read-only walk (WRITE 0) is unrolled by the dialect's UNROLL_READ_WALK (CUDA:
 * several runs' loads in flight a thread); the write walk is not (its store's alignment test
 * splits the body, and an unrolled write walk measured mixed on an H100). */
#define LANE_WALK_RUNS(w, p, WRITE, q, d, run_body, i, x, body) do {                          \
        const int q_ok_ = WRITE && VLOAD_ALIGNED((q) + (w).head, VEC);                        \
        if (WRITE) {                                                                          \
            for (ulong r_ = WRITE_RUN_FIRST((w).runs); r_ < (w).runs; r_ = WRITE_RUN_NEXT(r_)) { \
                ACC_T d[VEC];                                                                 \
                const ulong i0_ = (w).head + r_ * VEC;                                        \
                (void)i0_;                                                                    \
                WRITE_LOAD_RUN((p) + i0_, d);                                                 \
                run_body;                                                                     \
                WRITE_STORE_RUN(d, (q) + i0_, q_ok_);                                         \
            }                                                                                 \
        } else {                                                                              \
            UNROLL_READ_WALK for (ulong r_ = lane; r_ < (w).runs; r_ += LANES) {              \
                ACC_T d[VEC];                                                                 \
                const ulong i0_ = (w).head + r_ * VEC;                                        \
                (void)i0_;                                                                    \
                load_run((p) + i0_, 1, d);                                                    \
                run_body;                                                                     \
            }                                                                                 \
        }                                                                                     \
        for (ulong k_ = lane; k_ < (w).odd; k_ += LANES) {                                    \
            const ulong i = k_ < (w).head ? k_ : k_ + (w).runs * VEC;                         \
            ACC_T x = LOAD(p, i);                                                             \
            body;                                                                             \
            if (WRITE) {                                                                      \
                STORE(x, q, i);                                                               \
            }                                                                                 \
        }                                                                                     \
    } while (0)
/* CACHE 1: keep an element in the team's row buffer `c` (nothing otherwise); a later pass
 * runs `body` with x = c[i] over the elements this lane put there (LANE_WALK at VEC 1: i =
 * lane, lane + LANES, ...), so the buffer needs no barrier. */
#if CACHE == CACHE_LOCAL
#define CACHE_PUT(i, x) (c[i] = (x))
#define CACHE_WALK(i, x, body)                                                                \
    for (ulong i = lane; i < t.len; i += LANES) {                                             \
        const ACC_T x = c[i];                                                                 \
        body;                                                                                 \
    }
#else
#define CACHE_PUT(i, x) ((void)0)
#endif

/* PHASE 1: lane 0 of a live task writes its chunk's statistics: two, or PARTIAL_SLOTS where a
 * family defines more (row_norm.cl: 3; the launchers size the buffer to match) */
#ifndef PARTIAL_SLOTS
#define PARTIAL_SLOTS 2
#endif
inline void put_partials(__global ACC_T *partials, const task_t t, const uint lane, const ACC_T a, const ACC_T b) {
    if (lane == 0 && t.len > 0) {
        partials[PARTIAL_SLOTS * t.task] = a;
        partials[PARTIAL_SLOTS * t.task + 1] = b;
    }
}

/* Value k (< PARTIAL_SLOTS) of chunk j's partial statistics of `row` (phases 1 and 2). */
#if SPLIT > 1
#define PARTIAL(row, j, k) partials[PARTIAL_SLOTS * ((row) * SPLIT + (j)) + (k)]
#endif

#endif /* ROW_COMMON_H */
