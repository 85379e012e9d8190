/* row_scan.cl: inclusive scans (cumsum, cumprod, logcumsumexp) of each contiguous row.
 *
 * Teams of LANES work-items own one row each and walk it in tiles of LANES * ITEMS
 * elements: lane l scans its ITEMS consecutive elements in registers, the team turns the
 * lane totals into exclusive prefixes, each lane adds its prefix and the carry of the
 * earlier tiles and writes, and the carry grows by the tile's total. Every team of a group
 * runs ceil(row_len / tile) tiles (teams past the last row with nothing to load), so the
 * barriers and sub-group collectives inside are reached by the whole group.
 *
 * Team prefix (SG_MODE):
 *   1 builtin        sub_group_scan_exclusive_add + sub_group_reduce_add (sums, LANES == SG_SIZE)
 *   2/3/4 shuffle    xor butterfly over aligned groups of LANES lanes (LANES <= SG_SIZE):
 *                    at each level the upper half adds the lower half's block total
 *                    (the standard butterfly prefix; only xor shuffles are needed)
 *   0 local          Hillis-Steele steps in __local scratch[WG_SIZE] (any LANES)
 *
 * Long rows, few of them (reduce-then-scan over work-groups): SPLIT > 1 cuts each row into
 * SPLIT chunks of chunk_len elements, one task per team. Three launches:
 *   PHASE 1  each task writes its chunk's total to out[task]          (OUT_T = ACC_T)
 *   (a SPLIT 1 scan of those (n_rows, SPLIT) totals, inclusive, into `carries`)
 *   PHASE 0  each task scans its chunk starting from carries[task - 1] (chunk > 0)
 * With SPLIT 1, PHASE 0 scans whole rows (chunk_len = row_len) and `carries` is unused.
 *
 * Long rows on CUDA (decoupled look-back, one read of the input; HAS_GROUP_PROGRESS only):
 *   PHASE 3  zeroes the first row_len words of `out` (the look-back's counter and flags)
 *   PHASE 2  one work-group per tile of LB_TILE = ROUNDS * WG_SIZE * ITEMS elements of a row,
 *            in ticket order; `carries` is the workspace (lookback_workspace below)
 * A PHASE 2 tile scans itself, publishes its total, and takes its prefix from the tiles
 * before it. Tiles form groups of 32 along a row; a group's prefix is the previous group's
 * prefix plus that group's total (a sequential chain over groups), a tile's prefix inside
 * its group is a fixed butterfly of the totals before it. Whichever published values a tile
 * finds, the sums it forms are those of this fixed order: the result does not depend on the
 * timing (a look-back that adds whatever it finds, as CUB's, rounds differently per run).
 * The chain is over groups of 32 tiles, so the look-back stays short: the values of one
 * window of 32 groups, then a sequential fold of at most 32 of them.
 * LB_AHEAD 1 (optional, default 0; sm_80+): blocks stay and take tile after tile. While the
 * first sub-group waits for a tile's prefix, the others (LB_FETCHERS) take the block's next
 * ticket, copy that tile into local memory (STAGE_COPY16, no registers held), add it up and
 * publish its total at once: the loads overlap the wait, and a tile's total never waits on
 * the look-back of the tile its block ran before. Its runs' totals stay in local memory too, and the tile
 * is read from its copy once more for the running values: no thread holds it in registers
 * (float16: 74 -> 77 % of copy with the totals read twice, 81 % with them kept; the
 * adds and conversions of halves are the cost). A block takes its tickets in
 * increasing order and finishes them in that order, so the lowest unfinished tile never
 * waits on a later one.
 *
 * SCAN: 0 sum, 1 prod, 2 logaddexp (float only). Integer inputs accumulate in 64 bits
 * (ACC_T long/ulong: exact, wrapping like numpy); half input accumulates in float.
 *
 * Rows past the float range (SCAN_RESCUE: float sums of float/double, float products): a
 * lane's, team's or chunk's partial can overflow (or, for products, underflow to 0) where the
 * row's prefixes do not, and then meets the carry as inf + (-inf). Such a row is flagged,
 * and PHASE 4 scans it again in row order, one work-item a row (scan_walk), outputs and all:
 *   SPLIT 1           PHASE 0 writes each row's flag (the team agrees on it first); or, with
 *                     SCAN_WALK_INLINE, its team walks the row itself after its last task
 *   SPLIT > 1         PHASE 1 clears the row's flag, PHASE 0 sets it
 *   look-back         PHASE 3 clears it, PHASE 2 sets it
 * PHASE 4 walks the flagged rows' elements [chunk_len, chunk_len + SCAN_WALK_SEG) (0: all),
 * the walk's state kept between its launches (llvmpipe's loop limiter: several launches).
 *
 * Required macros: those of team_common.h, and ITEMS, SCAN, SPLIT, PHASE; ROUNDS for
 * PHASE 2 and 3.
 */

/* team_common.h: sub-group modes, API checks, shuffle, LOAD/STORE, lanes and teams */
#include "team_common.h"

#define SCAN_SUM 0
#define SCAN_PROD 1
#define SCAN_LOGADDEXP 2

#ifndef ITEMS
#error "ITEMS (consecutive elements a lane scans per tile) is required"
#endif
#ifndef SCAN
#error "SCAN (0 sum, 1 prod, 2 logaddexp) is required"
#endif
#ifndef SPLIT
#error "SPLIT (chunks per row, 1 = whole rows) is required"
#endif
#ifndef PHASE
#error "PHASE (0 scan, 1 chunk totals) is required"
#endif
#if ITEMS != 1 && ITEMS != 2 && ITEMS != 4 && ITEMS != 8 && ITEMS != 16
#error "ITEMS must be 1, 2, 4, 8 or 16 (one vector access per lane and tile)"
#endif
#if PHASE == 1 && SPLIT < 2
#error "chunk totals (PHASE 1) only for split rows"
#endif
#if PHASE < 0 || PHASE > 4
#error "PHASE must be 0 (scan), 1 (chunk totals), 2 (look-back scan), 3 (clear the look-back's flags) or 4 (walk flagged rows)"
#endif
#if PHASE == 2 || PHASE == 3
#if !HAS_GROUP_PROGRESS
#error "the look-back (PHASE 2) makes work-groups wait on earlier ones: OpenCL promises no such progress"
#endif
#if !defined(ROUNDS) /* required by these phases only (#ifndef + #error marks what every phase needs) */
#error "ROUNDS (sub-group-wide runs of ITEMS a lane holds per look-back tile) is required"
#endif
#if SPLIT != 1
#error "the look-back tiles the rows itself: SPLIT must be 1"
#endif
#if SG_MODE == SG_LOCAL || LANES != SG_SIZE || SG_SIZE != 32
#error "a look-back tile is scanned one 32-wide sub-group at a time (LANES == SG_SIZE == 32)"
#endif
#if ROUNDS * (WG_SIZE / SG_SIZE) > SG_SIZE
#error "one sub-group scans a look-back tile's ROUNDS * WG_SIZE / SG_SIZE segment totals"
#endif
#endif
#ifndef LB_AHEAD
#define LB_AHEAD 0
#endif
#if LB_AHEAD && (PHASE != 2 || WG_SIZE < 2 * SG_SIZE)
#error "LB_AHEAD: a look-back (PHASE 2) block of two sub-groups or more"
#endif

#if (WG_SIZE & (WG_SIZE - 1)) != 0
#error "WG_SIZE must be a power of two"
#endif
#if SG_MODE == SG_BUILTIN && (LANES != SG_SIZE || SCAN != SCAN_SUM)
#error "the built-in scan is a whole-sub-group sum: LANES == SG_SIZE and SCAN 0 only"
#endif
#if SG_MODE != SG_LOCAL && SG_MODE != SG_BUILTIN && LANES > SG_SIZE
#error "shuffle scans stay inside one sub-group: LANES <= SG_SIZE (use SG_MODE 0 above)"
#endif
#if SCAN == SCAN_LOGADDEXP && !ACC_IS_FLOAT
#error "logaddexp needs a float accumulator"
#endif

/* SCAN_PREFETCH (planner: CUDA row scans; default 0): a team issues the next tile's loads
 * before this tile's scan and shuffles, so each warp has a load in flight while it scans.
 * Without it a warp loaded, waited, then scanned, tile after tile: an H200 ran cumsum of
 * 4096 x 65536 (one warp a row, half the warps an SM holds) at 77-79 % of copy. */
#ifndef SCAN_PREFETCH
#define SCAN_PREFETCH 0
#endif
#ifndef CPU_OWN_EXP
#define CPU_OWN_EXP 0
#endif
/* SCAN_OWN_ACCESS (planner: PoCL CPU plans; default 0): a lane's ITEMS-wide loads and stores
 * of float and integer elements written as element loops (the form CPU_OWN_EXP uses), which
 * the compiler merges into vector accesses, in place of vloadn / vstoren. PoCL 3.0 from pip
 * calls those out of line, and Debian's PoCL 3.1 paid as much: float32 cumsum of 8000 rows of
 * 1000 took 7.0 (pip) and 9.3 ms (Debian) a call against 4.8-5.3 and 4.3-4.5 with the loops
 * (plan_scan.SCAN_OWN_ACCESS_IMPLEMENTATIONS). */
#ifndef SCAN_OWN_ACCESS
#define SCAN_OWN_ACCESS 0
#endif
#if CPU_OWN_EXP && !(SCAN == SCAN_LOGADDEXP && ACC_BYTES == 4 && ITEMS > 1)
#error "CPU_OWN_EXP: float logaddexp lanes of ITEMS > 1 (cpu_vec.h's vectors; CPU plans only)"
#endif
/* CPU_OWN_EXP (planner: PoCL; default 0): a lane's ITEMS elements go through cpu_vec.h's
 * cpu_exp and cpu_log as one ITEMS-wide vector, written with operators. PoCL 3.0 from pip calls
 * exp and log (and isfinite, isnan) out of line, one element at a time, spilling the lane's
 * registers around each of the two calls an element. The few scalar exp and log a lane and
 * tile takes (the total, the prefix's weight) go through the same vector functions, one lane
 * of a vector used. SCAN_OWN_ACCESS's float16 lanes take cpu_vec.h too, for its F16C
 * conversions (CPU_F16C, where the compiler targets F16C: both PoCLs here) in place of
 * vload_halfn / vstore_halfn, calls on pip's PoCL; without F16C they keep those calls (below).
 * CPU plans only (CUDA never sets either): OpenCL vector types here. */
#if CPU_OWN_EXP || (SCAN_OWN_ACCESS && (IN_HALF || OUT_HALF) && ITEMS > 1 && ACC_BYTES == 4)
#if defined(VEC) || defined(RAW_T)
#error "row_scan.cl sets cpu_vec.h's VEC (ITEMS) and RAW_T itself"
#endif
#define VEC ITEMS
#define RAW_T ACC_T
#include "cpu_vec.h"
#endif
#if CPU_OWN_EXP
/* the lanes' and the carry's finite test (inf - inf and NaN - NaN are NaN) */
#define LSE_FINITE(x) ((x) - (x) == (ACC_T)0)
#define LSE_EXP1(x) (cpu_exp((CPU_V(float))(x)).s0)
#define LSE_LOG1(x) (cpu_log((CPU_V(float))(x)).s0)
#else
#define LSE_FINITE(x) isfinite(x)
#endif
/* what comes before a lane: the carry and the team's exclusive prefix. A lane alone (LANES 1,
 * the CPU plans) has IDENT for its prefix, and with CPU_OWN_EXP the carry is taken as it is:
 * logaddexp(carry, -inf) is the carry, but pip's PoCL cannot see that through its out-of-line
 * isnan, isinf, fabs, exp and log1p, and called them every tile */
#if CPU_OWN_EXP && LANES == 1
#define LANE_PRE(carry, excl) (carry)
#else
#define LANE_PRE(carry, excl) OP(carry, excl)
#endif

/* ---- the op ------------------------------------------------------------------------------ */
#if SCAN == SCAN_SUM
#define IDENT ((ACC_T)0)
#define OP(a, b) ((a) + (b))
#elif SCAN == SCAN_PROD
#define IDENT ((ACC_T)1)
#define OP(a, b) ((a) * (b))
#else
#define IDENT ((ACC_T)(-INFINITY))
/* log(exp(a) + exp(b)) as numpy's logaddexp: -inf is neutral, NaN propagates, +inf wins */
inline ACC_T logaddexp(const ACC_T a, const ACC_T b) {
    if (isnan(a) || isnan(b)) {
        return a + b;
    }
    const ACC_T m = a > b ? a : b;
    if (isinf(m)) {
        return m;
    }
    return m + log1p(exp(-fabs(a - b)));
}
#define OP(a, b) logaddexp((a), (b))
/* The carry of a long row as hi + lo. Late in a row each tile adds log1p(exp(total - carry))
 * ~ tile / position to a carry of magnitude |x|: at 1e4 that is under an ulp (~1e-3) after
 * some thousand tiles, so a carry kept in one float rounds it away every tile (a float32
 * row of 1e6 values of 1e4 + N(0, 1) was 0.2-0.3 low: 3.2e-5 relative on PoCL). The
 * low word keeps what each add rounds off (Fast2Sum: |hi| >= the increment's magnitude
 * where it matters), and joins the next increment, so the carry is ~1 ulp off at any
 * length. Non-finite values take the plain logaddexp and drop the low word. */
#if CPU_OWN_EXP
/* CPU_OWN_EXP: log1p(exp(-|diff|)) by cpu_exp and cpu_log (no call on pip's PoCL, see above):
 * log1p(y) = log(u) * y / (u - 1), u = 1 + y rounded (Goldberg, "What every computer scientist
 * should know about floating-point arithmetic", 1991, Theorem 4: the rounding of u cancels), y
 * itself where u rounds to 1; within a few ulp of the increment, as the built-in. */
inline ACC_T carry_log1p_exp(const ACC_T t) {
    const ACC_T y = LSE_EXP1(t);
    const ACC_T u = (ACC_T)1 + y;
    return u == (ACC_T)1 ? y : LSE_LOG1(u) * (y / (u - (ACC_T)1));
}
#else
#define carry_log1p_exp(t) log1p(exp(t))
#endif
inline void logaddexp_carry(ACC_T *hi, ACC_T *lo, const ACC_T b) {
    const ACC_T a = *hi;
    if (!LSE_FINITE(a) || !LSE_FINITE(b)) {
        *hi = logaddexp(a, b);
        *lo = (ACC_T)0;
        return;
    }
    const ACC_T diff = (b - a) - *lo;   /* b - (hi + lo) */
    ACC_T base, inc;
    if (diff <= (ACC_T)0) {
        base = a;
        inc = *lo + carry_log1p_exp(diff);
    } else {
        base = b;
        inc = carry_log1p_exp(-diff);
    }
    const ACC_T sum = base + inc;
    *lo = inc - (sum - base);
    *hi = sum;
}
#endif

/* ---- rows past the float range (see the header) ------------------------------------------- */
#ifndef SCAN_RESCUE
#define SCAN_RESCUE (ACC_IS_FLOAT && ((SCAN == SCAN_SUM && !IN_HALF) || SCAN == SCAN_PROD))
#endif
#if SCAN_RESCUE && (!ACC_IS_FLOAT || SCAN == SCAN_LOGADDEXP)
#error "SCAN_RESCUE: float sums and products only"
#endif
#if PHASE == 4 && !SCAN_RESCUE
#error "PHASE 4 walks the rows a rescued scan flagged"
#endif
#ifndef SCAN_WALK_SEG
#define SCAN_WALK_SEG 0
#endif
/* rows whose flags one PHASE 4 work-item reads at once (the flags are padded to a multiple
 * of 16): with one, an H100 took ~9 us more for 2^20 rows (a wave of flag loads per 64K
 * threads); llvmpipe (the planner's 1) counts every row's walk against its loop limit */
#ifndef SCAN_WALK_ROWS
#define SCAN_WALK_ROWS 16
#endif
#if SCAN_WALK_ROWS != 1 && SCAN_WALK_ROWS != 16
#error "SCAN_WALK_ROWS must be 1 or 16"
#endif
#ifndef LB_FLAGS
#define LB_FLAGS 0
#endif
/* SCAN_WALK_INLINE (the planner: GPU whole-row scans, at most 32 tasks a team): a team
 * remembers which of its tasks' rows need the walk, one bit a task, and walks them after its
 * last task, in place of PHASE 4. That second launch, tiny as it is, had cost an H100's
 * float32 cumsum 5-9 % of its public call (1048576 x 32 2523 -> 2689 GB/s without it,
 * 262144 x 128 2637 -> 2767, 16384 x 1024 2394 -> 2606); the walk inline, 2855, 2780, 2566.
 * (Walking a flagged row inside the task loop had cost 30 %: see the flags below.) */
#ifndef SCAN_WALK_INLINE
#define SCAN_WALK_INLINE 0
#endif
#if SCAN_WALK_INLINE && !(SCAN_RESCUE && PHASE == 0 && SPLIT == 1)
#error "SCAN_WALK_INLINE: a rescued whole-row scan (PHASE 0, SPLIT 1)"
#endif
/* words of one set of the rows' flags (the look-back's workspace holds two for every SCAN) */
#define FLAG_WORDS(n_rows) (((n_rows) + 15) / 16 * 16)
/* flag sets: a whole-row scan writes one (the team's verdict); split and look-back scans two,
 * "bad" and "big" (below), set by any work-item that sees one and combined by PHASE 4 */
#if SPLIT > 1 || LB_FLAGS || PHASE == 2 || PHASE == 3
#define FLAG_SETS 2
#else
#define FLAG_SETS 1
#endif
#if SCAN_RESCUE
/* frexp_walk.h: the product kept as frexp's mantissa and exponent, the written-out blocks
 * (shared with reduce_rows.cl's rescued sums and products) */
#include "frexp_walk.h"
/* A row is walked where a partial is "bad" -- not finite, or for products 0 -- and the row
 * holds a "big" input. A wrong output comes from a bad partial (or from rounding at the
 * range's edge): an inf, NaN or 0 partial spreads to every sum or product formed from it.
 * But without a big input no partial can be wrong: finite terms below max / (2 * row_len)
 * sum to below max / 2 in any order (an inf or NaN then comes from the inputs, and IEEE's
 * sum of them is the same in every order), and products of terms within 1 in magnitude only
 * shrink (a partial that underflowed to 0 leaves every prefix it reaches below the smallest
 * subnormal: 0 is its rounding). So rows of inf or NaN, and products that decay to 0 (e.g.
 * probabilities; walking them cost an H100 300-11000x), keep the fast scan's result. */
#if SCAN == SCAN_SUM
#define SCAN_BAD(v) (!(fabs(v) < (ACC_T)INFINITY))
#define SCAN_BIG(x, big_sum) (fabs(x) > (big_sum) && fabs(x) < (ACC_T)INFINITY)
#else
#define SCAN_BAD(v) (!(fabs(v) < (ACC_T)INFINITY) || (v) == (ACC_T)0)
#define SCAN_BIG(x, big_sum) (fabs(x) > (ACC_T)1 && fabs(x) < (ACC_T)INFINITY)
#endif
/* a sum's big term: above max / (2 * row_len) (ACC_MAX: the accumulator's largest finite) */
#if ACC_BYTES == 8
#define ACC_MAX 0x1.fffffffffffffp1023
#else
#define ACC_MAX 0x1.fffffep127f
#endif
#define BIG_SUM(row_len) (ACC_MAX / ((ACC_T)2 * (ACC_T)(row_len)))
/* SCAN_BIG_IN_WALK (the planner: CPU devices' one-lane scans, not llvmpipe): the scan flags
 * bad rows only and PHASE 4 reads a flagged row for a big input before it walks it. The
 * per-element test in the scan cost Intel's CPU runtime 20-40 % (float32 cumsum, public
 * call); a CPU reads a row again at its copy speed. */
#ifndef SCAN_BIG_IN_WALK
#define SCAN_BIG_IN_WALK 0
#endif
/* a lane's ITEMS inputs (IDENT past the row: never big) into *big */
#if SCAN_BIG_IN_WALK
#define CHECK_BIG(big, d, big_sum) do { (big) = true; } while (0)
#else
#define CHECK_BIG(big, d, big_sum) do { \
        UNROLL_LOOP for (uint b_ = 0; b_ < ITEMS; ++b_) { (big) |= SCAN_BIG((d)[b_], (big_sum)); } \
    } while (0)
#endif
/* The walk's running value. Sums: s, kept as s * 2^64 from the first step whose sum of two
 * finite values overflowed (scaled), so no prefix passes the range and no small one loses a
 * bit before that; outputs s (or s * 2^64: inf past the range). Products: m * 2^e, m the
 * product of frexp's mantissas (renormalised every block), one rounding a term. */
typedef struct { ACC_T v; long e; } scan_walk_t;
#define WALK_DOWN ((ACC_T)5.421010862427522e-20)  /* 2^-64 */
#define WALK_UP ((ACC_T)1.8446744073709552e19)    /* 2^64 */
inline scan_walk_t walk_init(void) {
    scan_walk_t w;
    w.v = IDENT;
    w.e = 0;
    return w;
}
#if SCAN == SCAN_SUM
#define WALK_STEP(w, x, o) do { \
        ACC_T t_ = (w).e ? (w).v + (x) * WALK_DOWN : (w).v + (x); \
        if (!(w).e && !(fabs(t_) < (ACC_T)INFINITY) && fabs(x) < (ACC_T)INFINITY && \
            fabs((w).v) < (ACC_T)INFINITY) { \
            (w).e = 1; \
            (w).v *= WALK_DOWN; \
            t_ = (w).v + (x) * WALK_DOWN; \
        } \
        (w).v = t_; \
        (o) = (w).e ? t_ * WALK_UP : t_; \
    } while (0)
#define WALK_RENORM(w)
#else
/* the product m * 2^e (frexp_walk.h), each prefix's value clamped where every float type is
 * inf or 0 */
#define WALK_STEP(w, x, o) do { \
        FREXP_WALK_MUL((w).v, (w).e, (x)); \
        (o) = FREXP_WALK_VALUE((w).v, (w).e); \
    } while (0)
#define WALK_RENORM(w) FREXP_WALK_RENORM((w).v, (w).e)
#endif
/* 32 terms: loads, then the chain, then stores (loads between the chain's steps ran one at a
 * time on CUDA: reduce_rows.cl's merge of product chunks). Written out (frexp_walk.h says
 * why). A walk inside the scan kernel (SCAN_WALK_INLINE) takes 8: its registers count
 * against the scan's own (ptxas sizes a kernel for its callees too). */
#define WALK_LD(u) xb[u] = j + (u) < n ? LOAD(p, j + (u)) : IDENT;
#define WALK_ST(u) if (j + (u) < n) STORE(ob[u], q, j + (u));
#if SCAN_WALK_INLINE
#define WALK_BLOCK 8
#define WALK_X32(M) WRITTEN_OUT_8(M, 0)
/* inline, not COLD_INLINE (__noinline__): out of line, ptxas gave the scan 46 registers where
 * it had 40, and an H100's float32 cumsum of 262144 x 128 ran 2724 GB/s, not 2780; inlined
 * after the task loop, where little else is live, it costs the loop nothing */
#define WALK_FN inline
#else
#define WALK_BLOCK 32
#define WALK_X32(M) WRITTEN_OUT_32(M, 0)
#define WALK_FN COLD_INLINE
#endif
#define WALK_OP(u) WALK_STEP(w, xb[u], ob[u]);
#define WALK_NAN(u) if (j + (u) < n) STORE((ACC_T)NAN, q, j + (u));
#if PHASE == 4 || SCAN_WALK_INLINE
#if SCAN_BIG_IN_WALK
/* whether the n elements at p hold a big input (see SCAN_BAD) */
inline bool row_has_big(__global const IN_T *p, const ulong n, const ACC_T big_sum) {
    bool big = false;
    for (ulong j = 0; j < n; ++j) {
        big |= SCAN_BIG(LOAD(p, j), big_sum);
    }
    return big;
}
#endif
/* scan_walk: the inclusive scan of the n elements at p into q, in row order, from state w
 * (walk_init() at a row's start); returns the state after them. A NaN ends the loads: every
 * later output is NaN. */
WALK_FN scan_walk_t scan_walk(__global const IN_T *p, __global OUT_T *q, const ulong n, scan_walk_t w) {
    ulong j = 0;
    for (; j < n; j += WALK_BLOCK) {
        ACC_T xb[WALK_BLOCK], ob[WALK_BLOCK];
        WALK_X32(WALK_LD)
        WALK_X32(WALK_OP)
        WALK_X32(WALK_ST)
        WALK_RENORM(w);
        if (w.v != w.v) {
            j += WALK_BLOCK;
            break;
        }
    }
    for (; j < n; j += WALK_BLOCK) {
        WALK_X32(WALK_NAN)
    }
    return w;
}
#endif
#if SCAN_WALK_INLINE
/* the rows of this team's tasks whose bits are set (bit i: the task of its i-th trip through
 * the task loop), each walked whole by the caller */
WALK_FN void walk_team_rows(__global const IN_T *in, __global OUT_T *out, const ulong row_len,
                            uint bits, const ulong first_task, const ulong stride) {
    for (uint i = 0; bits != 0u; ++i, bits >>= 1) {
        if (bits & 1u) {
            const ulong row = first_task + i * stride;
#if SCAN_BIG_IN_WALK
            if (!row_has_big(in + row * row_len, row_len, BIG_SUM(row_len))) {
                continue;
            }
#endif
            (void)scan_walk(in + row * row_len, out + row * row_len, row_len, walk_init());
        }
    }
}
#endif
/* the rows' flags in `carries`, FLAG_SETS * FLAG_WORDS(n_rows) words (bad, then big): a
 * split scan's after its (n_rows, SPLIT) carries, 16-byte aligned, a whole-row scan's at its
 * start; then, where PHASE 4 runs in segments (SCAN_WALK_SEG), the walk's state between its
 * launches (a long, then an ACC_T a row). clreduce/plan_scan.py (rescue_bytes) sizes them. */
inline __global uint *scan_flags(__global ACC_T *carries, const ulong n_rows) {
    return (__global uint *)((__global char *)carries + (SPLIT > 1 ? (n_rows * SPLIT * sizeof(ACC_T) + 15) / 16 * 16 : 0));
}
/* the look-back's row flags (two sets): after its 4-word counter (see lookback_scan) */
#define LB_ROW_FLAGS(ws) ((ws) + 4)
/* any work-item: sets the row's flags it saw (their pass cleared them) */
#define SET_FLAGS(flags, n_rows, row, bad, big) do { \
        if (bad) { (flags)[row] = 1u; } \
        if (big) { (flags)[FLAG_WORDS(n_rows) + (row)] = 1u; } \
    } while (0)
#endif

/* ---- team prefix: exclusive prefix of each lane's total and the team's total ---------------- */
#define PREFIX_SCRATCH_LEN (SG_MODE == SG_LOCAL && LANES > 1 ? WG_SIZE : 1)

inline ACC_T team_prefix(const ACC_T t, ACC_T *total, LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
#if LANES == 1
    *total = t;
    return IDENT;
#elif SG_MODE == SG_BUILTIN
    *total = sub_group_reduce_add(t);
    return sub_group_scan_exclusive_add(t);
#elif SG_MODE == SG_SHUFFLE_KHR || SG_MODE == SG_SHUFFLE_QCOM || SG_MODE == SG_SHUFFLE_PTX
    /* Each lane holds the total of its aligned block of 2m lanes and the part of it that
     * lies before the lane; blocks double at every level. */
    ACC_T block = t, before = IDENT;
    for (uint m = 1; m < LANES; m <<= 1) {
        const ACC_T other = shuffle_xor(block, m);
        if (lane & m) {
            before = OP(other, before);
            block = OP(other, block);
        } else {
            block = OP(block, other);
        }
    }
    *total = block;
    return before;
#else
    /* Hillis-Steele inclusive scan over the team's slots; read, barrier, write, barrier */
    scratch[lid] = t;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < LANES; off <<= 1) {
        const ACC_T mine = scratch[lid];
        const ACC_T lower = lane >= off ? scratch[lid - off] : IDENT;
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] = OP(lower, mine);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ACC_T excl = lane > 0 ? scratch[lid - 1] : IDENT;
    *total = scratch[lid - lane + LANES - 1];
    barrier(CLK_LOCAL_MEM_FENCE);  /* the next tile overwrites scratch */
    return excl;
#endif
}

#define TILE ((ulong)LANES * ITEMS)

/* SCAN_UNROLL (planner: PoCL's sums and products, beside SCAN_OWN_ACCESS; default 0): a
 * lane's element loops (its accesses, its running values, the prefix added) unrolled by
 * pragma. The OpenCL dialect's UNROLL_LOOP is empty, and PoCL (3.0 from pip, 3.1 from Debian)
 * then kept scan_items as a loop over an array on the stack: each tile went there as one
 * vector store, came back through ITEMS scalar adds and stores, and was read again as one
 * vector load, which the store buffer cannot forward from ITEMS stores (float32 cumsum of
 * 250000 rows of 32 on pip's PoCL: 4.9 ms a call, 2.0 unrolled). The planner keeps such lanes
 * at 8 floats (plan_scan.SCAN_UNROLL_ITEMS_BYTES): Debian's 16, unrolled, ran as one 16-long
 * chain of adds. Intel's runtime and rusticl ran level with the pragma and keep their loops. */
#ifndef SCAN_UNROLL
#define SCAN_UNROLL 0
#endif
#if SCAN_UNROLL
#define LANE_LOOP _Pragma("unroll")
#else
#define LANE_LOOP UNROLL_LOOP
#endif

/* A lane's ITEMS consecutive elements of a tile: one ITEMS-wide access where they lie wholly
 * in the task at an address aligned for it (VLOAD_ALIGNED; always on OpenCL), else element by
 * element, IDENT past the end. Element accesses, lanes ITEMS elements apart, had held an H100's
 * float32 cumsum to ~45 % of copy (each warp access touched 32 sectors for 4 bytes each). */
#if IN_HALF
#define SCAN_RAW_T float
#else
#define SCAN_RAW_T IN_T
#endif
#if IN_HALF && (CPU_OWN_EXP || (SCAN_OWN_ACCESS && CPU_F16C))
/* CPU_OWN_EXP and SCAN_OWN_ACCESS with F16C: the accesses written with operators too (vloadn,
 * vload_halfn and vstoren are calls on pip's PoCL, cpu_vec.h): half as bits widened exactly,
 * floats element by element, which the compiler merges into one vector access */
#define SCAN_VLOAD(p, d) do {                                                                 \
        const CPU_V(float) h_ = cpu_half_bits_to_float(CPU_VLOAD(ushort, (__global const ushort *)(p))); \
        CAT(CPU_STORE_, ITEMS)(h_, (d));                                                      \
    } while (0)
#elif CPU_OWN_EXP || (SCAN_OWN_ACCESS && !IN_HALF)
#define SCAN_VLOAD(p, d) do {                                                                 \
        LANE_LOOP   for (uint j_ = 0; j_ < ITEMS; ++j_) {                                     \
            (d)[j_] = (p)[j_];                                                                \
        }                                                                                     \
    } while (0)
#elif IN_HALF
#define SCAN_VLOAD(p, d) VLOAD_HALF_ARRAY(ITEMS, p, d)
#else
#define SCAN_VLOAD(p, d) VLOAD_ARRAY(ITEMS, p, d)
#endif
/* The look-back stores through VSTORE_WIDE: with VSTORE_ARRAY nvcc split its first run's
 * 16-byte store into four (st.global.f32 x4, st.global.v2.u16 x4 in its PTX) */
#if (CPU_OWN_EXP || SCAN_OWN_ACCESS) && !OUT_HALF
#define SCAN_VSTORE(d, q) do {                                                                \
        LANE_LOOP   for (uint j_ = 0; j_ < ITEMS; ++j_) {                                     \
            (q)[j_] = (d)[j_];                                                                \
        }                                                                                     \
    } while (0)
#elif SCAN_OWN_ACCESS && OUT_HALF && CPU_F16C
/* rounded to nearest even by vcvtps2ph (cpu_vec.h CPU_F16C), stored as the halves' bits */
#define SCAN_VSTORE(d, q) do {                                                                \
        const CPU_V(ushort) b_ = cpu_f16c_bits(CPU_VLOAD(float, (d)));                        \
        CAT(CPU_STORE_, ITEMS)(b_, (__global ushort *)(q));                                   \
    } while (0)
#elif OUT_HALF && PHASE == 2
#define SCAN_VSTORE(d, q) VSTORE_HALF_WIDE(ITEMS, d, q)
#elif PHASE == 2
#define SCAN_VSTORE(d, q) VSTORE_WIDE(ITEMS, d, q)
#elif OUT_HALF
#define SCAN_VSTORE(d, q) VSTORE_HALF_ARRAY(ITEMS, d, q)
#else
#define SCAN_VSTORE(d, q) VSTORE_ARRAY(ITEMS, d, q)
#endif
inline void load_items(__global const IN_T *p, const ulong first, const ulong len, ACC_T *d) {
    if (first + ITEMS <= len && VLOAD_ALIGNED(p + first, ITEMS)) {
        SCAN_RAW_T raw[ITEMS];
        SCAN_VLOAD(p + first, raw);
        LANE_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = IN_VALUE(raw[j]);
        }
    } else {
        LANE_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = first + j < len ? LOAD(p, first + j) : IDENT;
        }
    }
}
#if PHASE != 1
inline void store_items(const ACC_T *d, __global OUT_T *q, const ulong first, const ulong len) {
    if (first + ITEMS <= len && VLOAD_ALIGNED(q + first, ITEMS)) {
        SCAN_VSTORE(d, q + first);
    } else {
        LANE_LOOP for (uint j = 0; j < ITEMS; ++j) {
            if (first + j < len) {
                STORE(d[j], q, first + j);
            }
        }
    }
}
#endif

/* A lane's ITEMS elements become their running values; returns the lane's total. */
inline ACC_T scan_items(ACC_T *d) {
    ACC_T run = IDENT;
    LANE_LOOP for (uint j = 0; j < ITEMS; ++j) {
        run = OP(run, d[j]);
        d[j] = run;
    }
    return run;
}
/* the prefix of everything before the lane, added to each running value */
inline void add_prefix(const ACC_T pre, ACC_T *d) {
    LANE_LOOP for (uint j = 0; j < ITEMS; ++j) {
        d[j] = OP(pre, d[j]);
    }
}

/* ---- logcumsumexp in the linear domain ------------------------------------------------------
 * A lane's ITEMS elements as exp(x - lm) around their max lm, with running sums s_j: one exp an
 * element, and the lane's total lm + log(s_last) (s_last >= 1: it holds the max's own 1). The
 * outputs are R + log(exp(pre - R) + exp(lm - R) * s_j), R = max(pre, lm): one log an element.
 * The log-domain chain (scan_items, then add_prefix) takes two exp and two log1p an element,
 * each behind NaN and inf tests. A lane takes that chain after all where the linear form
 * cannot stand for it: lm not finite (an inf, a NaN first, every element -inf, padding), pre
 * +inf or NaN, or some output's sum below LSE_TINY (elements far below a later one of the lane,
 * the prefix below them too: exp(x - lm) would lose them to underflow; above 2^-64 the terms
 * lost, each under 2^-126, cannot move the sum). A NaN after a finite first element reaches
 * s_j from its place on, as numpy's NaN does. */
#ifndef LSE_LINEAR
#define LSE_LINEAR (SCAN == SCAN_LOGADDEXP)
#endif
#if CPU_OWN_EXP && !LSE_LINEAR
#error "CPU_OWN_EXP: the linear-domain lanes"
#endif
#if LSE_LINEAR
#define LSE_TINY ((ACC_T)0x1p-64f)   /* 2^-64, a float literal: no double constant on devices without fp64 */
/* The log-domain chain of a lane (its running values after pre), for the rare lanes above,
 * out of the hot code on CUDA (COLD_INLINE). Inlined, its ITEMS logaddexp twice over (a
 * lane's total, its outputs) were most of each round of the look-back's write: 840 SASS
 * instructions a round unrolled 8 times, a 12.8K-instruction kernel. The lane goes by value,
 * so the hot path keeps its elements in registers. */
typedef struct { ACC_T v[ITEMS]; } lse_lane_t;
COLD_INLINE lse_lane_t lse_lane_chain(const ACC_T pre, lse_lane_t lane) {
    (void)scan_items(lane.v);
    add_prefix(pre, lane.v);
    return lane;
}
/* d's running values after pre, by the chain */
inline void lse_lane_chain_into(const ACC_T pre, ACC_T *d) {
    lse_lane_t lane;
    UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
        lane.v[j] = d[j];
    }
    lane = lse_lane_chain(pre, lane);
    UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
        d[j] = lane.v[j];
    }
}
/* the lane's total where its max is not finite: the chain's last value after IDENT, the fold
 * of OP over d (OP(IDENT, x) is x); d untouched */
inline ACC_T lse_lane_fold(const ACC_T *d) {
    lse_lane_t lane;
    UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
        lane.v[j] = d[j];
    }
    return lse_lane_chain(IDENT, lane).v[ITEMS - 1];
}
/* the lane's largest element, around which lse_lane_sums takes its terms */
inline ACC_T lse_lane_max(const ACC_T *d) {
    ACC_T m = d[0];
    UNROLL_LOOP for (uint j = 1; j < ITEMS; ++j) {
        m = d[j] > m ? d[j] : m;
    }
    return m;
}
#if CPU_OWN_EXP
/* the lane's total, its max (*lm) and running sums (s); d untouched */
inline ACC_T lse_lane_sums(const ACC_T *d, ACC_T *s, ACC_T *lm) {
    const ACC_T m = *lm = lse_lane_max(d);
    if (!LSE_FINITE(m)) {
        return lse_lane_fold(d);
    }
    const CPU_V(float) e = cpu_exp(CPU_VLOAD(float, d) - m);
    CAT(CPU_STORE_, VEC)(e, s);
    ACC_T sum = (ACC_T)0;
    UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
        sum += s[j];
        s[j] = sum;
    }
    return m + LSE_LOG1(sum);
}
/* the lane's outputs into d (its elements on entry), after everything before it (pre) */
inline void lse_lane_write(const ACC_T pre, const ACC_T lm, ACC_T *s, ACC_T *d) {
    bool slow = !LSE_FINITE(lm) || pre != pre || pre == (ACC_T)INFINITY;
    if (!slow) {
        /* exp(pre - r) and exp(lm - r), r the larger: one of them is 1 */
        const ACC_T w = LSE_EXP1(-(pre > lm ? pre - lm : lm - pre));
        const ACC_T r = pre > lm ? pre : lm;
        const ACC_T c_pre = pre > lm ? (ACC_T)1 : w, c_lane = pre > lm ? w : (ACC_T)1;
        const CPU_V(float) v = c_pre + c_lane * CPU_VLOAD(float, s);
        const CPU_V(int) tiny = CPU_MASK(v < LSE_TINY);
        const CPU_V(float) out = r + cpu_log(v);
        CAT(CPU_STORE_, VEC)(out, s);
        slow = CPU_HSUM(tiny) != 0;   /* halves by halves, in registers (cpu_vec.h) */
    }
    if (slow) {
        lse_lane_chain_into(pre, d);
    } else {
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = s[j];
        }
    }
}
#else
/* the lane's total, its max (*lm) and running sums (s); d untouched */
inline ACC_T lse_lane_sums(const ACC_T *d, ACC_T *s, ACC_T *lm) {
    const ACC_T m = *lm = lse_lane_max(d);
    if (!LSE_FINITE(m)) {
        return lse_lane_fold(d);
    }
    ACC_T sum = (ACC_T)0;
    UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
        sum += exp(d[j] - m);
        s[j] = sum;
    }
    return m + log(sum);
}
/* the lane's outputs into d (its elements on entry), after everything before it (pre) */
inline void lse_lane_write(const ACC_T pre, const ACC_T lm, ACC_T *s, ACC_T *d) {
    bool slow = !isfinite(lm) || isnan(pre) || pre == (ACC_T)INFINITY;
    if (!slow) {
        const ACC_T r = pre > lm ? pre : lm;
        const ACC_T c_pre = exp(pre - r), c_lane = exp(lm - r);
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            const ACC_T v = c_pre + c_lane * s[j];
            slow = slow || v < LSE_TINY;
            s[j] = r + log(v);
        }
    }
    if (slow) {
        lse_lane_chain_into(pre, d);
    } else {
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = s[j];
        }
    }
}
#endif /* CPU_OWN_EXP */
#endif

/* ---- the prefix of the lanes' run totals ----------------------------------------------------
 * run_prefix is team_prefix but for logcumsumexp's teams of sub-group lanes, where it sums in
 * the linear domain: around the team's largest total mx, each lane's exp(t - mx), their
 * exclusive prefix and total as sums, then mx + log of each. One exp and two log a lane where
 * the butterfly of logaddexp took ten, half the lanes idle at each (the upper half folds twice):
 * on an H200 the float32 look-back issued 384 instructions a lane and element, and ~1/3 of them
 * were its team prefixes. Where the linear sums cannot stand for the chain (a NaN or +inf, every
 * total -inf, a finite total whose exp(t - mx) is below LSE_TINY: the sums would lose it) the
 * whole sub-group takes the logaddexp butterfly, so the collectives stay uniform: by
 * sub_group_any where there is one, else a butterfly max of the lanes' votes over the
 * sub-group (OpenCL's shuffle modes do not require cl_khr_subgroups). */
#if LSE_LINEAR && LANES > 1 && SG_MODE != SG_LOCAL
#define LSE_TEAM_LINEAR 1
#else
#define LSE_TEAM_LINEAR 0
#endif
#if LSE_TEAM_LINEAR
#if HAS_SUB_GROUP_VOTE || SG_MODE == SG_BUILTIN
#define lse_sub_group_any(p) sub_group_any(p)
#else
inline bool lse_sub_group_any(const bool p) {
    ACC_T vote = p ? (ACC_T)1 : (ACC_T)0;
    for (uint m = 1; m < SG_SIZE; m <<= 1) {
        const ACC_T other = shuffle_xor(vote, m);
        vote = other > vote ? other : vote;
    }
    return vote != (ACC_T)0;
}
#endif
inline ACC_T run_prefix(const ACC_T t, ACC_T *total, LOCAL_PTR ACC_T *scratch, const uint lid, const uint lane) {
#if SG_MODE == SG_BUILTIN
    const ACC_T mx = sub_group_reduce_max(t);   /* NaN unspecified: a NaN lane votes below */
#else
    ACC_T mx = t;
    for (uint m = 1; m < LANES; m <<= 1) {
        const ACC_T other = shuffle_xor(mx, m);
        mx = other > mx ? other : mx;
    }
#endif
    const ACC_T e = exp(t - mx);
    const bool chain = t != t || t == (ACC_T)INFINITY || mx == (ACC_T)(-INFINITY) ||
                       (t != (ACC_T)(-INFINITY) && e < LSE_TINY);
    if (lse_sub_group_any(chain)) {
        return team_prefix(t, total, scratch, lid, lane);
    }
#if SG_MODE == SG_BUILTIN
    const ACC_T before = sub_group_scan_exclusive_add(e);
    const ACC_T sum = sub_group_reduce_add(e);
#else
    /* team_prefix's butterfly with + (commutative: both lanes of a pair get the same bits) */
    ACC_T sum = e, before = (ACC_T)0;
    for (uint m = 1; m < LANES; m <<= 1) {
        const ACC_T other = shuffle_xor(sum, m);
        before = (lane & m) ? before + other : before;
        sum += other;
    }
#endif
    *total = mx + log(sum);      /* sum >= 1: mx's own term */
    return mx + log(before);     /* before 0 (lane 0, or only -inf before it): -inf, IDENT */
}
#else
#define run_prefix team_prefix
#endif

#if PHASE == 2 || PHASE == 3
/* ---- the decoupled look-back ---------------------------------------------------------------- */
#define LB_SEGS (ROUNDS * (WG_SIZE / SG_SIZE))  /* sub-group-wide runs of a tile, in row order */
#define LB_TILE ((ulong)LB_SEGS * SG_SIZE * ITEMS)
#define LB_GROUP 32                              /* tiles per group: one sub-group's lanes */
#define LB_TILES_PER_ROW(row_len) (((row_len) + LB_TILE - 1) / LB_TILE)
#define LB_GROUPS_PER_ROW(row_len) ((LB_TILES_PER_ROW(row_len) + LB_GROUP - 1) / LB_GROUP)

/* Published values live in slots: one per tile (its total), then one per group for its total
 * and one for its inclusive prefix. The workspace (`carries`), in 32-bit words: 4 for the
 * ticket counter, then the slots -- PHASE 3 zeroes all of that -- and, for 8-byte ACC_T, the
 * values from the next 8-byte boundary. clreduce/plan_scan.py (lookback_workspace) computes
 * the same sizes.
 * A 4-byte ACC_T shares one 64-bit word with its ready bit, written and read whole: a reader
 * gets the value in the load that sees it ready (one trip to L2, no fence). An 8-byte ACC_T
 * has a flag word beside it: the value, then the flag with release order; the flag with
 * acquire order, then the value. */
#if ACC_BYTES == 4
#define LB_SLOT_WORDS 2
inline void lb_publish(__global uint *slots, __global ACC_T *values, const ulong i, const ACC_T v) {
    ((volatile __global ulong *)slots)[i] = ((ulong)as_uint(v) << 32) | 1ul;
}
inline bool lb_peek(__global uint *slots, __global ACC_T *values, const ulong i, ACC_T *v) {
    const ulong w = ((volatile __global ulong *)slots)[i];
    *v = CAT(as_, ACC_T)((uint)(w >> 32));
    return (w & 1ul) != 0;
}
#else
#define LB_SLOT_WORDS 1
inline void lb_publish(__global uint *slots, __global ACC_T *values, const ulong i, const ACC_T v) {
    values[i] = v;
    PUBLISH_FLAG(slots + i, 1u);
}
inline bool lb_peek(__global uint *slots, __global ACC_T *values, const ulong i, ACC_T *v) {
    if (OBSERVE_FLAG(slots + i) == 0u) {
        return false;
    }
    *v = ((volatile __global ACC_T *)values)[i];
    return true;
}
#endif

/* where this lane's ITEMS elements of run r start in a tile: each sub-group scans ROUNDS
 * runs of SG_SIZE * ITEMS elements, run r * subs + sub */
#define LB_FIRST(r) (((ulong)((r) * (WG_SIZE / SG_SIZE) + sub) * SG_SIZE + lane) * ITEMS)

/* LB_TRACE (a diagnostic, CUDA only; default 0): clock64 cycles of each phase of a block,
 * summed over its tiles by lane 0 of the first sub-group (waits on the look-back) and of the
 * second (the first fetcher), then written as LB_TRACE_WORDS 64-bit words per block over the
 * start of the output: the scan's results are wrong with it. Words: 0 tiles, 1 run prefixes
 * and the first barrier, 2 look-back, 3 second barrier, 4 write (first sub-group); 5-10 the
 * same for the first fetcher with 6 its ticket, 7 its copy in flight, 8 its sums and publish;
 * 11 the block's whole loop; 12 the look-back's polls. */
#ifndef LB_TRACE
#define LB_TRACE 0
#endif
#if LB_TRACE && !LB_AHEAD
#error "LB_TRACE times LB_AHEAD blocks"
#endif
#if LB_TRACE
#define LB_TRACE_WORDS 16
inline ulong *lb_trace_words(void) {
    __shared__ ulong words[LB_TRACE_WORDS];
    return words;
}
#define LB_MARK(name) const ulong name = (ulong)clock64()
#define LB_ADD(k, since) do { if (lane == 0) { lb_trace_words()[k] += (ulong)clock64() - (since); } } while (0)
#define LB_COUNT(k) do { if (lane == 0) { lb_trace_words()[k] += 1; } } while (0)
#else
#define LB_MARK(name)
#define LB_ADD(k, since)
#define LB_COUNT(k)
#endif

#if LB_AHEAD
/* A lane's ITEMS elements at `first` of a tile: from the tile's local copy where the whole
 * aligned 16-byte run was copied (lb_fetch_ahead), else from memory. */
typedef char lb_ahead_runs_are_16_bytes[(ITEMS * sizeof(IN_T) == 16) ? 1 : -1];
#define LB_COPIED(p, first, len) ((first) + ITEMS <= (len) && VLOAD_ALIGNED((p) + (first), ITEMS))
inline void lb_load(__global const IN_T *p, LOCAL_PTR const IN_T *copy, const ulong first, const ulong len,
                    ACC_T *d) {
    if (LB_COPIED(p, first, len)) {
        SCAN_RAW_T raw[ITEMS];
#if IN_HALF
        LOCAL_VLOAD_HALF_ARRAY(ITEMS, copy + first, raw);
#else
        LOCAL_VLOAD_ARRAY(ITEMS, copy + first, raw);
#endif
        UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
            d[j] = IN_VALUE(raw[j]);
        }
    } else {
        load_items(p, first, len, d);
    }
}
/* w[0] .. w[n - 1] (n a power of two) folded pairwise, in place: a fixed order (the ops are
 * commutative, so it is the total scan_items reaches, rounded differently) */
inline ACC_T fold_pairwise(ACC_T *w, const uint n) {
    UNROLL_LOOP for (uint width = n / 2; width > 0; width >>= 1) {
        UNROLL_LOOP for (uint j = 0; j < width; ++j) {
            w[j] = OP(w[j], w[j + width]);
        }
    }
    return w[0];
}
#ifndef LB_PREFIX_BATCH
#define LB_PREFIX_BATCH 0
#endif
/* LB_FETCHERS sub-groups (every one but the first, which waits on the look-back) fetch the
 * block's next tile: its ticket into *next, its runs into `copy`, each run's total into
 * `run_totals`, and the tile's total published (and into *next_total). Fetcher k takes runs
 * k, k + LB_FETCHERS, ...; lane l of it the run's l-th 16 bytes. The tile's total is each
 * fetcher's runs folded in a fixed order, then across its lanes (team_prefix), then the
 * fetchers' totals in fetcher order: the same bits on every run (the ops are commutative, so
 * any fixed order is the tile's total). The fetchers meet at a barrier of their own
 * (PART_BARRIER 1: the first sub-group is spinning on the look-back meanwhile). One fetcher
 * alone (LB_FETCHERS 1) left the block's other sub-groups waiting at its barrier: on an H200
 * half its cycles were barrier stalls, and float32 ran at 67 % of copy. The caller's barrier
 * makes it all visible to the block. */
#ifndef LB_FETCHERS
#define LB_FETCHERS (WG_SIZE / SG_SIZE - 1)
#endif
#if LB_FETCHERS < 1 || LB_FETCHERS > WG_SIZE / SG_SIZE - 1
#error "LB_FETCHERS: 1 to all sub-groups but the first"
#endif
/* the dialect's, not the planner's: `#if !defined`, so tests/test_plan.py's list of the
 * macros a plan must define (the `#ifndef` + `#error` pairs) leaves it out */
#if !defined(PART_BARRIER)
#error "LB_AHEAD needs the dialect's PART_BARRIER(id, n): barrier number id of the n work-items that call it"
#endif
inline void lb_fetch_ahead(__global const IN_T *in, const ulong row_len, const ulong tpr, const ulong n_tiles,
                           __global uint *ws, __global uint *slots, __global ACC_T *values, LOCAL_PTR IN_T *copy,
                           LOCAL_PTR ACC_T *run_totals, LOCAL_PTR uint *next, LOCAL_PTR ACC_T *next_total,
                           LOCAL_PTR ACC_T *parts, const uint lid, const uint lane, const uint fetcher) {
    LB_MARK(lb_t0);
    if (fetcher == 0 && lane == 0) {
        *next = TICKET(ws);
    }
    PART_BARRIER(1, LB_FETCHERS * SG_SIZE);
    if (fetcher == 0) { LB_ADD(6, lb_t0); }
    LB_MARK(lb_t1);
    const uint t = *next;
    if (t >= n_tiles) {
        return;   /* every fetcher returns: they read the same ticket */
    }
    const ulong start = (t % tpr) * LB_TILE;
    const ulong len = min(LB_TILE, row_len - start);
    __global const IN_T *p = in + (t / tpr) * row_len + start;
    NO_UNROLL for (uint m = fetcher; m < LB_SEGS; m += LB_FETCHERS) {
        const ulong first = ((ulong)m * SG_SIZE + lane) * ITEMS;
        if (LB_COPIED(p, first, len)) {
            STAGE_COPY16(copy + first, p + first);
        }
    }
    STAGE_COMMIT();
    STAGE_WAIT(0);
    if (fetcher == 0) { LB_ADD(7, lb_t1); }
    LB_MARK(lb_t2);
    /* each run's total pairwise, two runs a step where the fetcher has two more: sequential
     * adds within each run had cost float16 7 % (one fetcher then: 256 halves a lane) */
    ACC_T sum = IDENT;
    uint m = fetcher;
    NO_UNROLL for (; m + LB_FETCHERS < LB_SEGS; m += 2 * LB_FETCHERS) {
        ACC_T runs[2];
        UNROLL_LOOP for (uint k = 0; k < 2; ++k) {
            const uint run = m + k * LB_FETCHERS;
            ACC_T d[ITEMS];
            lb_load(p, copy, ((ulong)run * SG_SIZE + lane) * ITEMS, len, d);
#if LSE_LINEAR
            ACC_T lse_s[ITEMS], lse_m;
            runs[k] = lse_lane_sums(d, lse_s, &lse_m);
#else
            runs[k] = fold_pairwise(d, ITEMS);
#endif
            run_totals[run * SG_SIZE + lane] = runs[k];
        }
        sum = OP(sum, OP(runs[0], runs[1]));
    }
    if (m < LB_SEGS) {
        ACC_T d[ITEMS];
        lb_load(p, copy, ((ulong)m * SG_SIZE + lane) * ITEMS, len, d);
#if LSE_LINEAR
        ACC_T lse_s[ITEMS], lse_m;
        const ACC_T run = lse_lane_sums(d, lse_s, &lse_m);
#else
        const ACC_T run = fold_pairwise(d, ITEMS);
#endif
        run_totals[m * SG_SIZE + lane] = run;
        sum = OP(sum, run);
    }
    ACC_T total;
    (void)run_prefix(sum, &total, parts, lid, lane);
#if LB_FETCHERS > 1
    if (lane == 0) {
        parts[fetcher] = total;
    }
    PART_BARRIER(1, LB_FETCHERS * SG_SIZE);
    if (fetcher == 0) {
        total = parts[0];
        UNROLL_LOOP for (uint f = 1; f < LB_FETCHERS; ++f) {
            total = OP(total, parts[f]);
        }
    }
#endif
    if (fetcher == 0 && lane == 0) {
        lb_publish(slots, values, t, total);
        *next_total = total;
    }
    if (fetcher == 0) { LB_ADD(8, lb_t2); }
}
#endif

inline void lookback_scan(__global const IN_T *restrict in, __global OUT_T *restrict out, const ulong n_rows,
                          const ulong row_len, __global uint *ws, LOCAL_PTR uint *ticket, LOCAL_PTR ACC_T *segs,
                          LOCAL_PTR ACC_T *tile_prefix, LOCAL_PTR ACC_T *tile_total, LOCAL_PTR IN_T *copy,
                          LOCAL_PTR ACC_T *run_totals)
{
    const uint lid = get_local_id(0);
    const uint lane = get_sub_group_local_id();
    const uint sub = get_sub_group_id();
    const ulong tpr = LB_TILES_PER_ROW(row_len), gpr = LB_GROUPS_PER_ROW(row_len);
    const ulong n_tiles = n_rows * tpr, n_groups = n_rows * gpr;
    const ulong n_slots = n_tiles + 2 * n_groups;
    /* the counter, a flag a row (SCAN_RESCUE), the slots */
    const ulong head_words = 4 + 2 * FLAG_WORDS(n_rows);
    __global uint *slots = ws + head_words;
    const ulong slot_words = head_words + n_slots * LB_SLOT_WORDS;
    __global ACC_T *values = (__global ACC_T *)(ws + (slot_words + 1) / 2 * 2);

    /* tickets in the order work-groups take them: every lower ticket's group has started */
#if LB_AHEAD
#if LB_TRACE
    if (lid < LB_TRACE_WORDS) {
        lb_trace_words()[lid] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    LB_MARK(lb_start);
    ulong lb_end = 0;
#endif
    if (sub >= 1 && sub <= LB_FETCHERS) {
        lb_fetch_ahead(in, row_len, tpr, n_tiles, ws, slots, values, copy, run_totals, ticket, tile_total, segs,
                       lid, lane, sub - 1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* `segs` alternates between two buffers: a sub-group may write the next tile's run totals
     * while another still reads this tile's */
    NO_UNROLL
    for (uint it = 0;; ++it) {
        const ulong tile = *ticket;
        if (tile >= n_tiles) {
            break;
        }
        LB_MARK(lb_top);
        if (sub == 0) { LB_COUNT(0); }
        const ACC_T total_ahead = *tile_total;
        LOCAL_PTR ACC_T *seg = segs + (it & 1u) * LB_SEGS;
#else
    (void)tile_total;
    (void)copy;
    (void)run_totals;
    if (lid == 0) {
        *ticket = TICKET(ws);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        const ulong tile = *ticket;
        LOCAL_PTR ACC_T *seg = segs;
#endif
        const ulong row = tile / tpr, pos = tile % tpr;
        const ulong group = pos / LB_GROUP;
        const uint in_group = (uint)(pos % LB_GROUP);
        const ulong start = pos * LB_TILE;
        const ulong len = min(LB_TILE, row_len - start);
        __global const IN_T *p = in + row * row_len + start;
        __global OUT_T *q = out + row * row_len + start;

        ACC_T excl[ROUNDS];
#if SCAN_RESCUE
        bool big = false;   /* a big input among this work-item's (see SCAN_BAD) */
        const ACC_T big_sum = BIG_SUM(row_len);
        (void)big_sum;   /* products: big is above 1 */
#endif
#if LB_AHEAD && LB_PREFIX_BATCH && !LSE_LINEAR
        /* LB_PREFIX_BATCH: the rounds' run totals loaded, then their team prefixes, then the
         * segment totals stored, so that the rounds' shuffles can interleave */
        LOCAL_PTR IN_T *tile_copy = copy + (it & 1u) * LB_TILE;
        {
            ACC_T runs[ROUNDS], totals[ROUNDS];
            UNROLL_LOOP for (uint r = 0; r < ROUNDS; ++r) {
                runs[r] = run_totals[(r * (WG_SIZE / SG_SIZE) + sub) * SG_SIZE + lane];
            }
            UNROLL_LOOP for (uint r = 0; r < ROUNDS; ++r) {
                excl[r] = run_prefix(runs[r], &totals[r], seg, lid, lane);
            }
            if (lane == 0) {
                UNROLL_LOOP for (uint r = 0; r < ROUNDS; ++r) {
                    seg[r * (WG_SIZE / SG_SIZE) + sub] = totals[r];
                }
            }
        }
#else
#if LB_AHEAD
        /* The tile stays in its copy, never held in registers: its runs' totals, which the
         * fetch left in `run_totals`, now; its running values once the prefix is known. The
         * copy alternates between two buffers: the next tile lands in the other one while
         * this one is read (the run totals are read before the next fetch starts). */
        LOCAL_PTR IN_T *tile_copy = copy + (it & 1u) * LB_TILE;
#if LSE_LINEAR
        NO_UNROLL   /* five logaddexp a round (team_prefix): as the write below */
#else
        UNROLL_LOOP
#endif
        for (uint r = 0; r < ROUNDS; ++r) {
            const ACC_T run = run_totals[(r * (WG_SIZE / SG_SIZE) + sub) * SG_SIZE + lane];
#else
        /* Every load is issued before the first shuffle: with loads and shuffles interleaved
         * nvcc kept one load in flight per thread, and an H200 ran this kernel at 38 % of copy. */
        ACC_T v[ROUNDS][ITEMS];
        UNROLL_LOOP for (uint r = 0; r < ROUNDS; ++r) {
            load_items(p, LB_FIRST(r), len, v[r]);
        }
        UNROLL_LOOP for (uint r = 0; r < ROUNDS; ++r) {
#if SCAN_RESCUE
            CHECK_BIG(big, v[r], big_sum);
#endif
#if LSE_LINEAR
            ACC_T lse_s[ITEMS], lse_m;
            const ACC_T run = lse_lane_sums(v[r], lse_s, &lse_m);   /* v[r] kept: the write sums again */
#else
            const ACC_T run = scan_items(v[r]);
#endif
#endif
            ACC_T total;
            excl[r] = run_prefix(run, &total, seg, lid, lane);
            if (lane == 0) {
                seg[r * (WG_SIZE / SG_SIZE) + sub] = total;
            }
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);

        if (sub == 0) {
            LB_ADD(1, lb_top);
            LB_MARK(lb_look);
            /* the runs' exclusive prefixes and the tile's total */
            ACC_T total;
            const ACC_T seg_excl = run_prefix(lane < LB_SEGS ? seg[lane] : IDENT, &total, seg, lid, lane);
#if SCAN != SCAN_LOGADDEXP
            if (lane < LB_SEGS) {
                seg[lane] = seg_excl;
            }
#endif
#if LB_AHEAD
            total = total_ahead;   /* the total published when the tile was fetched */
#else
            if (lane == 0) {
                lb_publish(slots, values, tile, total);
            }
#endif
            const ulong first_tile = tile - in_group;
            const ulong gid = row * gpr + group;
            const bool last = in_group == LB_GROUP - 1;
            /* lane l < in_group: the total of tile l of this group */
            ACC_T mine = lane == in_group ? total : IDENT;
            bool have = lane >= in_group;
            ACC_T before, group_sum;
            if (last) {
                /* the group's total first: the next group's tiles wait on it */
                while (sub_group_any(!have)) {
                    if (!have) {
                        have = lb_peek(slots, values, first_tile + lane, &mine);
                    }
                    LB_COUNT(12);
                    POLL_PAUSE();
                }
                before = run_prefix(mine, &group_sum, seg, lid, lane);
                if (lane == 0) {
                    lb_publish(slots, values, n_tiles + gid, group_sum);
                }
            }
            /* the group's prefix: lane l looks at group h = group - 32 + l (groups before the
             * row: a known prefix of IDENT). Wait until some group of the window has its prefix
             * and every later one its total, then fold forward from the last prefix, in group
             * order. */
            const long h = (long)group - LB_GROUP + (long)lane;
            bool have_prefix = h < 0, have_total = h < 0;
            ACC_T group_pre = IDENT, group_tot = IDENT;
            int known;
            for (;;) {
                if (!have) {
                    have = lb_peek(slots, values, first_tile + lane, &mine);
                }
                if (!have_prefix) {
                    have_prefix = lb_peek(slots, values, n_tiles + n_groups + row * gpr + h, &group_pre);
                }
                if (!have_total) {
                    have_total = lb_peek(slots, values, n_tiles + row * gpr + h, &group_tot);
                }
                known = sub_group_reduce_max(have_prefix ? (int)lane : -1);
                if (known >= 0 && !sub_group_any(!have || ((int)lane > known && !have_total))) {
                    break;
                }
                LB_COUNT(12);
                POLL_PAUSE();
            }
            if (!last) {
                before = run_prefix(mine, &group_sum, seg, lid, lane);
            }
            const ACC_T value = (int)lane == known ? group_pre : group_tot;
            ACC_T prefix = sub_group_broadcast(value, (uint)known);
            for (uint l = (uint)known + 1; l < LB_GROUP; ++l) {
                prefix = OP(prefix, sub_group_broadcast(value, l));
            }
            if (last && lane == 0) {
                lb_publish(slots, values, n_tiles + n_groups + gid, OP(prefix, group_sum));
            }
#if SCAN == SCAN_LOGADDEXP
            /* logcumsumexp: the tile's prefix folded into its runs' prefixes once here, not
             * into each lane's every round (two logaddexp a round of the write became one:
             * +5 % float32 on an H200). cumsum keeps its add a round: the fold, on the
             * look-back's own path, cost it 1-2 %. */
            const ACC_T tile_pre = OP(prefix, sub_group_broadcast(before, in_group));
            if (lane < LB_SEGS) {
                seg[lane] = OP(tile_pre, seg_excl);
            }
#else
            if (lane == in_group) {
                *tile_prefix = OP(prefix, before);
            }
#endif
            LB_ADD(2, lb_look);
#if LB_TRACE
            lb_end = (ulong)clock64();
#endif
        }
#if LB_AHEAD
        else if (sub <= LB_FETCHERS) {
            if (sub == 1) { LB_ADD(5, lb_top); }
            /* every work-item has read the ticket and the total: the block's next tile goes
             * into the other buffer while the first sub-group waits */
            lb_fetch_ahead(in, row_len, tpr, n_tiles, ws, slots, values, copy + ((it + 1u) & 1u) * LB_TILE,
                           run_totals, ticket, tile_total, segs + 2 * LB_SEGS, lid, lane, sub - 1);
#if LB_TRACE
            lb_end = (ulong)clock64();
#endif
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#if LB_TRACE
        if (sub == 0) { LB_ADD(3, lb_end); }
        if (sub == 1) { LB_ADD(9, lb_end); }
        LB_MARK(lb_write);
#endif

#if SCAN == SCAN_LOGADDEXP
        (void)tile_prefix;
#define LB_RUN_PRE(r) OP(seg[(r) * (WG_SIZE / SG_SIZE) + sub], excl[r])
#else
        const ACC_T tile_pre = *tile_prefix;
#define LB_RUN_PRE(r) OP(OP(tile_pre, seg[(r) * (WG_SIZE / SG_SIZE) + sub]), excl[r])
#endif
#if LB_AHEAD && LSE_LINEAR
        /* a round of logcumsumexp's write is ~420 SASS instructions (an exp and a log an
         * element): unrolled ROUNDS times it made the kernel too big for the instruction
         * caches; excl[r] then lives in local memory (L1) */
        NO_UNROLL
#else
        UNROLL_LOOP
#endif
        for (uint r = 0; r < ROUNDS; ++r) {
#if LB_AHEAD
            ACC_T v_r[ITEMS];
            lb_load(p, tile_copy, LB_FIRST(r), len, v_r);
#if SCAN_RESCUE
            CHECK_BIG(big, v_r, big_sum);
#endif
#if !LSE_LINEAR
            (void)scan_items(v_r);
#endif
#else
            ACC_T *v_r = v[r];
#endif
#if LSE_LINEAR
            {
                ACC_T lse_s[ITEMS], lse_m;
                (void)lse_lane_sums(v_r, lse_s, &lse_m);
                lse_lane_write(LB_RUN_PRE(r), lse_m, lse_s, v_r);
            }
#else
            add_prefix(LB_RUN_PRE(r), v_r);
#endif
#if SCAN_RESCUE
            /* every output checked: the look-back's sums take many orders (group prefixes,
             * folds); values past len repeat the last one's */
            bool bad = false;
            UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
                bad |= SCAN_BAD(v_r[j]);
            }
            SET_FLAGS(LB_ROW_FLAGS(ws), n_rows, row, bad, big);
#endif
            store_items(v_r, q, LB_FIRST(r), len);
        }
#if LB_TRACE
        if (sub == 0) { LB_ADD(4, lb_write); }
        if (sub == 1) { LB_ADD(10, lb_write); }
#endif
    }
#if LB_TRACE
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        lb_trace_words()[11] = (ulong)clock64() - lb_start;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < LB_TRACE_WORDS) {
        ((__global ulong *)out)[get_group_id(0) * LB_TRACE_WORDS + lid] = lb_trace_words()[lid];
    }
#endif
}
#undef LB_FIRST
#undef LB_RUN_PRE
#endif

/* INTEL_VEC_LEN_1 (planner: Intel's CPU runtime, one-lane scans; default 0): the kernel asks
 * (cl_intel_vec_len_hint) not to be vectorised across work-items. That runtime ran a group's
 * work-items in SIMD lanes, one row each, so every element of a lane's tile became a gather
 * and a scatter: float32 cumsum took ~8 ms a call on 32 MB whatever the row length, 2.5 ms
 * with the hint (plan_scan.INTEL_SCAN_VEC_LEN_1). The runtime refuses the hint beside
 * intel_reqd_sub_group_size and under CL_CONFIG_CPU_VECTORIZER_MODE=4/8/16: the planner then
 * leaves it out. */
#ifndef INTEL_VEC_LEN_1
#define INTEL_VEC_LEN_1 0
#endif
#if INTEL_VEC_LEN_1
#define SCAN_VEC_LEN_HINT __attribute__((intel_vec_len_hint(1)))
#else
#define SCAN_VEC_LEN_HINT
#endif
__kernel SG_ATTR KERNEL_WG_SIZE(WG_SIZE) SCAN_VEC_LEN_HINT
void scan_rows(__global const IN_T *restrict in, const ulong in_offset,
               __global OUT_T *restrict out, const ulong out_offset,
               const ulong n_rows, const ulong row_len, const ulong chunk_len,
               __global ACC_T *restrict carries)
{
#if PHASE == 3
    /* the look-back's counter and flags: row_len words of `out` */
    __global uint *words = (__global uint *)(out + out_offset);
    for (ulong i = get_global_id(0); i < row_len; i += get_global_size(0)) {
        words[i] = 0u;
    }
#elif PHASE == 2
    __local uint ticket;
    /* the runs' totals: one buffer, or two and a team_prefix scratch with LB_AHEAD */
    __local ACC_T segs[(LB_AHEAD ? 3 : 1) * LB_SEGS];
    __local ACC_T tile_prefix, tile_total;
    /* LB_AHEAD: the tile's copy and the next one's, as 16-byte words (the copies' alignment) */
    __local uint4 copy[LB_AHEAD ? 2 * LB_SEGS * SG_SIZE : 1];
    __local ACC_T run_totals[LB_AHEAD ? LB_SEGS * SG_SIZE : 1];
    lookback_scan(in + in_offset, out + out_offset, n_rows, row_len, (__global uint *)carries, &ticket, segs,
                  &tile_prefix, &tile_total, (LOCAL_PTR IN_T *)copy, run_totals);
#elif PHASE == 4
    /* the rows a scan flagged, one work-item each, elements [chunk_len, chunk_len +
     * SCAN_WALK_SEG); the walk's state between launches after the flags */
#if LB_FLAGS
    __global uint *flags = LB_ROW_FLAGS((__global uint *)carries);
#else
    __global uint *flags = scan_flags(carries, n_rows);
#endif
    __global long *state_e = (__global long *)(flags + FLAG_SETS * FLAG_WORDS(n_rows));
    __global ACC_T *state_v = (__global ACC_T *)(state_e + n_rows);
    const ulong first = chunk_len;
    const ulong stop = SCAN_WALK_SEG ? min(row_len, first + (ulong)SCAN_WALK_SEG) : row_len;
    const ulong step = (ulong)get_global_size(0) * SCAN_WALK_ROWS;
    for (ulong r0 = (ulong)get_global_id(0) * SCAN_WALK_ROWS; r0 < n_rows; r0 += step) {
        uint f[SCAN_WALK_ROWS];
        UNROLL_LOOP for (uint u = 0; u < SCAN_WALK_ROWS; ++u) {
            f[u] = flags[r0 + u];   /* padding words past n_rows: never read as a row's */
        }
        for (uint u = 0; u < SCAN_WALK_ROWS; ++u) {
            const ulong row = r0 + u;
            /* FLAG_SETS 2: a bad partial and a big input, both anywhere in the row */
            if (f[u] == 0u || row >= n_rows ||
                (FLAG_SETS == 2 && !SCAN_BIG_IN_WALK && flags[FLAG_WORDS(n_rows) + row] == 0u)) {
                continue;
            }
#if SCAN_BIG_IN_WALK
            if (!row_has_big(in + in_offset + row * row_len, row_len, BIG_SUM(row_len))) {
                continue;
            }
#endif
            scan_walk_t w = walk_init();
            if (first > 0) {
                w.v = state_v[row];
                w.e = state_e[row];
            }
            w = scan_walk(in + in_offset + row * row_len + first, out + out_offset + row * row_len + first,
                          stop - first, w);
            if (stop < row_len) {
                state_v[row] = w.v;
                state_e[row] = w.e;
            }
        }
    }
#else
    __local ACC_T scratch[PREFIX_SCRATCH_LEN];
    const uint lid = get_local_id(0);
    const uint lane = LANE_ID();
    const uint team = TEAM_ID();
    const ulong n_tasks = n_rows * SPLIT;
    const ulong stride = (ulong)get_num_groups(0) * TEAMS;

#if SCAN_WALK_INLINE
    uint walk_bits = 0u;   /* bit i: the row of this team's i-th task needs the walk */
    uint trip = 0u;
#endif
    for (ulong base = (ulong)get_group_id(0) * TEAMS; base < n_tasks; base += stride) {
        const ulong task = base + team;
        const bool live = task < n_tasks;
        const ulong row = live ? task / SPLIT : 0;
        const ulong start = live ? (task % SPLIT) * chunk_len : 0;
        /* the planner never makes an empty chunk: start < row_len for live tasks */
        const ulong len = live ? min(chunk_len, row_len - start) : 0;
        __global const IN_T *p = in + in_offset + row * row_len + start;
#if PHASE == 0
        __global OUT_T *q = out + out_offset + row * row_len + start;
#endif
        ACC_T carry = IDENT;
#if SCAN == SCAN_LOGADDEXP
        ACC_T carry_lo = (ACC_T)0;   /* logaddexp_carry */
#endif
#if SPLIT > 1 && PHASE == 0
        if (live && task % SPLIT > 0) {
            carry = carries[task - 1];
        }
#endif
#if SCAN_RESCUE && PHASE == 0
        /* bad: this lane's exclusive prefixes and the carry (every output is carry + prefix +
         * a running value of the lane, and a bad partial reaches one of the three: the lane's
         * own through its total, into the carry); big: its inputs (see SCAN_BAD) */
        bool bad = false, big = false;
        const ACC_T big_sum = BIG_SUM(row_len);
        (void)big_sum;   /* products: big is above 1 */
#endif
#if SCAN_PREFETCH
        ACC_T v_next[ITEMS];   /* the next tile's elements, loading while this tile scans */
        load_items(p, (ulong)lane * ITEMS, len, v_next);
#endif
        for (ulong t0 = 0; t0 < chunk_len; t0 += TILE) {   /* uniform trip count: chunk_len */
            const ulong first = t0 + (ulong)lane * ITEMS;
            ACC_T v[ITEMS];   /* the lane's elements, then its running values */
#if SCAN_PREFETCH
            UNROLL_LOOP for (uint j = 0; j < ITEMS; ++j) {
                v[j] = v_next[j];
            }
            load_items(p, first + TILE, len, v_next);   /* past len: nothing read (IDENT) */
#else
            load_items(p, first, len, v);
#endif
#if SCAN_RESCUE && PHASE == 0
            CHECK_BIG(big, v, big_sum);
#endif
#if LSE_LINEAR
            ACC_T lse_s[ITEMS], lse_m;
            const ACC_T run = lse_lane_sums(v, lse_s, &lse_m);
#else
            const ACC_T run = scan_items(v);
#endif
            ACC_T total;
            const ACC_T excl = run_prefix(run, &total, scratch, lid, lane);
#if PHASE == 0 && LSE_LINEAR
            lse_lane_write(LANE_PRE(carry, excl), lse_m, lse_s, v);
            store_items(v, q, first, len);
#elif PHASE == 0
            const ACC_T lane_pre = OP(carry, excl);
#if SCAN_RESCUE
            /* the prefix the lane's outputs take, not only its parts: carry and excl finite (and
             * not 0) can meet past the range (3e38 + 1e38, or 1e-30 * 1e-20) where the outputs
             * come back into it (an outside fuzz run, 2026-11-30: forced teams gave inf and 0
             * for finite prefixes). A bad excl makes lane_pre bad too. */
            bad |= SCAN_BAD(lane_pre);
#endif
            add_prefix(lane_pre, v);
            store_items(v, q, first, len);
#endif
#if SCAN == SCAN_LOGADDEXP
            logaddexp_carry(&carry, &carry_lo, total);
#else
            carry = OP(carry, total);
#endif
        }
#if PHASE == 1
        if (lane == 0 && live) {
            out[out_offset + task] = carry;
#if SCAN_RESCUE
            /* PHASE 0 sets them */
            scan_flags(carries, n_rows)[row] = 0u;
            scan_flags(carries, n_rows)[FLAG_WORDS(n_rows) + row] = 0u;
#endif
        }
#endif
#if SCAN_RESCUE && PHASE == 0
        bad |= SCAN_BAD(carry);
#if SPLIT > 1
        if (live) {
            SET_FLAGS(scan_flags(carries, n_rows), n_rows, row, bad, big);   /* PHASE 4 walks the row */
        }
#else
        /* one flag a row, written whatever it says (no pass clears them): the team agrees
         * first. Walking the row here instead, after the team, cost an H100's float32 cumsum
         * of 1048576 x 32 30 % (the out-of-line call in the task loop), vote or not. */
#if LANES > 1 && SG_MODE != SG_LOCAL && (HAS_SUB_GROUP_VOTE || SG_MODE == SG_BUILTIN)
        /* votes over the whole sub-group: a team beside a flagged one has its row walked too */
        const bool walk = sub_group_any(bad) && sub_group_any(big);
#elif LANES > 1
        bool walk;
        {
            ACC_T any_bad, any_big;
            (void)team_prefix(bad ? (ACC_T)NAN : IDENT, &any_bad, scratch, lid, lane);
            (void)team_prefix(big ? (ACC_T)NAN : IDENT, &any_big, scratch, lid, lane);
            walk = any_bad != any_bad && any_big != any_big;
        }
#else
        const bool walk = bad && big;
#endif
#if SCAN_WALK_INLINE
        walk_bits |= (walk && live ? 1u : 0u) << trip;   /* the planner keeps trip < 32 */
        ++trip;
#else
        if (lane == 0 && live) {
            scan_flags(carries, n_rows)[row] = walk ? 1u : 0u;
        }
#endif
#endif
#endif
    }
#if SCAN_WALK_INLINE
    /* every lane's outputs are written before a team's lane 0 writes its rows again */
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lane == 0 && walk_bits != 0u) {
        walk_team_rows(in + in_offset, out + out_offset, row_len, walk_bits, (ulong)get_group_id(0) * TEAMS + team,
                       stride);
    }
#endif
#endif
}
