// ksw2.cuh: the constants of minimap2 2.31's ksw2.h that the ksw2 kernels share (ksw_extd2.cu,
// ksw_extz2.cu). The loader puts this file's text where a kernel file says #include "ksw2.cuh".
#define KSW_NEG_INF (-0x40000000)
#define KSW_EZ_SCORE_ONLY 0x01
#define KSW_EZ_RIGHT 0x02
#define KSW_EZ_GENERIC_SC 0x04
#define KSW_EZ_APPROX_MAX 0x08
#define KSW_EZ_APPROX_DROP 0x10
#define KSW_EZ_EXTZ_ONLY 0x40
#define KSW_EZ_REV_CIGAR 0x80
