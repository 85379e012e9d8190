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
    long shape[8], src_strides[8];
    vstore8(shape8, 0, shape);
    vstore8(strides8, 0, src_strides);
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
