// `cuda_nvfp4` calls issued back to back on one stream, as a model's layers run: the second call
// reads the first call's output as its activations and a third call then overwrites that output.
// The test turns on programmatic dependent launch (FP4GEMM_PDL=1), so on SM 9.0 each kernel may
// start while the one before it finishes (programmatic_launch.cuh). A kernel that read its activations, or wrote its
// output, before the grid-dependency wait would read the poison or the third call's values: the
// second call's output is checked against the CPU oracle on the first call's isolated result.
// Skips without a GPU that runs cuda_nvfp4.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fp4gemm/format/half.hpp"
#include "fp4gemm/registry.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kRelativeTolerance = 1e-4;  // as in cuda_backend_correctness_test.cpp
constexpr int kRepeats = 4;                  // each chain runs this many times on fresh poison

// A view of a device BF16 output as the next call's activations.
ActivationView as_activation(const DeviceOutput& out) {
  const MutableDenseView& view = out.view();
  return ActivationView::from_dense({view.data, DType::bf16, view.rows, view.cols, view.row_stride, Memory::cuda, view.device});
}

// One chain at `m` rows; returns the failures, empty when all is well.
std::string check_chain(Backend& backend, const DeviceInfo& gpu, std::int64_t m, const TestStream& stream) {
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  // Layer 1 is long (8192-deep) so that the call after it starts well before it ends.
  const GemmCase first_case{m, 1024, 8192, ActivationType::bf16, DType::bf16};
  const GemmCase second_case{m, 300, first_case.n, ActivationType::bf16, DType::f32};
  const GemmOperands first = make_operands(first_case, rng);
  GemmOperands overwrite = make_operands(first_case, rng);  // other activations through layer 1's weight
  overwrite.weight = first.weight;
  overwrite.alpha = first.alpha;
  GemmOperands second = make_operands(second_case, rng);
  const auto first_weight = backend.prepare(first.weight.view(), gpu);
  const auto second_weight = backend.prepare(second.weight.view(), gpu);
  const DeviceActivation first_activation = upload_activation(first, gpu.index);
  const DeviceActivation overwrite_activation = upload_activation(overwrite, gpu.index);
  const RunContext context{stream.get()};

  // Layer 1 alone: its output is the second call's input in the reference (the kernel is
  // deterministic, so the chained run computes the same bits).
  DeviceOutput isolated(m, first_case.n, DType::bf16, gpu.index);
  backend.run(first_activation.view, *first_weight, first.alpha, isolated.view(), context);
  stream.synchronize();
  isolated.download();
  const std::vector<float> hidden = isolated.values();
  second.activation_f32 = hidden;
  second.activation_bf16.clear();
  for (float value : hidden) second.activation_bf16.push_back(float_to_bf16(value));  // exact: BF16 values

  std::string failures;
  for (int repeat = 0; repeat < kRepeats && failures.empty(); ++repeat) {
    DeviceOutput between(m, first_case.n, DType::bf16, gpu.index);  // poisoned: NaN until layer 1 writes it
    DeviceOutput out(m, second_case.n, DType::f32, gpu.index);
    backend.run(first_activation.view, *first_weight, first.alpha, between.view(), context);
    backend.run(as_activation(between), *second_weight, second.alpha, out.view(), context);
    backend.run(overwrite_activation.view, *first_weight, overwrite.alpha, between.view(), context);
    stream.synchronize();
    out.download();
    between.download();
    failures += compare_with_reference(second, out.values(), m, second_case.n, DType::f32, kRelativeTolerance);
    const std::string overwritten = compare_with_reference(overwrite, between.values(), m, first_case.n, DType::bf16,
                                                           kRelativeTolerance);
    if (!overwritten.empty()) failures += "the third call's output: " + overwritten;
  }
  return failures.empty() ? "" : "M = " + std::to_string(m) + " seed " + std::to_string(seed) + "\n" + failures;
}

TEST(CudaNvfp4ChainedCalls, EachCallSeesItsPredecessorsFinishedOutput) {
  const auto gpu = first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  auto backend = make_backend("cuda_nvfp4");
  const CheckResult usable = backend->check_device(*gpu);
  if (!usable) GTEST_SKIP() << "cuda_nvfp4 cannot run on " << gpu->to_string() << ": " << usable.reason;
  const TestStream stream;
  const ScopedEnv programmatic("FP4GEMM_PDL", "1");
  // Every kernel on SM 9.0 (the wgmma ones also chain their activation pack; "wgmma-stream" is the
  // wgmma kernel's stream-K grid, whose flags the pack kernel zeroes); mma.sync elsewhere.
  const std::vector<std::string> kernels = gpu->sm() == 90 ? std::vector<std::string>{"mma", "wgmma", "wgmma-stream"}
                                                           : std::vector<std::string>{""};
  for (const std::string& kernel : kernels) {
    std::unique_ptr<ScopedEnv> forced, streamed;
    if (!kernel.empty()) forced = std::make_unique<ScopedEnv>("FP4GEMM_DECODE_KERNEL", kernel == "wgmma-stream" ? "wgmma" : kernel);
    if (kernel == "wgmma-stream") streamed = std::make_unique<ScopedEnv>("FP4GEMM_WGMMA_STREAM", std::to_string(gpu->multiprocessors));
    for (std::int64_t m : {1, 16, 40}) {
      const std::string failures = check_chain(*backend, *gpu, m, stream);
      ASSERT_TRUE(failures.empty()) << "kernel " << (kernel.empty() ? "default" : kernel) << ", " << failures;
    }
  }
}

}  // namespace
}  // namespace fp4gemm::testing
