#pragma once
// The GPU MoE peers of `fp4gemm bench --moe`: the whole layer (gather, gate_up GEMM, SiLU·mul,
// down GEMM, weighted combine) as a deployment without FP4 kernels runs it, on the same x,
// routing draws and output buffer as our layer, each call stream-ordered (CUDA-graph capturable).
// Peers keep converted copies (BF16, E4M3) of the experts the draws touch, made before timing.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda_common/device_buffer.hpp"
#include "bench/moe_bench.hpp"
#include "bench/moe_peer_plan.hpp"

namespace fp4gemm::bench {

// What every timed GPU MoE call shares: x [T, H] and out [T, H] (BF16) and the routing draws, on the device.
struct GpuMoeOperands {
  std::int64_t tokens = 0, hidden = 0;
  int top_k = 0;
  std::vector<moe::TopK> routings;                 // host copies of the draws
  std::vector<float> x_values;                     // x as FP32 (BF16-exact), for the check against ref
  cuda::DeviceBuffer x, out;                       // BF16
  std::vector<cuda::DeviceBuffer> ids, weights;    // per draw: int32 [T, k], FP32 [T, k]
};

// Random x (standard normal rounded to BF16, the same for every T's first rows), the draws uploaded,
// the output allocated (not written).
GpuMoeOperands make_gpu_moe_operands(const MoeBenchShape& shape, std::vector<moe::TopK> routings);

class GpuMoePeer {
 public:
  virtual ~GpuMoePeer() = default;
  virtual std::string name() const = 0;
  virtual std::string how() const = 0;  // what it runs and keeps, for the row's note
  // Runs every draw once, directly, and synchronises: library handles, algorithm choices and any
  // fallback are settled here, so that nothing is decided during graph capture.
  virtual void prepare(cudaStream_t stream);
  // operands.out = the layer on operands.x with routing draw `draw`, enqueued on `stream` (after prepare()).
  virtual void enqueue(int draw, cudaStream_t stream) = 0;

 protected:
  explicit GpuMoePeer(const GpuMoeOperands& operands) : draws_(int(operands.routings.size())) {}

 private:
  int draws_ = 0;
};

// The per-draw plan (moe_peer_plan.hpp) on the device: gather rows and combine rows/weights.
struct DevicePlan {
  MoePeerPlan plan;
  cuda::DeviceBuffer gather, combine_rows, combine_weights;
};
std::vector<DevicePlan> upload_plans(const std::vector<moe::TopK>& routings, std::int64_t experts);

// Converted copies of the touched experts, one slot each: slot_of[e] (-1: untouched) and each
// slot's gate_up [2I, H] and down [H, I] in `gate_up`/`down` at slot · bytes. The bench layer's
// experts repeat a few distinct ones (MoeBenchLayer), so each distinct expert is converted on the
// host once and copied on the device into every slot that repeats it: every slot has its own memory.
struct TouchedExpertCopies {
  std::vector<std::int64_t> slot_of;
  std::size_t gate_up_bytes = 0, down_bytes = 0;
  cuda::DeviceBuffer gate_up, down;
  const std::uint8_t* gate_up_of(std::int32_t expert) const;
  const std::uint8_t* down_of(std::int32_t expert) const;
};
// `convert(distinct, is_down)` returns the bytes of distinct expert `distinct`'s gate_up or down.
template <class Convert>
TouchedExpertCopies copy_touched_experts(const MoeBenchLayer& layer, const std::vector<std::int32_t>& touched, Convert convert);

// Throws Error(unsupported) naming the peer when `bytes` more would not fit in the free device
// memory (a peer that cannot hold its copies is skipped with that reason, not run half way).
void require_device_memory(double bytes, const std::string& peer);

// The peers. Construction converts and uploads; a peer that cannot run throws Error with why.
std::unique_ptr<GpuMoePeer> make_cublas_bf16_grouped_peer(const MoeBenchLayer& layer, GpuMoeOperands& operands);
std::unique_ptr<GpuMoePeer> make_cublaslt_fp8_peer(const MoeBenchLayer& layer, GpuMoeOperands& operands);

// --- template implementation ---
void copy_device_slots(cuda::DeviceBuffer& target, std::size_t bytes, const std::vector<cuda::DeviceBuffer>& distinct,
                       const std::vector<std::int32_t>& touched, std::int64_t distinct_count, const std::string& what);

template <class Convert>
TouchedExpertCopies copy_touched_experts(const MoeBenchLayer& layer, const std::vector<std::int32_t>& touched, Convert convert) {
  const std::int64_t experts = layer.shape().experts;
  const std::int64_t distinct_count = std::min<std::int64_t>(MoeBenchLayer::kDistinctExperts, experts);
  TouchedExpertCopies copies;
  copies.slot_of.assign(std::size_t(experts), -1);
  for (std::size_t slot = 0; slot < touched.size(); ++slot) copies.slot_of[std::size_t(touched[slot])] = std::int64_t(slot);
  std::vector<cuda::DeviceBuffer> gate_up_sources, down_sources;
  for (std::int64_t d = 0; d < distinct_count; ++d) {
    const std::vector<std::uint8_t> gate_up = convert(d, false), down = convert(d, true);
    copies.gate_up_bytes = gate_up.size();
    copies.down_bytes = down.size();
    gate_up_sources.push_back(cuda::upload(gate_up.data(), gate_up.size(), "a peer's converted expert gate_up"));
    down_sources.push_back(cuda::upload(down.data(), down.size(), "a peer's converted expert down"));
  }
  copy_device_slots(copies.gate_up, copies.gate_up_bytes, gate_up_sources, touched, distinct_count, "a peer's expert gate_up copies");
  copy_device_slots(copies.down, copies.down_bytes, down_sources, touched, distinct_count, "a peer's expert down copies");
  return copies;
}

}  // namespace fp4gemm::bench
