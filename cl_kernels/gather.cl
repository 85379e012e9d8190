/* gather.cl: copy a strided N-d view into a C-contiguous buffer, on the device.
 *
 * Used for device-resident inputs that no reduce kernel can read in place (non-contiguous
 * views, or reduced axes that are not adjacent): the reduce then runs on the copy. The
 * destination's axis d has extent shape[d] and the source moves src_strides[d] elements
 * per step along it, so a transposed copy is just a permuted (shape, strides) pair.
 *
 * Required macros: T (element type as stored; half is copied as ushort bits), NDIM (1-8).
 * Arguments: shape and source strides (elements) of the destination's axes as long8,
 * padded past NDIM. Launch: 1-D, any sizes; grid-stride over the destination's elements.
 */
#ifndef T
#error "T (element type) is required"
#endif
#ifndef NDIM
#error "NDIM (number of axes, 1-8) is required"
#endif
#if NDIM < 1 || NDIM > 8
#error "NDIM must be 1..8"
#endif

__kernel void gather_strided(__global const T *restrict src, const long src_offset,
                             __global T *restrict dst, const ulong n,
                             const long8 shape8, const long8 strides8)
{
    /* component copies, not vstore8: pip's PoCL 3.0 on an AVX-512 host miscompiles builtin
     * calls on 512-bit vectors (DeviceCaps.vector_bytes_limit says how) */
    const long shape[8] = {shape8.s0, shape8.s1, shape8.s2, shape8.s3, shape8.s4, shape8.s5, shape8.s6, shape8.s7};
    const long src_strides[8] = {strides8.s0, strides8.s1, strides8.s2, strides8.s3,
                                 strides8.s4, strides8.s5, strides8.s6, strides8.s7};
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        ulong rest = i;
        long offset = src_offset;
        for (int d = NDIM - 1; d >= 0; --d) {
            const ulong extent = (ulong)shape[d];
            offset += (long)(rest % extent) * src_strides[d];
            rest /= extent;
        }
        dst[i] = src[offset];
    }
}
