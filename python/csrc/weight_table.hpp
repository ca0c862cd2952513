#pragma once
// The process-wide state behind torch.ops.fp4gemm: one Runner per (device, backend request), and
// the table of prepared weights keyed by the int id that prepare() returns.
//
// Why an id and not the layout as a tensor: the runner makes each backend's layout lazily, as an
// opaque C++ object in that backend's memory, the first time the backend serves the weight; a
// tensor would have to expose every backend's layout format. The id keeps gemm's arguments plain
// (tensors and an int), which torch.compile bakes in as a constant and a CUDA graph never reads.
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>

#include "fp4gemm/runner.hpp"

namespace fp4gemm::torch_ops {

// The library's DType for a float32, bfloat16 or float16 tensor; Error naming `what` otherwise.
DType dtype_of(at::ScalarType type, const char* what);

// "[2, 3]": a tensor's shape for error sentences.
std::string shape_of(const at::Tensor& tensor);

// Where a tensor lives, as the library's Memory and device ordinal.
struct Placement {
  Memory memory = Memory::host;
  int device = 0;
};
Placement placement_of(const at::Tensor& tensor);

// The caller's current CUDA stream for a CUDA placement, so an op is ordered with the caller's
// work and captured by a CUDA graph being recorded on that stream; null (unused) for the CPU.
// Throws a sentence when this build has no CUDA backends.
RunContext context_for(const Placement& placement);

// The runner for tensors at `placement` with backend request `backend` ("auto" or a name); made
// on first use and kept for the life of the process (its canaries and quarantines with it).
Runner& runner_for(const Placement& placement, const std::string& backend);

// Records a checkpoint weight (codes uint8 [N, K/2], scales E4M3 [N, K/16], weight_scale_2) and
// returns its id. The table keeps the two tensors alive until release(id).
std::int64_t register_weight(const at::Tensor& codes, const at::Tensor& scales, float weight_scale_2);

// The runner's handle for weight `id`, checked against the codes tensor gemm was given.
WeightHandle handle_for(std::int64_t id, const at::Tensor& codes, Runner& runner);

// What weight `id`'s layouts hold now, over every runner that has served it (WeightHandle::resident);
// an unknown id is an error.
ResidentMemory weight_resident(std::int64_t id);

// Forgets weight `id` and drops its layouts; an unknown id is an error.
void release_weight(std::int64_t id);

}  // namespace fp4gemm::torch_ops
