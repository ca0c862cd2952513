// WeightHandle: one checkpoint weight, with each backend's layout made the first time that
// backend serves it.
#include <cstring>

#include "dispatch/runner_state.hpp"
#include "dispatch/staging.hpp"

namespace fp4gemm {

std::int64_t WeightHandle::rows() const { return state_ ? state_->source.rows : 0; }
std::int64_t WeightHandle::cols() const { return state_ ? state_->source.cols : 0; }

std::vector<std::string> WeightHandle::prepared_backends() const {
  std::vector<std::string> names;
  if (!state_) return names;
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (const auto& [name, layout] : state_->layouts) names.push_back(name);
  return names;
}

ResidentMemory& ResidentMemory::operator+=(const ResidentMemory& other) {
  device_bytes += other.device_bytes;
  host_bytes += other.host_bytes;
  for (const auto& [backend, bytes] : other.by_backend) by_backend[backend] += bytes;
  return *this;
}

ResidentMemory WeightHandle::resident() const {
  ResidentMemory total;
  if (state_) dispatch::add_resident(*state_, total);
  return total;
}

namespace dispatch {

void add_resident(const WeightState& weight, ResidentMemory& total) {
  std::lock_guard<std::mutex> lock(weight.mutex);
  for (const auto& [name, layout] : weight.layouts) {
    const auto where = weight.layout_memory.find(name);
    const bool on_device = where != weight.layout_memory.end() && where->second == Memory::cuda;
    (on_device ? total.device_bytes : total.host_bytes) += layout->resident_bytes;
    total.by_backend[name] += layout->resident_bytes;
  }
  const auto copied = std::int64_t(weight.owned_codes.size() + weight.owned_scales.size());
  if (copied > 0) {
    total.host_bytes += copied;
    total.by_backend["source copy"] += copied;
  }
}

std::shared_ptr<const PreparedWeight> WeightState::layout_for(Backend& backend, const DeviceInfo& device, int gpu_index) {
  const std::string name = backend.name();
  // NOTE: preparation runs under this weight's lock: two threads asking for the same new layout
  // must not both upload it; other weights are not blocked.
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = layouts.find(name); found != layouts.end()) return found->second;
  if (auto failed = prepare_failures.find(name); failed != prepare_failures.end()) {
    throw Error(ErrorCode::backend_failure, failed->second);
  }
  try {
    std::shared_ptr<const PreparedWeight> layout;
    if (source.memory == Memory::cuda && backend.memory() == Memory::host) {
      // A GPU-resident checkpoint weight for a host backend: staged through a temporary host copy.
      std::vector<std::uint8_t> codes(std::size_t(source.code_bytes()));
      std::vector<std::uint8_t> scales(std::size_t(source.scale_bytes()));
      copy_rows(codes.data(), codes.size(), Memory::host, source.codes, codes.size(), Memory::cuda, codes.size(), 1,
                gpu_index, nullptr);
      copy_rows(scales.data(), scales.size(), Memory::host, source.scales, scales.size(), Memory::cuda, scales.size(), 1,
                gpu_index, nullptr);
      Nvfp4View host_view = source;
      host_view.codes = codes.data();
      host_view.scales = scales.data();
      host_view.memory = Memory::host;
      layout = backend.prepare(host_view, device);
    } else {
      layout = backend.prepare(source, device);
    }
    layouts[name] = layout;
    layout_memory[name] = backend.memory();
    return layout;
  } catch (const Error& error) {
    if (error.code() == ErrorCode::unrecoverable) throw;
    prepare_failures[name] = std::string("preparing the weight failed: ") + error.what();
  } catch (const std::bad_alloc&) {
    prepare_failures[name] = "preparing the weight ran out of host memory";
  } catch (const std::exception& error) {
    prepare_failures[name] = std::string("preparing the weight failed: ") + error.what();
  }
  throw Error(ErrorCode::backend_failure, prepare_failures[name]);
}

}  // namespace dispatch
}  // namespace fp4gemm
