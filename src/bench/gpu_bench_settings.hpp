#pragma once
// Every tuned constant of the GPU benchmark, in one place.
#include <cstdint>

namespace fp4gemm::bench::gpu_settings {

// Ceilings. A 2 GiB device-to-device copy (4 GiB of traffic) is far past L2 and long enough
// (~1 ms) that launch overhead vanishes; best of several, since the roofline wants the ceiling.
inline constexpr std::int64_t kCopyBytes = std::int64_t(2) << 30;
inline constexpr int kCopyTrials = 10;
// cuBLAS BF16 GEMM of this cube on random data (zeros run faster and would inflate the ceiling).
inline constexpr int kComputeCube = 8192;
inline constexpr int kComputeTrials = 10;

// Rotation: prepared weight copies whose total (counted at NVFP4's 0.5625 B/element, the smallest
// any layout can be) exceeds this many times the L2, so each call reads its weight from HBM.
inline constexpr double kRotationL2Multiple = 2.0;
inline constexpr int kMinCopies = 2;
inline constexpr int kMaxCopies = 64;

// One CUDA graph holds at least this many calls, a whole number of rotations, so a replay lasts
// far longer than its launch.
inline constexpr int kMinCallsPerGraph = 20;
// Replays: untimed warm-up, then until kMinSeconds of samples or kMaxReplays.
inline constexpr int kWarmupReplays = 3;
inline constexpr int kMaxReplays = 50;
inline constexpr double kMinSeconds = 0.25;

// cuBLASLt workspace offered to the FP8 peer's heuristic.
inline constexpr std::int64_t kLtWorkspaceBytes = std::int64_t(32) << 20;
// Heuristic candidates the FP8 peer may try, in the heuristic's order, until one runs.
inline constexpr int kLtHeuristicCandidates = 8;

}  // namespace fp4gemm::bench::gpu_settings
