/* shuffle_xor.h: the xor shuffle of one ACC_T, and of one 32-bit word, in the sub-group
 * shuffle modes -- the one copy that team_common.h (the row kernels) and reduce_state.cl
 * (the state merges) share. cl_qcom_subgroup_shuffle and the dialect's word shuffle (NVIDIA
 * OpenCL: shfl.sync.bfly.b32) move 32-bit values: wider values go as words.
 *
 * The includer defines SG_MODE (when it uses sub-groups), the SG_SHUFFLE_* mode numbers,
 * ACC_T, ACC_BYTES and CAT; clreduce/kernels.py splices this file in.
 */
#ifndef SHUFFLE_XOR_H
#define SHUFFLE_XOR_H

#if defined(SG_MODE) && (SG_MODE == SG_SHUFFLE_QCOM || SG_MODE == SG_SHUFFLE_PTX)
inline uint shuffle_word(uint v, uint mask) {
#if SG_MODE == SG_SHUFFLE_QCOM
    return qcom_sub_group_shuffle_xor(v, mask, CLK_SUB_GROUP_SHUFFLE_WIDTH_WAVE_SIZE_QCOM, 0u);
#else
    return word_shuffle_xor(v, mask);
#endif
}
inline ACC_T shuffle_xor(ACC_T v, uint mask) {
#if ACC_BYTES == 8
    uint2 u = as_uint2(v);
    u.x = shuffle_word(u.x, mask);
    u.y = shuffle_word(u.y, mask);
    return CAT(as_, ACC_T)(u);
#else
    return CAT(as_, ACC_T)(shuffle_word(as_uint(v), mask));
#endif
}
#elif defined(SG_MODE) && SG_MODE == SG_SHUFFLE_KHR
inline ACC_T shuffle_xor(ACC_T v, uint mask) { return sub_group_shuffle_xor(v, mask); }
#endif

#endif /* SHUFFLE_XOR_H */
