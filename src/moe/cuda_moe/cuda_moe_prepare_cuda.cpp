// prepare() of `cuda_moe`: the layer's weights uploaded once, expert by expert (no host copy of
// the whole layer is built), synchronously so a failure belongs to prepare() and not a later run().
#include <vector>

#include "backends/cuda_common/cuda_check.hpp"
#include "moe/cuda_moe/cuda_moe_backend.hpp"
#include "moe/cuda_moe/cuda_moe_kernels.hpp"
#include "moe/cuda_moe/cuda_moe_layout.hpp"
#include "moe/moe_weight_copy.hpp"

namespace fp4gemm::moe {
namespace {

constexpr std::int64_t kElementsPerScale = 16;

void copy_to(const cuda::DeviceBuffer& buffer, std::size_t offset, const void* host, std::size_t bytes, const std::string& what) {
  if (bytes == 0) return;
  cuda::check_cuda(cudaMemcpy(buffer.as<std::uint8_t>() + offset, host, bytes, cudaMemcpyHostToDevice), "cuda_moe: uploading " + what);
}

void expect_host(const Nvfp4View& view, const std::string& what) {
  if (view.memory != Memory::host) {
    throw_invalid("cuda_moe: " + what + " is in " + to_string(view.memory) +
                  " memory; prepare() uploads the MoE weights from host memory, pass host views");
  }
}

// Per expert, the views whose rows stack into its matrix (gate_up: gate then up); their global
// scales are stored in the same order.
struct StackSource {
  std::vector<std::vector<const Nvfp4View*>> experts;
};

CudaExpertStack upload_stack(const StackSource& source, const std::string& what) {
  CudaExpertStack stack;
  const std::int64_t experts = std::int64_t(source.experts.size());
  const auto& first = source.experts.front();
  stack.cols = first.front()->cols;
  for (const Nvfp4View* view : first) stack.rows += view->rows;
  const std::size_t code_bytes = std::size_t(stack.rows * stack.cols / 2);
  const std::size_t scale_bytes = std::size_t(stack.rows * stack.cols / kElementsPerScale);
  const std::size_t scales_per_expert = first.size();
  stack.codes = cuda::DeviceBuffer(code_bytes * std::size_t(experts), "cuda_moe: " + what + " codes");
  stack.scales = cuda::DeviceBuffer(scale_bytes * std::size_t(experts), "cuda_moe: " + what + " scales");
  stack.global_scales = cuda::DeviceBuffer(scales_per_expert * std::size_t(experts) * sizeof(float), "cuda_moe: " + what + " global scales");
  std::vector<float> global_scales;
  for (std::int64_t e = 0; e < experts; ++e) {
    std::size_t code_offset = code_bytes * std::size_t(e), scale_offset = scale_bytes * std::size_t(e);
    for (const Nvfp4View* view : source.experts[std::size_t(e)]) {
      const std::string name = what + " of expert " + std::to_string(e);
      expect_host(*view, name);
      copy_to(stack.codes, code_offset, view->codes, std::size_t(view->code_bytes()), name + " codes");
      const std::vector<std::uint8_t> scales = linear_scales(*view);
      copy_to(stack.scales, scale_offset, scales.data(), scales.size(), name + " scales");
      code_offset += std::size_t(view->code_bytes());
      scale_offset += scales.size();
      global_scales.push_back(view->global_scale);
    }
  }
  copy_to(stack.global_scales, 0, global_scales.data(), global_scales.size() * sizeof(float), what + " global scales");
  // The codes uploaded as the checkpoint has them, then reordered inside each word on the device.
  cuda_moe::launch_to_fragment_order(stack.codes.as<std::uint8_t>(), std::int64_t(code_bytes * std::size_t(experts) / 4), nullptr);
  cuda::check_cuda(cudaStreamSynchronize(nullptr), "cuda_moe: moving the " + what + " codes into fragment order");
  return stack;
}

cuda::DeviceBuffer upload_dense(const DenseView& view, const std::string& what) {
  const std::vector<float> values = dense_as_f32(view, "cuda_moe");
  return cuda::upload(values.data(), values.size() * sizeof(float), "cuda_moe: " + what);
}

// A BF16/FP32 shared expert's projections as one FP32 stack (their rows one after another).
CudaExpertStack upload_dense_stack(const std::vector<const DenseView*>& views, const std::string& what) {
  CudaExpertStack stack;
  stack.cols = views.front()->cols;
  std::vector<float> values;
  for (const DenseView* view : views) {
    const std::vector<float> rows = dense_as_f32(*view, "cuda_moe");
    values.insert(values.end(), rows.begin(), rows.end());
    stack.rows += view->rows;
  }
  stack.dense = cuda::upload(values.data(), values.size() * sizeof(float), "cuda_moe: " + what);
  return stack;
}

}  // namespace

std::unique_ptr<PreparedMoe> CudaMoeBackend::prepare(const MoeWeights& weights, const DeviceInfo& device) {
  validate_moe_weights(weights);
  const CheckResult usable = check_device(device);
  if (!usable) throw Error(ErrorCode::unsupported, "cuda_moe cannot run here: " + usable.reason);
  cuda::DeviceGuard guard(device.index);
  auto prepared = std::make_unique<CudaPreparedMoe>();
  describe_layer(weights, *prepared);
  prepared->backend = name();
  prepared->device = device.index;
  prepared->sm = device.sm();
  prepared->multiprocessors = device.multiprocessors;

  StackSource gate_up, down;
  for (const ExpertProjections& expert : weights.experts) {
    gate_up.experts.push_back({&expert.gate, &expert.up});
    down.experts.push_back({&expert.down});
  }
  prepared->gate_up = upload_stack(gate_up, "gate_up");
  prepared->down = upload_stack(down, "down_proj");
  std::int64_t bytes = prepared->gate_up.bytes() + prepared->down.bytes();
  if (weights.router.data != nullptr) {
    prepared->router = upload_dense(weights.router, "the router");
    prepared->router_gemm = std::make_unique<cuda_moe::RouterGemmHandle>();  // here: outside any graph capture
    bytes += std::int64_t(prepared->router.bytes());
  }
  if (weights.shared) {
    const SharedExpert& shared = *weights.shared;
    if (shared.nvfp4) {
      prepared->shared_gate_up = upload_stack(StackSource{{{&shared.nvfp4->gate, &shared.nvfp4->up}}}, "shared expert gate_up");
      prepared->shared_down = upload_stack(StackSource{{{&shared.nvfp4->down}}}, "shared expert down_proj");
    } else {
      prepared->shared_gate_up = upload_dense_stack({&shared.dense_gate, &shared.dense_up}, "the dense shared expert gate_up");
      prepared->shared_down = upload_dense_stack({&shared.dense_down}, "the dense shared expert down_proj");
    }
    bytes += prepared->shared_gate_up.bytes() + prepared->shared_down.bytes();
    if (weights.shared->gate.data != nullptr) {
      prepared->shared_gate = upload_dense(weights.shared->gate, "the shared expert gate");
      bytes += std::int64_t(prepared->shared_gate.bytes());
    }
  }
  prepared->resident_bytes = bytes;
  return prepared;
}

}  // namespace fp4gemm::moe
