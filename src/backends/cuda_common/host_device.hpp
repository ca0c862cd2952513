#pragma once
// FP4GEMM_HOST_DEVICE: a function both the kernels and the host (layout code, tests) compile, so
// that the two share one definition.
#if defined(__CUDACC__)
#define FP4GEMM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FP4GEMM_HOST_DEVICE inline
#endif
