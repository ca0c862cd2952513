// The runners and the prepared-weight table behind torch.ops.fp4gemm (see weight_table.hpp).
#include "weight_table.hpp"

#include <map>
#include <mutex>
#include <utility>

#ifdef FP4GEMM_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace fp4gemm::torch_ops {
namespace {

struct WeightEntry {
  at::Tensor codes;   // kept alive: the runner borrows from them to make layouts lazily
  at::Tensor scales;
  Nvfp4View view;
  std::map<const Runner*, WeightHandle> handles;  // one per runner that has served it
};

struct State {
  std::mutex mutex;
  std::map<std::pair<int, std::string>, std::unique_ptr<Runner>> runners;  // (device or -1 for CPU, backend)
  std::map<std::int64_t, WeightEntry> weights;
  std::int64_t next_id = 1;
};

State& state() {
  static State* instance = new State();  // never destroyed: runners may outlive static teardown order
  return *instance;
}

}  // namespace

std::string shape_of(const at::Tensor& tensor) {
  std::string text = "[";
  for (std::int64_t d = 0; d < tensor.dim(); ++d) text += (d ? ", " : "") + std::to_string(tensor.size(d));
  return text + "]";
}

DType dtype_of(at::ScalarType type, const char* what) {
  switch (type) {
    case at::kFloat: return DType::f32;
    case at::kBFloat16: return DType::bf16;
    case at::kHalf: return DType::f16;
    default:
      throw_invalid(std::string(what) + " must be float32, bfloat16 or float16, not " + c10::toString(type));
  }
}

Placement placement_of(const at::Tensor& tensor) {
  if (tensor.is_cuda()) return {Memory::cuda, tensor.get_device()};
  if (!tensor.is_cpu()) {
    throw_invalid(std::string("fp4gemm takes CPU or CUDA tensors, not ") + tensor.device().str() + " ones");
  }
  return {Memory::host, 0};
}

RunContext context_for(const Placement& placement) {
  RunContext context;
#ifdef FP4GEMM_WITH_CUDA
  if (placement.memory == Memory::cuda) context.cuda_stream = c10::cuda::getCurrentCUDAStream(placement.device).stream();
#else
  if (placement.memory == Memory::cuda) {
    throw Error(ErrorCode::unsupported, "this fp4gemm build has no CUDA backends (built with FP4GEMM_CUDA=OFF or "
                                        "without nvcc); pass CPU tensors or rebuild with the CUDA toolkit");
  }
#endif
  return context;
}

Runner& runner_for(const Placement& placement, const std::string& backend) {
  const int key = placement.memory == Memory::cuda ? placement.device : -1;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto& slot = s.runners[{key, backend}];
  if (!slot) {
    RunnerOptions options;
    // "auto" leaves the choice to the runner as the CLI without --backend does: FP4GEMM_BACKEND, then auto.
    options.backend = backend == "auto" ? "" : backend;
    options.device = placement.memory == Memory::cuda ? placement.device : RunnerOptions::kCpuOnly;
    slot = std::make_unique<Runner>(std::move(options));
  }
  return *slot;
}

std::int64_t register_weight(const at::Tensor& codes, const at::Tensor& scales, float weight_scale_2) {
  if (codes.dim() != 2 || codes.scalar_type() != at::kByte) {
    throw_invalid("prepare: the weight codes must be a 2-D uint8 tensor [N, K/2], got " +
                  std::string(c10::toString(codes.scalar_type())) + " " + shape_of(codes));
  }
  const auto scale_type = scales.scalar_type();
  if (scales.dim() != 2 || (scale_type != at::kByte && scale_type != at::kFloat8_e4m3fn)) {
    throw_invalid("prepare: the block scales must be a 2-D float8_e4m3fn or uint8 tensor [N, K/16], got " +
                  std::string(c10::toString(scale_type)) + " " + shape_of(scales));
  }
  const std::int64_t rows = codes.size(0), cols = codes.size(1) * 2;
  if (scales.size(0) != rows || scales.size(1) * 16 != cols) {
    throw_invalid("prepare: block scales " + shape_of(scales) + " do not match codes " + shape_of(codes) +
                  ": expected [" + std::to_string(rows) + ", " + std::to_string(cols / 16) + "]");
  }
  if (codes.device() != scales.device()) {
    throw_invalid("prepare: the codes are on " + codes.device().str() + " but the block scales on " +
                  scales.device().str() + "; put both on one device");
  }
  if (!codes.is_contiguous() || !scales.is_contiguous()) {
    throw_invalid("prepare: the codes and block scales must be contiguous (call .contiguous() once at load)");
  }
  const Placement placement = placement_of(codes);
  WeightEntry entry;
  entry.codes = codes;
  entry.scales = scales;
  entry.view.codes = static_cast<const std::uint8_t*>(codes.data_ptr());
  entry.view.scales = static_cast<const std::uint8_t*>(scales.data_ptr());
  entry.view.global_scale = weight_scale_2;
  entry.view.rows = rows;
  entry.view.cols = cols;
  entry.view.memory = placement.memory;
  entry.view.device = placement.device;
  entry.view.codes_size_bytes = codes.numel();
  entry.view.scales_size_bytes = scales.numel();
  validate_weight(entry.view);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::int64_t id = s.next_id++;
  s.weights.emplace(id, std::move(entry));
  return id;
}

WeightHandle handle_for(std::int64_t id, const at::Tensor& codes, Runner& runner) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto found = s.weights.find(id);
  if (found == s.weights.end()) {
    throw_invalid("gemm: weight id " + std::to_string(id) +
                  " is not a prepared weight (never returned by prepare, or released)");
  }
  WeightEntry& entry = found->second;
  if (codes.data_ptr() != entry.codes.data_ptr() || codes.device() != entry.codes.device()) {
    throw_invalid("gemm: weight id " + std::to_string(id) +
                  " was prepared from another codes tensor than the one passed (was the weight moved or "
                  "copied?); call prepare on the tensor that gemm gets");
  }
  auto& handle = entry.handles[&runner];
  if (!handle) handle = runner.prepare(entry.view, WeightSource::borrow);
  return handle;
}

ResidentMemory weight_resident(std::int64_t id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto found = s.weights.find(id);
  if (found == s.weights.end()) throw_invalid("resident: weight id " + std::to_string(id) + " is not a prepared weight");
  ResidentMemory total;
  for (const auto& [runner, handle] : found->second.handles) total += handle.resident();
  return total;
}

void release_weight(std::int64_t id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.weights.erase(id) == 0) throw_invalid("release: weight id " + std::to_string(id) + " is not a prepared weight");
}

}  // namespace fp4gemm::torch_ops
