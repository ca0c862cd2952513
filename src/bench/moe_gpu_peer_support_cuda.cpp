// What both GPU MoE peers share: the plans on the device, the touched experts' copies, the memory check.
#include <cstdio>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/moe_gpu_peers.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::bench {

std::vector<DevicePlan> upload_plans(const std::vector<moe::TopK>& routings, std::int64_t experts) {
  std::vector<DevicePlan> plans;
  for (const moe::TopK& routing : routings) {
    DevicePlan device;
    device.plan = plan_moe_peer(routing, experts);
    const MoePeerPlan& plan = device.plan;
    device.gather = cuda::upload(plan.gather.data(), plan.gather.size() * 4, "a peer's gather rows");
    device.combine_rows = cuda::upload(plan.combine_rows.data(), plan.combine_rows.size() * 4, "a peer's combine rows");
    device.combine_weights = cuda::upload(plan.combine_weights.data(), plan.combine_weights.size() * 4, "a peer's combine weights");
    plans.push_back(std::move(device));
  }
  return plans;
}

const std::uint8_t* TouchedExpertCopies::gate_up_of(std::int32_t expert) const {
  const std::int64_t slot = slot_of.at(std::size_t(expert));
  if (slot < 0) throw_invalid("expert " + std::to_string(expert) + " has no converted copy: the peer was made for other routings");
  return gate_up.as<const std::uint8_t>() + std::size_t(slot) * gate_up_bytes;
}

const std::uint8_t* TouchedExpertCopies::down_of(std::int32_t expert) const {
  const std::int64_t slot = slot_of.at(std::size_t(expert));
  if (slot < 0) throw_invalid("expert " + std::to_string(expert) + " has no converted copy: the peer was made for other routings");
  return down.as<const std::uint8_t>() + std::size_t(slot) * down_bytes;
}

void copy_device_slots(cuda::DeviceBuffer& target, std::size_t bytes, const std::vector<cuda::DeviceBuffer>& distinct,
                       const std::vector<std::int32_t>& touched, std::int64_t distinct_count, const std::string& what) {
  target = cuda::DeviceBuffer(bytes * touched.size(), what);
  for (std::size_t slot = 0; slot < touched.size(); ++slot) {
    const cuda::DeviceBuffer& source = distinct[std::size_t(touched[slot] % distinct_count)];
    cuda::check_cuda(cudaMemcpy(target.as<std::uint8_t>() + slot * bytes, source.data(), bytes, cudaMemcpyDeviceToDevice),
                     "bench: copying " + what);
  }
}

void GpuMoePeer::prepare(cudaStream_t stream) {
  for (int draw = 0; draw < draws_; ++draw) enqueue(draw, stream);
  cuda::check_cuda(cudaStreamSynchronize(stream), "bench: preparing the MoE peer " + name());
}

void require_device_memory(double bytes, const std::string& peer) {
  std::size_t free = 0, total = 0;
  cuda::check_cuda(cudaMemGetInfo(&free, &total), "bench: reading the free device memory");
  // Room is kept for the library workspaces and our layer's own buffers.
  constexpr double kUsableShare = 0.9;
  if (bytes <= kUsableShare * double(free)) return;
  char text[200];
  std::snprintf(text, sizeof text, "%s needs %.1f GiB of device memory for its expert copies and buffers; %.1f GiB are free",
                peer.c_str(), bytes / double(1 << 30), double(free) / double(1 << 30));
  throw Error(ErrorCode::unsupported, text);
}

}  // namespace fp4gemm::bench
