#pragma once
// The requirements of the `cublaslt` backend as pure functions of a DeviceInfo and a problem, so
// they are compiled (and tested) in every build, with or without CUDA or a GPU. The backend adds
// cuBLASLt's own heuristic query on top when the device is real (DeviceInfo::probed).
#include <cstdint>
#include <string>

#include "fp4gemm/backend.hpp"

namespace fp4gemm::cublaslt {

// cublasLtGetVersion() encoding: major*10000 + minor*100 + patch.
// NOTE: CUDA 12.8's cuBLASLt is the first with CUDA_R_4F_E2M1 and VEC16_UE4M3 block scaling
// (SM 10.0, SM 12.0); 12.9 added the SM 10.3 and SM 12.1 targets (CUDA release notes). Neither
// floor has been exercised on Blackwell hardware by this project.
inline constexpr int kMinimumVersion = 120800;
inline constexpr int kMinimumVersionSm103Sm121 = 120900;

// Workspace handed to cublasLtMatmul (and used by the memory check): 32 MiB covers the split-K
// and stream-K variants its heuristic returns for large problems.
inline constexpr std::int64_t kWorkspaceBytes = std::int64_t(32) << 20;

std::string version_text(int version);  // 130100 -> "13.1.0"
bool is_supported_sm(int sm);           // 100, 103, 120, 121

// SM range and library version, from the DeviceInfo fields only.
CheckResult check_device_requirements(const DeviceInfo& device);
// W4A4 only, K and N alignment, device memory for the weight and workspace.
CheckResult check_problem_requirements(const GemmProblem& problem, const DeviceInfo& device);

// Device bytes one prepared weight occupies: packed codes plus swizzled 128x4 scales.
std::int64_t prepared_weight_bytes(std::int64_t rows, std::int64_t cols);

}  // namespace fp4gemm::cublaslt
