#pragma once
// Tuned constants and the K-split rule of cuda_decode's activation-resident wgmma kernel
// (sm90_resident_gemm.cu).
#include <cstdint>

namespace fp4gemm::cuda_decode {

// The activation-resident wgmma kernel (SM 9.0 only).
// Each CTA keeps its K slice of the packed activations in shared memory for the whole kernel and
// streams the weights of many 128-row blocks over it; the `splits` CTAs of a cluster own the
// slices of the same row blocks and sum their partial tiles through distributed shared memory
// after each row block. Activations then cross L2 once per cluster instead of once per row block
// (docs/design/activation-stationary-wgmma.md).
// Consumer warpgroups: kResidentKGroups K groups of two warpgroups, each group covering the 128
// rows of a row block over every kResidentKGroups-th chunk of the CTA's K slice. One CTA fills an
// SM, so its warpgroups are all the SM has to hide each one's decode -> wgmma -> wait chain. H200,
// 28672x8192 M = 64 (bench/results/2026-11-30-h200-s8.md): one group 157 us, two groups 211-215 us
// (each group's chunks 2.7x slower, the consumers waiting on weights that the ring of six stages
// left late); the wgmma kernel takes 91.
inline constexpr int kResidentKGroups = 1;
inline constexpr int kResidentWarpgroups = 2 * kResidentKGroups;
// Weight stages of the ring (one 4.5 KiB record each); the rest of shared memory holds activations.
inline constexpr int kResidentStages = 8;
inline constexpr int kMaxResidentSliceChunks = 64;  // bounds the per-chunk activation barriers
// A cluster of 16 is Hopper's non-portable maximum (K = 12288 at 64 tokens needs it).
inline constexpr int kMaxResidentSplits = 16;
// Shared memory one CTA may opt in to on SM 9.0 (cudaDevAttrMaxSharedMemoryPerBlockOptin, 227 KiB).
inline constexpr std::int64_t kSm90SharedBytesPerBlock = 232448;

struct ResidentShape {
  int tokens;  // 32 or 64 activation rows (M padded)
  int splits;  // CTAs per cluster, each owning 1/splits of K; 0: no split fits shared memory
};

// The fewest splits (a power of two) whose K slice fits `shared_bytes` of shared memory: fewer
// splits mean fewer partial-tile reductions per weight byte. FP4GEMM_RESIDENT_SPLITS=S overrides it
// (measurements only; throws on a value that is not a power of two up to kMaxResidentSplits).
ResidentShape choose_resident_shape(std::int64_t m, std::int64_t k, std::int64_t shared_bytes);

// Tuning knob for measurements only: FP4GEMM_RESIDENT_CLUSTERS=C sets the persistent grid to C
// clusters (any C >= 1 is correct: clusters never wait for one another). Returns false when unset;
// throws on a value below 1.
bool resident_clusters_override(int& clusters);

}  // namespace fp4gemm::cuda_decode
