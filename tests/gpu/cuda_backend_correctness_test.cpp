// Every CUDA backend against the CPU `ref` oracle on fresh random inputs: outputs poisoned before
// each call, every element checked (NaN fails), stray writes caught. Backends come from the
// registry (memory() == cuda), so a new CUDA backend is covered without editing this file.
// Without a GPU every test skips with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "backends/cuda_common/cuda_check.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/registry.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

// FP32 accumulation in any summation order: |error| <= tolerance * sum_k |alpha * a * w|. Rounding
// alone stays near sqrt(K) * 2^-24 (~5e-6 at K = 8192); a wrong or missing 16-element block at
// K = 8192 moves an output by ~1/512 of that sum, twenty times this bound.
constexpr double kRelativeTolerance = 1e-4;

// The shape grid: every M x N x K below, sampled so the FP64 reference stays within seconds:
// products of at most kReferenceBudget multiply-adds, and the 4097 x 8192 weight only for a few M.
constexpr std::int64_t kGridM[] = {1, 2, 3, 4, 7, 16, 17, 33, 64, 128, 300};
constexpr std::int64_t kGridN[] = {1, 7, 129, 4097};
constexpr std::int64_t kGridK[] = {16, 48, 4096, 8192};
constexpr std::int64_t kReferenceBudget = std::int64_t(1) << 28;
constexpr std::int64_t kLargeWeight = 4097 * 4096;

constexpr ActivationType kActivations[] = {ActivationType::f32, ActivationType::bf16, ActivationType::nvfp4};
constexpr DType kOutputs[] = {DType::f32, DType::bf16, DType::f16};

bool in_sampled_grid(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m * n * k > kReferenceBudget) return false;
  return n * k <= kLargeWeight || m == 1 || m == 4 || m == 17;
}

std::vector<std::string> cuda_backends() {
  std::vector<std::string> names;
  for (const auto& backend : make_all_backends())
    if (backend->memory() == Memory::cuda) names.push_back(backend->name());
  return names;
}

class CudaBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto found = first_gpu();
    if (!found) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
    gpu_ = *found;
    stream_ = std::make_unique<TestStream>();
    backend_ = make_backend(GetParam());
    const CheckResult usable = backend_->check_device(gpu_);
    if (!usable) GTEST_SKIP() << GetParam() << " cannot run on " << gpu_.to_string() << ": " << usable.reason;
  }

  bool accepts(const GemmCase& c) const {
    return bool(backend_->check_problem({c.m, c.n, c.k, c.activation, c.output}, gpu_));
  }

  // Runs one case when the backend accepts it; returns whether it ran. Weight from a host view
  // (or, with `device_weight`, a device view), activations and output on the device.
  bool expect_matches_reference(const GemmCase& c, bool device_weight = false, std::int64_t activation_stride = 0,
                                std::int64_t output_stride = 0) {
    if (!accepts(c)) return false;
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    const GemmOperands operands = make_operands(c, rng);
    const std::string context = GetParam() + " " + c.to_string() + " seed " + std::to_string(seed);
    std::unique_ptr<PreparedWeight> prepared;
    if (device_weight) {
      const DeviceNvfp4 weight = upload_nvfp4(operands.weight, gpu_.index);
      prepared = backend_->prepare(weight.view, gpu_);
    } else {
      prepared = backend_->prepare(operands.weight.view(), gpu_);
    }
    const DeviceActivation activation = upload_activation(operands, gpu_.index, activation_stride);
    DeviceOutput out(c.m, c.n, c.output, gpu_.index, output_stride);
    backend_->run(activation.view, *prepared, operands.alpha, out.view(), {stream()});
    stream_->synchronize();
    out.download();
    const std::string failures = compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance);
    EXPECT_TRUE(failures.empty()) << context << "\n" << failures;
    EXPECT_TRUE(out.only_elements_written()) << context << ": wrote outside the [M, N] output elements";
    return true;
  }

  DeviceInfo gpu_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TestStream> stream_;  // made in SetUp, once a GPU is known to exist
  cudaStream_t stream() const { return stream_->get(); }
};

TEST_P(CudaBackend, MatchesReferenceAcrossTheShapeGrid) {
  int index = 0, ran = 0, skipped = 0;
  for (std::int64_t m : kGridM)
    for (std::int64_t n : kGridN)
      for (std::int64_t k : kGridK) {
        if (!in_sampled_grid(m, n, k)) continue;
        // FP32 output for every shape (the tightest check), and the type combinations rotated.
        const GemmCase cases[] = {{m, n, k, kActivations[index % 3], DType::f32},
                                  {m, n, k, kActivations[(index + 1) % 3], kOutputs[index % 3]}};
        for (const GemmCase& c : cases) (expect_matches_reference(c) ? ran : skipped)++;
        ++index;
        if (HasFailure()) return;  // the first failing shape says enough
      }
  EXPECT_GT(ran, 0) << GetParam() << " accepted none of the grid's problems";
  RecordProperty("cases_run", ran);
  RecordProperty("cases_refused_by_check_problem", skipped);
}

TEST_P(CudaBackend, EveryActivationAndOutputTypeItAccepts) {
  int ran = 0;
  for (ActivationType activation : kActivations)
    for (DType output : kOutputs)
      for (std::int64_t m : {1, 5, 40}) ran += expect_matches_reference({m, 33, 80, activation, output});
  EXPECT_GT(ran, 0) << GetParam() << " accepted no activation/output type";
}

TEST_P(CudaBackend, KeepsWhatItsResidencySays) {
  // Every backend states what it keeps per weight before preparing one; the layout it makes holds
  // exactly that, and only a dense-copy backend keeps more than NVFP4's 0.5625 B/element (plus
  // padding: cuda_nvfp4 pads rows to 128 and K to 64).
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{1, 16}, {129, 80}, {4097, 4096}}) {
    const GemmOperands operands = make_operands({1, n, k, ActivationType::bf16, DType::f32}, rng);
    if (!backend_->check_problem({1, n, k, ActivationType::nvfp4, DType::f32}, gpu_) &&
        !backend_->check_problem({1, n, k, ActivationType::bf16, DType::f32}, gpu_)) {
      continue;
    }
    const WeightResidency promised = backend_->residency(n, k);
    std::unique_ptr<PreparedWeight> prepared;
    try {
      prepared = backend_->prepare(operands.weight.view(), gpu_);
    } catch (const Error& error) {
      if (error.code() == ErrorCode::unsupported) continue;  // e.g. cublaslt's K % 32
      throw;
    }
    EXPECT_EQ(prepared->resident_bytes, promised.bytes) << GetParam() << " " << n << "x" << k;
    EXPECT_EQ(promised.memory, Memory::cuda) << GetParam();
    EXPECT_FALSE(promised.layout.empty()) << GetParam();
    const double nvfp4_bytes = double(n) * double(k) * kNvfp4BytesPerElement;
    if (n * k >= 4096 * 4096) {
      if (promised.dense_copy) {
        EXPECT_GE(double(promised.bytes), 2.0 * double(n) * double(k)) << GetParam();
      } else {
        EXPECT_LE(double(promised.bytes), 1.04 * nvfp4_bytes) << GetParam() << " keeps more than NVFP4 without saying so";
      }
    }
  }
}

TEST_P(CudaBackend, DeviceWeightSwizzledScalesAndStrides) {
  // The weight given as a device view with 128x4 swizzled scales, NVFP4 activations swizzled too,
  // dense activations and the output with row padding (NaN in the activation padding).
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (ActivationType activation : kActivations) {
    const GemmCase c{3, 130, 96, activation, DType::f32};
    if (!accepts(c)) continue;
    GemmOperands operands = make_operands(c, rng);
    Nvfp4Matrix swizzled_weight = operands.weight;
    swizzled_weight.scales = scale_layout::to_swizzled(operands.weight.scales.data(), c.n, c.k);
    swizzled_weight.scale_layout = ScaleLayout::swizzled_128x4;
    GemmOperands swizzled_operands = operands;
    if (activation == ActivationType::nvfp4) {
      swizzled_operands.activation_nvfp4.scales = scale_layout::to_swizzled(operands.activation_nvfp4.scales.data(), c.m, c.k);
      swizzled_operands.activation_nvfp4.scale_layout = ScaleLayout::swizzled_128x4;
    }
    const DeviceNvfp4 weight = upload_nvfp4(swizzled_weight, gpu_.index);
    const auto prepared = backend_->prepare(weight.view, gpu_);
    const DeviceActivation device_activation = upload_activation(swizzled_operands, gpu_.index, /*row_stride=*/c.k + 16);
    DeviceOutput out(c.m, c.n, c.output, gpu_.index, /*row_stride=*/200);
    backend_->run(device_activation.view, *prepared, operands.alpha, out.view(), {stream()});
    stream_->synchronize();
    out.download();
    EXPECT_EQ(compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance), "")
        << GetParam() << " " << c.to_string() << " seed " << seed;
    EXPECT_TRUE(out.only_elements_written()) << GetParam() << ": wrote into the output's row padding";
  }
}

TEST_P(CudaBackend, OddActivationRowStride) {
  // A row stride of K + 3 elements leaves every row but the first misaligned for vector loads
  // (cuda_nvfp4 stages such activations into a packed buffer first); the padding holds NaN.
  int ran = 0;
  for (std::int64_t m : {1, 5, 17}) ran += expect_matches_reference({m, 37, 80, ActivationType::bf16, DType::f32}, false, 83);
  if (ran == 0) GTEST_SKIP() << GetParam() << " takes no BF16 activations";
}

TEST_P(CudaBackend, DefaultStreamAndDeviceWeight) {
  const GemmCase c{2, 64, 64, ActivationType::bf16, DType::bf16};
  if (!accepts(c)) GTEST_SKIP() << GetParam() << " refuses " << c.to_string();
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const GemmOperands operands = make_operands(c, rng);
  const DeviceNvfp4 weight = upload_nvfp4(operands.weight, gpu_.index);
  const auto prepared = backend_->prepare(weight.view, gpu_);
  const DeviceActivation activation = upload_activation(operands, gpu_.index);
  DeviceOutput out(c.m, c.n, c.output, gpu_.index);
  backend_->run(activation.view, *prepared, operands.alpha, out.view(), {nullptr});
  cuda::check_cuda(cudaDeviceSynchronize(), "waiting for the default stream");
  out.download();
  EXPECT_EQ(compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance), "") << "seed " << seed;
}

TEST_P(CudaBackend, ZeroRowsIsANoOp) {
  const GemmCase c{1, 8, 32, ActivationType::bf16, DType::f32};
  if (!accepts(c)) GTEST_SKIP() << GetParam() << " refuses " << c.to_string();
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = backend_->prepare(operands.weight.view(), gpu_);
  const DeviceActivation activation = upload_activation(operands, gpu_.index);
  ActivationView empty = activation.view;
  empty.dense.rows = 0;
  DeviceOutput out(0, 8, DType::f32, gpu_.index);
  EXPECT_NO_THROW(backend_->run(empty, *prepared, 1.0f, out.view(), {stream()}));
  stream_->synchronize();
  out.download();
  EXPECT_TRUE(out.untouched());
}

// The first activation type the backend accepts for a small FP32-output problem.
ActivationType accepted_activation(const Backend& backend, const DeviceInfo& gpu) {
  for (ActivationType activation : {ActivationType::bf16, ActivationType::f32, ActivationType::nvfp4})
    if (backend.check_problem({4, 8, 32, activation, DType::f32}, gpu)) return activation;
  return ActivationType::bf16;
}

TEST_P(CudaBackend, RejectsBadInputAndWritesNothing) {
  std::mt19937_64 rng(fresh_seed());
  const GemmCase c{4, 8, 32, accepted_activation(*backend_, gpu_), DType::f32};
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = backend_->prepare(operands.weight.view(), gpu_);
  const DeviceActivation activation = upload_activation(operands, gpu_.index);
  const auto expect_rejected = [&](const ActivationView& a, const MutableDenseView& shape, const PreparedWeight& weight,
                                   const char* what) {
    DeviceOutput out(8, 9, DType::f32, gpu_.index);
    MutableDenseView target = shape;
    if (target.data == nullptr) target.data = out.view().data;
    EXPECT_THROW(backend_->run(a, weight, 1.0f, target, {stream()}), Error) << what;
    stream_->synchronize();
    out.download();
    EXPECT_TRUE(out.untouched()) << what << ": the output was written";
  };
  const MutableDenseView good_out{nullptr, DType::f32, 4, 8, 0, Memory::cuda, gpu_.index};
  const auto with_dense = [&](auto change) {
    ActivationView a = activation.view;
    change(a.dense, a.nvfp4);
    return a;
  };
  expect_rejected(with_dense([](DenseView& d, Nvfp4View& q) { d.cols = q.cols = 16; }), good_out, *prepared,
                  "activation K differs from weight K");
  expect_rejected(activation.view, {nullptr, DType::f32, 4, 9, 0, Memory::cuda, gpu_.index}, *prepared, "output N differs");
  expect_rejected(activation.view, {nullptr, DType::f32, 5, 8, 0, Memory::cuda, gpu_.index}, *prepared, "output M differs");
  expect_rejected(with_dense([](DenseView& d, Nvfp4View& q) { d.rows = q.rows = -1; }),
                  {nullptr, DType::f32, -1, 8, 0, Memory::cuda, gpu_.index}, *prepared, "negative M");
  expect_rejected(with_dense([](DenseView& d, Nvfp4View& q) { d.data = nullptr; q.codes = nullptr; }), good_out, *prepared,
                  "null activation");
  MutableDenseView short_stride = good_out;
  short_stride.row_stride = 4;
  expect_rejected(activation.view, short_stride, *prepared, "output row stride < cols");
  expect_rejected(with_dense([](DenseView& d, Nvfp4View& q) { d.memory = q.memory = Memory::host; }), good_out, *prepared,
                  "activation view in host memory");
  MutableDenseView host_out = good_out;
  host_out.memory = Memory::host;
  expect_rejected(activation.view, host_out, *prepared, "output view in host memory");

  auto ref = make_backend("ref");
  const auto ref_weight = ref->prepare(operands.weight.view(), probe_cpu());
  expect_rejected(activation.view, good_out, *ref_weight, "a weight prepared by another backend");

  // Bad weights are refused at preparation.
  Nvfp4View bad_k = operands.weight.view();
  bad_k.cols = 40;
  EXPECT_THROW(backend_->prepare(bad_k, gpu_), Error) << "K not a multiple of 16";
  Nvfp4Matrix nan_weight = operands.weight;
  nan_weight.scales[3] = 0xFF;
  EXPECT_THROW(backend_->prepare(nan_weight.view(), gpu_), Error) << "NaN weight scale (host view)";
  const DeviceNvfp4 nan_device_weight = upload_nvfp4(nan_weight, gpu_.index);
  EXPECT_THROW(backend_->prepare(nan_device_weight.view, gpu_), Error) << "NaN weight scale (device view)";
}

// A view that says Memory::cuda but points at ordinary host memory. A backend that launched on it
// would die with a sticky illegal-address error and take every later test down with it, so the
// check runs in a child process (threadsafe death-test style re-runs this binary for it).
TEST_P(CudaBackend, HostPointerInADeviceViewIsRejected) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto rejected_cleanly = [&] {
    std::mt19937_64 rng(fresh_seed());
    const GemmCase c{4, 8, 32, accepted_activation(*backend_, gpu_), DType::f32};
    const GemmOperands operands = make_operands(c, rng);
    const auto prepared = backend_->prepare(operands.weight.view(), gpu_);
    const DeviceActivation activation = upload_activation(operands, gpu_.index);
    ActivationView lying = operands.activation();  // host pointers...
    lying.dense.memory = lying.nvfp4.memory = Memory::cuda;  // ...in views that claim device memory
    DeviceOutput out(4, 8, DType::f32, gpu_.index);
    bool threw = false;
    try {
      backend_->run(lying, *prepared, 1.0f, out.view(), {stream()});
    } catch (const Error&) {
      threw = true;
    }
    std::vector<float> host_out(32, NAN);
    MutableDenseView lying_out{host_out.data(), DType::f32, 4, 8, 0, Memory::cuda, gpu_.index};
    bool threw_on_output = false;
    try {
      backend_->run(activation.view, *prepared, 1.0f, lying_out, {stream()});
    } catch (const Error&) {
      threw_on_output = true;
    }
    if (cudaStreamSynchronize(stream()) != cudaSuccess) return false;
    out.download();
    return threw && threw_on_output && out.untouched() && std::isnan(host_out[0]);
  };
  EXPECT_EXIT(std::_Exit(rejected_cleanly() ? 0 : 1), ::testing::ExitedWithCode(0), "")
      << GetParam() << " accepted host memory in a view marked Memory::cuda (or crashed on it)";
}

INSTANTIATE_TEST_SUITE_P(All, CudaBackend, ::testing::ValuesIn(cuda_backends()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaBackend);

}  // namespace
}  // namespace fp4gemm::testing
