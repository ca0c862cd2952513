#pragma once
// The fastest a GEMM could possibly run on a device: max(minimal bytes / bandwidth, FLOPs / math
// rate). The ceilings are a table per device family; only the H200 row is measured here, the
// others are nominal vendor figures and labelled as such.
#include <string>

#include "fp4gemm/device.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::dispatch {

struct DeviceCeilings {
  std::string label;                   // "H200 (measured: copy 4.28 TB/s, ...)", "SM 10.x B200 (nominal)"
  bool measured = false;               // false: datasheet numbers, not measured by this project
  double bandwidth_bytes_per_s = 0.0;  // 0 when unknown
  double bf16_flops_per_s = 0.0;       // dense BF16 tensor-core rate
  double fp4_flops_per_s = 0.0;        // dense block-scaled FP4 rate; 0 without FP4 tensor cores
};

DeviceCeilings ceilings_for(const DeviceInfo& device);

struct RooflineEstimate {
  bool available = false;   // false when the device has no ceilings in the table
  DeviceCeilings ceilings;
  double bytes = 0.0;       // GemmProblem::minimal_bytes(): N*K*kNvfp4BytesPerElement + activations + output
  double flops = 0.0;
  double memory_seconds = 0.0;
  double compute_seconds = 0.0;
  double seconds = 0.0;     // the larger of the two
  std::string bound;        // "memory" or "compute"
  std::string math;         // "bf16" or "fp4": which rate bounds the math
};

// `native_fp4`: the chosen backend multiplies in FP4 (cublaslt); otherwise it computes in BF16.
RooflineEstimate estimate_roofline(const GemmProblem& problem, const DeviceInfo& device, bool native_fp4);

}  // namespace fp4gemm::dispatch
