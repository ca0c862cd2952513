// `cuda_moe` against the FP64 oracle on the GPU: the MoE backend cases (T = 1, idle experts, all
// tokens on one expert, k = 1 and k = E, E not a power of two, both expert layouts, the shared
// expert on (NVFP4 and dense) and off, given and router routing, BF16 and FP32 x, every output type), shapes that
// reach the kernels' edges (several K tiles, 16- and 32-element units, several token chunks),
// strides, CUDA-graph capture, the runner's canary, and bad input refused with nothing written.
// Outputs are poisoned (0xFF: NaN in every output type) with a guard region after them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "fp4gemm/error.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "gpu/gpu_test_support.hpp"
#include "moe/cuda_moe/cuda_moe_backend.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"
#include "moe/moe_test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

using fp4gemm::testing::first_gpu;
using fp4gemm::testing::TestStream;

constexpr std::size_t kGuardBytes = 256;

void check(cudaError_t status, const char* what) { ASSERT_EQ(status, cudaSuccess) << what << ": " << cudaGetErrorString(status); }

// One call's operands in device memory, and a poisoned device output with a guard region.
struct DeviceCall {
  cuda::DeviceBuffer x, ids, weights, out;
  MoeCall call;
  MutableDenseView out_view;
  std::size_t out_bytes = 0;
};

DeviceCall upload_call(const MoeCall& host, std::int64_t hidden, DType output, int device, std::int64_t x_stride = 0,
                       std::int64_t out_stride = 0) {
  DeviceCall d;
  const DenseView& x = host.x;
  const std::int64_t stride = x_stride == 0 ? x.cols : x_stride;
  const std::size_t element = dtype_size(x.dtype);
  // Rows `stride` apart, the padding between them NaN (0xFF bytes), so reading past a row shows.
  std::vector<std::uint8_t> x_bytes(std::size_t(std::max<std::int64_t>(x.rows, 1) * stride) * element, 0xFF);
  for (std::int64_t r = 0; r < x.rows; ++r)
    std::memcpy(x_bytes.data() + std::size_t(r * stride) * element, static_cast<const std::uint8_t*>(x.data) + std::size_t(r * x.cols) * element,
                std::size_t(x.cols) * element);
  d.x = cuda::upload(x_bytes.data(), x_bytes.size(), "test x");
  d.call = host;
  d.call.x = {d.x.data(), x.dtype, x.rows, x.cols, x_stride, Memory::cuda, device};
  if (host.routing.topk_ids != nullptr) {
    const std::size_t entries = std::size_t(x.rows) * std::size_t(host.options.top_k);
    d.ids = cuda::upload(host.routing.topk_ids, entries * sizeof(std::int32_t), "test ids");
    d.weights = cuda::upload(host.routing.topk_weights, entries * sizeof(float), "test weights");
    d.call.routing = {d.ids.as<const std::int32_t>(), d.weights.as<const float>(), Memory::cuda, device};
  }
  const std::int64_t rows_stride = out_stride == 0 ? hidden : out_stride;
  d.out_bytes = std::size_t(x.rows * rows_stride) * dtype_size(output);
  d.out = cuda::DeviceBuffer(d.out_bytes + kGuardBytes, "test output");
  cudaMemset(d.out.data(), 0xFF, d.out_bytes + kGuardBytes);
  d.out_view = {d.out.data(), output, x.rows, hidden, out_stride, Memory::cuda, device, std::int64_t(d.out_bytes)};
  return d;
}

// The device output (and guard) as host bytes.
std::vector<std::uint8_t> download(const DeviceCall& d) {
  std::vector<std::uint8_t> bytes(d.out_bytes + kGuardBytes);
  cudaMemcpy(bytes.data(), d.out.data(), bytes.size(), cudaMemcpyDeviceToHost);
  return bytes;
}

bool guard_intact(const std::vector<std::uint8_t>& bytes, std::size_t out_bytes) {
  for (std::size_t i = out_bytes; i < bytes.size(); ++i)
    if (bytes[i] != 0xFF) return false;
  return true;
}

class CudaMoe : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto found = first_gpu();
    if (!found) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
    gpu_ = *found;
    const CheckResult usable = backend_.check_device(gpu_);
    if (!usable) GTEST_SKIP() << "cuda_moe cannot run on " << gpu_.to_string() << ": " << usable.reason;
    stream_ = std::make_unique<TestStream>();
  }

  // Runs the case on the device into a poisoned output; "" when every element is within the
  // oracle's tolerance and nothing past the output was written.
  std::string run_case(const MoeCase& c) {
    const std::uint64_t seed = fp4gemm::testing::fresh_seed();
    std::mt19937_64 rng(seed);
    const MoeInputs inputs = make_moe_inputs(c, rng);
    return run_inputs(c, inputs, inputs.layer.weights, "seed " + std::to_string(seed));
  }

  std::string run_inputs(const MoeCase& c, const MoeInputs& inputs, const MoeWeights& weights, const std::string& label) {
    const auto prepared = backend_.prepare(weights, gpu_);
    DeviceCall d = upload_call(inputs.call, c.layer.hidden, c.output, gpu_.index);
    backend_.run(d.call, *prepared, d.out_view, {stream_->get()});
    stream_->synchronize();
    return judge(c, inputs, d, label);
  }

  std::string judge(const MoeCase& c, const MoeInputs& inputs, const DeviceCall& d, const std::string& label) {
    return judge(c, inputs.layer.weights, inputs.call, d, label);
  }

  // `d`'s output against the reference of `call` on `weights`.
  std::string judge(const MoeCase& c, const MoeWeights& weights, const MoeCall& call, const DeviceCall& d, const std::string& label) {
    std::vector<std::uint8_t> bytes = download(d);
    if (!guard_intact(bytes, d.out_bytes)) return c.to_string() + ", " + label + ": wrote past the output";
    const MutableDenseView host{bytes.data(), c.output, c.tokens, c.layer.hidden, d.out_view.row_stride, Memory::host, 0};
    const std::string failures = compare_with_moe_reference(reference_moe(weights, call, kAccumulationError), host.as_const());
    return failures.empty() ? "" : c.to_string() + ", " + label + ":\n" + failures;
  }

  // Every case runs on every expert kernel: streaming, staged, mma (BF16 x; other x falls back to
  // staged) and wide (SM 9.0, H and I multiples of 64; elsewhere it runs as mma), then mma, the
  // default, which the knob's removal leaves in place.
  void expect_correct(const MoeCase& c) {
    for_each_expert_kernel([&](const char* kernel) {
      const std::string failures = run_case(c);
      EXPECT_TRUE(failures.empty()) << kernel << " expert kernel: " << failures;
    });
  }

  static void for_each_expert_kernel(const std::function<void(const char*)>& body) {
    for (const char* kernel : {"streaming", "staged", "wide", "mma"}) {
      setenv("FP4GEMM_MOE_EXPERT_KERNEL", kernel, 1);
      body(kernel);
    }
    // The tensor-core kernel with its passes in one batch everywhere, then in two register stages
    // at 1 and 2 entry tiles (the default stages one tile only).
    for (const char* pipeline : {"0", "1"}) {
      setenv("FP4GEMM_MOE_MMA_PIPELINE", pipeline, 1);
      body((std::string("mma (FP4GEMM_MOE_MMA_PIPELINE=") + pipeline + ")").c_str());
    }
    unsetenv("FP4GEMM_MOE_MMA_PIPELINE");
    unsetenv("FP4GEMM_MOE_EXPERT_KERNEL");
  }

  CudaMoeBackend backend_;
  DeviceInfo gpu_;
  std::unique_ptr<TestStream> stream_;
};

TEST_F(CudaMoe, OneToken) {
  MoeCase c;
  c.tokens = 1;
  expect_correct(c);
  c.output = DType::bf16;
  c.routing = Routing::given;
  expect_correct(c);
}

TEST_F(CudaMoe, ExpertsThatGetNoToken) {
  MoeCase c;
  c.tokens = 2;
  c.layer.experts = 7;
  c.routing = Routing::given;
  expect_correct(c);
  c.routing = Routing::router;
  expect_correct(c);
}

TEST_F(CudaMoe, EveryTokenOnOneExpert) {
  MoeCase c;
  for (std::int64_t tokens : {6, 21}) {  // 12 and 42 entries of one expert: several chunks of 8
    c.tokens = tokens;
    c.routing = Routing::given_one_expert;
    expect_correct(c);
  }
}

TEST_F(CudaMoe, TopOneAndTopEveryExpert) {
  MoeCase c;
  c.top_k = 1;
  expect_correct(c);
  c.top_k = int(c.layer.experts);
  expect_correct(c);
  c.norm_topk_prob = false;
  expect_correct(c);
  c.routing = Routing::given;
  expect_correct(c);
}

// The router's top-k takes one warp per token: E = 300 gives lanes 9 or 10 experts each, k = 10
// needs ten passes, and T = 9 leaves the second block of 8 tokens partial.
TEST_F(CudaMoe, RouterTopKOverManyExperts) {
  MoeCase c;
  c.layer.hidden = 64;
  c.layer.intermediate = 32;
  c.layer.experts = 300;
  c.top_k = 10;
  c.tokens = 9;
  c.routing = Routing::router;
  expect_correct(c);
  c.norm_topk_prob = false;
  expect_correct(c);
}

// The router logits as one FP64 GEMM on cuBLAS (the default from kRouterGemmMinTokens tokens) and
// as the logits kernel, each forced on both sides of that default: the same routing as the oracle's.
TEST_F(CudaMoe, RouterGemmAndLogitsKernelBothRouteAsTheOracle) {
  MoeCase c;
  c.layer.hidden = 320;
  c.layer.intermediate = 64;
  c.layer.experts = 37;
  c.top_k = 4;
  c.routing = Routing::router;
  for (const std::int64_t tokens : {std::int64_t(5), cuda_moe::kRouterGemmMinTokens + 6}) {
    c.tokens = tokens;
    for (const char* router : {"gemm", "kernel"}) {
      setenv("FP4GEMM_MOE_ROUTER", router, 1);
      const std::string failures = run_case(c);
      EXPECT_TRUE(failures.empty()) << "router " << router << ", T = " << tokens << ": " << failures;
    }
    unsetenv("FP4GEMM_MOE_ROUTER");
    c.input = DType::f32;  // the second T with FP32 x
  }
}

TEST_F(CudaMoe, ExpertCountsThatAreNotPowersOfTwo) {
  MoeCase c;
  c.top_k = 3;
  for (std::int64_t experts : {3, 6, 11}) {
    c.layer.experts = experts;
    expect_correct(c);
  }
}

TEST_F(CudaMoe, BothExpertLayouts) {
  MoeCase c;
  for (ExpertLayout layout : {ExpertLayout::separate, ExpertLayout::fused_gate_up}) {
    c.layer.layout = layout;
    c.routing = Routing::router;
    expect_correct(c);
    c.routing = Routing::given;
    c.input = DType::f32;
    expect_correct(c);
    c.input = DType::bf16;
  }
}

TEST_F(CudaMoe, SharedExpertOnAndOff) {
  MoeCase c;
  c.tokens = 5;
  for (SharedKind shared : {SharedKind::none, SharedKind::nvfp4, SharedKind::dense}) {
    c.layer.shared = shared;
    for (bool gate : {true, false}) {
      c.layer.shared_gate = gate;
      for (Routing routing : {Routing::router, Routing::given}) {
        c.routing = routing;
        expect_correct(c);
      }
    }
  }
  // A dense shared expert (and router, gate) given in FP32 rather than BF16, with FP32 x.
  c.layer.shared = SharedKind::dense;
  c.layer.dense_dtype = DType::f32;
  c.input = DType::f32;
  expect_correct(c);
}

TEST_F(CudaMoe, InputAndOutputTypes) {
  MoeCase c;
  c.tokens = 4;
  c.layer.shared = SharedKind::nvfp4;
  for (DType input : {DType::bf16, DType::f32}) {
    for (DType output : {DType::f32, DType::bf16, DType::f16}) {
      c.input = input;
      c.output = output;
      expect_correct(c);
    }
  }
}

// The kernels' edges: K of several 1024-element tiles, K a multiple of 16 but not 32 (8-byte
// units), a last tile of one unit, many tokens per expert (several chunks), a router with E = 40.
TEST_F(CudaMoe, ShapesAtTheKernelEdges) {
  MoeCase c;
  c.layer.shared = SharedKind::nvfp4;
  c.layer.shared_intermediate = 80;
  const struct { std::int64_t hidden, intermediate, experts, tokens; int k; } shapes[] = {
      {2048, 64, 9, 37, 4}, {48, 48, 5, 3, 2}, {1040, 32, 6, 10, 3}, {1056, 112, 40, 19, 8}, {64, 1024, 3, 30, 2}};
  for (const auto& shape : shapes) {
    c.layer.hidden = shape.hidden;
    c.layer.intermediate = shape.intermediate;
    c.layer.experts = shape.experts;
    c.tokens = shape.tokens;
    c.top_k = shape.k;
    for (DType input : {DType::bf16, DType::f32}) {
      c.input = input;
      expect_correct(c);
    }
  }
}

// Above kOneBlockPermuteEntries entries the permutation is spread over the grid (count, scan,
// place kernels); below it one block does it all. Both sides, on one expert and on many.
TEST_F(CudaMoe, PermutationOnBothSidesOfTheOneBlockLimit) {
  MoeCase c;
  c.layer.hidden = 64;
  c.layer.intermediate = 32;
  c.layer.experts = 16;
  c.top_k = 8;
  for (std::int64_t entries : {cuda_moe::kOneBlockPermuteEntries, cuda_moe::kOneBlockPermuteEntries + 8}) {
    c.tokens = entries / c.top_k;
    c.routing = Routing::given;
    expect_correct(c);
  }
}

// The tensor-core kernel holding 1, 2 and 4 entry tiles a pass, on experts with more entries than
// one pass takes and on a K with a partial last chunk; at one tile, K over 2 and 4 warps.
TEST_F(CudaMoe, TensorCoreKernelAtEveryEntryTiling) {
  MoeCase c;
  c.layer.hidden = 1040;
  c.layer.intermediate = 112;
  c.layer.experts = 6;
  c.tokens = 45;
  c.top_k = 3;
  c.routing = Routing::given;
  setenv("FP4GEMM_MOE_EXPERT_KERNEL", "mma", 1);
  for (const char* tiles : {"1", "2", "4"}) {
    setenv("FP4GEMM_MOE_MMA_ENTRY_TILES", tiles, 1);
    const std::string failures = run_case(c);
    EXPECT_TRUE(failures.empty()) << tiles << " entry tiles: " << failures;
  }
  // One entry tile with K over 2, 3 and 4 warps a block (a test layer's short grid takes 2 by
  // default), pipelined and not: K ranges of a third or a quarter of 1040 columns, partial chunks.
  setenv("FP4GEMM_MOE_MMA_ENTRY_TILES", "1", 1);
  for (const char* warps : {"2", "3", "4"}) {
    setenv("FP4GEMM_MOE_MMA_WARPS_K", warps, 1);
    for (const char* pipeline : {"0", "1"}) {
      setenv("FP4GEMM_MOE_MMA_PIPELINE", pipeline, 1);
      const std::string failures = run_case(c);
      EXPECT_TRUE(failures.empty()) << "K over " << warps << " warps, pipeline " << pipeline << ": " << failures;
    }
  }
  unsetenv("FP4GEMM_MOE_MMA_PIPELINE");
  unsetenv("FP4GEMM_MOE_MMA_WARPS_K");
  unsetenv("FP4GEMM_MOE_MMA_ENTRY_TILES");
  unsetenv("FP4GEMM_MOE_EXPERT_KERNEL");
}

// The wide kernel (forced) over many token blocks: experts with several blocks and a part-filled
// last one, an expert with none, H not a multiple of its 128 down rows, I of 3 gate_up row blocks;
// given and routed, with and without the shared expert; every block width (32, 64, 128); then every
// token on one expert (10 blocks of one expert) and one token (every block part-filled).
TEST_F(CudaMoe, WideKernelOverManyTokenBlocks) {
  setenv("FP4GEMM_MOE_EXPERT_KERNEL", "wide", 1);
  MoeCase c;
  c.layer.hidden = 320;
  c.layer.intermediate = 192;
  c.layer.experts = 7;
  c.tokens = 300;
  c.top_k = 3;
  for (const Routing routing : {Routing::given, Routing::router}) {
    c.routing = routing;
    for (const SharedKind shared : {SharedKind::none, SharedKind::nvfp4}) {
      c.layer.shared = shared;
      const std::string failures = run_case(c);
      EXPECT_TRUE(failures.empty()) << "wide, shared expert " << int(shared) << ": " << failures;
    }
  }
  c.layer.shared = SharedKind::none;
  c.routing = Routing::given;
  for (const char* entries : {"32", "64", "128"}) {  // every block width, each over several blocks per expert
    setenv("FP4GEMM_MOE_WIDE_ENTRIES", entries, 1);
    const std::string failures = run_case(c);
    EXPECT_TRUE(failures.empty()) << "wide, blocks of " << entries << ": " << failures;
  }
  unsetenv("FP4GEMM_MOE_WIDE_ENTRIES");
  c.routing = Routing::given_one_expert;
  c.tokens = 1200;
  c.top_k = 1;
  EXPECT_TRUE(run_case(c).empty()) << "wide, every token on one expert";
  c.routing = Routing::given;
  c.tokens = 1;
  c.top_k = 4;
  c.output = DType::bf16;
  EXPECT_TRUE(run_case(c).empty()) << "wide, one token";
  unsetenv("FP4GEMM_MOE_EXPERT_KERNEL");
}

// Calls enqueued back to back on one stream, each with its own x and output and no synchronisation
// between them, routed by the layer's router: on SM 9.0 the decode chain goes out as programmatic
// dependent launches, and a call's per-call workspace may come back at the address the call before
// is still reading, so a kernel that wrote before its wait would corrupt the previous call. Then
// the same with FP4GEMM_MOE_PDL=0 (ordinary launches).
TEST_F(CudaMoe, CallsChainedOnOneStreamWithAndWithoutProgrammaticLaunch) {
  MoeCase c;
  c.layer.hidden = 1024;
  c.layer.intermediate = 256;
  c.layer.experts = 64;
  c.top_k = 8;
  c.tokens = 3;
  c.routing = Routing::router;
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  std::vector<MoeInputs> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(make_moe_inputs(c, rng));
  const auto prepared = backend_.prepare(inputs[0].layer.weights, gpu_);
  for (const char* pdl : {"1", "0"}) {
    setenv("FP4GEMM_MOE_PDL", pdl, 1);
    std::vector<DeviceCall> calls;
    for (const MoeInputs& input : inputs) calls.push_back(upload_call(input.call, c.layer.hidden, c.output, gpu_.index));
    for (DeviceCall& d : calls) backend_.run(d.call, *prepared, d.out_view, {stream_->get()});
    stream_->synchronize();
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const std::string failures = judge(c, inputs[0].layer.weights, inputs[i].call, calls[i],
                                         "seed " + std::to_string(seed) + ", call " + std::to_string(i) + ", FP4GEMM_MOE_PDL=" + pdl);
      EXPECT_TRUE(failures.empty()) << failures;
    }
  }
  unsetenv("FP4GEMM_MOE_PDL");
}

TEST_F(CudaMoe, SwizzledBlockScales) {
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  MoeCase c;
  c.layer.shared = SharedKind::nvfp4;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  MoeWeights weights = inputs.layer.weights;
  std::vector<std::vector<std::uint8_t>> swizzled;
  swizzled.reserve(3 * weights.experts.size() + 3);
  const auto swizzle = [&](Nvfp4View& view) {
    swizzled.push_back(scale_layout::to_swizzled(view.scales, view.rows, view.cols));
    view.scales = swizzled.back().data();
    view.scale_layout = ScaleLayout::swizzled_128x4;
    view.scales_size_bytes = 0;
  };
  for (auto& expert : weights.experts)
    for (Nvfp4View* view : {&expert.gate, &expert.up, &expert.down}) swizzle(*view);
  for (Nvfp4View* view : {&weights.shared->nvfp4->gate, &weights.shared->nvfp4->up, &weights.shared->nvfp4->down}) swizzle(*view);
  // The oracle reads the linear original, so a scale read from the wrong place shows.
  const std::string failures = run_inputs(c, inputs, weights, "seed " + std::to_string(seed));
  EXPECT_TRUE(failures.empty()) << failures;
}

// Rows 24 elements apart keep the streaming kernel's 16-byte activation loads; 3 apart make it
// load element by element.
TEST_F(CudaMoe, StridedInputAndOutput) {
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  MoeCase c;
  c.tokens = 5;
  c.layer.shared = SharedKind::nvfp4;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const auto prepared = backend_.prepare(inputs.layer.weights, gpu_);
  for (std::int64_t padding : {24, 3}) {
    const std::int64_t stride = c.layer.hidden + padding;
    for_each_expert_kernel([&](const char* kernel) {
      DeviceCall d = upload_call(inputs.call, c.layer.hidden, c.output, gpu_.index, stride, stride);
      backend_.run(d.call, *prepared, d.out_view, {stream_->get()});
      stream_->synchronize();
      const std::string label = std::string(kernel) + " expert kernel, stride " + std::to_string(stride) + ", seed " + std::to_string(seed);
      const std::string failures = judge(c, inputs, d, label);
      EXPECT_TRUE(failures.empty()) << failures;
      const std::vector<std::uint8_t> bytes = download(d);
      const std::size_t element = dtype_size(c.output);
      for (std::int64_t t = 0; t < c.tokens; ++t)
        for (std::int64_t col = c.layer.hidden; col < stride; ++col)
          for (std::size_t b = 0; b < element; ++b)
            EXPECT_EQ(bytes[std::size_t(t * stride + col) * element + b], 0xFF) << label << ": wrote padding at " << t << ", " << col;
    });
  }
}

// run() enqueues only capturable work: a captured graph, replayed, gives the same correct answer.
TEST_F(CudaMoe, CapturesIntoACudaGraph) {
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  MoeCase c;
  c.tokens = 3;
  c.layer.shared = SharedKind::nvfp4;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const auto prepared = backend_.prepare(inputs.layer.weights, gpu_);
  DeviceCall d = upload_call(inputs.call, c.layer.hidden, c.output, gpu_.index);
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream_->get(), cudaStreamCaptureModeThreadLocal), "begin capture");
  try {
    backend_.run(d.call, *prepared, d.out_view, {stream_->get()});
  } catch (...) {
    cudaStreamEndCapture(stream_->get(), &graph);
    throw;
  }
  check(cudaStreamEndCapture(stream_->get(), &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (int replay = 0; replay < 2; ++replay) check(cudaGraphLaunch(exec, stream_->get()), "launch");
  stream_->synchronize();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  const std::string failures = judge(c, inputs, d, "seed " + std::to_string(seed));
  EXPECT_TRUE(failures.empty()) << failures;
}

TEST_F(CudaMoe, ZeroTokensWritesNothing) {
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  MoeCase c;
  c.tokens = 0;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const auto prepared = backend_.prepare(inputs.layer.weights, gpu_);
  DeviceCall d = upload_call(inputs.call, c.layer.hidden, c.output, gpu_.index);
  EXPECT_NO_THROW(backend_.run(d.call, *prepared, d.out_view, {stream_->get()}));
  stream_->synchronize();
  EXPECT_TRUE(guard_intact(download(d), 0));
}

// Each refusal is an Error before anything is enqueued: the poisoned output is untouched.
TEST_F(CudaMoe, BadInputIsRefusedWithNothingWritten) {
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  MoeCase c;
  const MoeInputs routed = make_moe_inputs(c, rng);
  c.routing = Routing::given;
  const MoeInputs given = make_moe_inputs(c, rng);
  const auto prepared = backend_.prepare(routed.layer.weights, gpu_);
  const auto given_prepared = backend_.prepare(given.layer.weights, gpu_);
  const auto expect_refused = [&](const MoeInputs& inputs, const PreparedMoe& layer, const std::function<void(DeviceCall&)>& change,
                                  const std::string& phrase, ErrorCode code) {
    DeviceCall d = upload_call(inputs.call, c.layer.hidden, c.output, gpu_.index);
    change(d);
    try {
      backend_.run(d.call, layer, d.out_view, {stream_->get()});
      ADD_FAILURE() << "accepted; expected an error saying '" << phrase << "'";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), code) << error.what();
      EXPECT_NE(std::string(error.what()).find(phrase), std::string::npos) << error.what();
    }
    stream_->synchronize();
    const std::vector<std::uint8_t> bytes = download(d);
    for (std::uint8_t byte : bytes) {
      if (byte != 0xFF) {
        ADD_FAILURE() << "the output was written before the error: " << phrase;
        break;
      }
    }
  };
  const ErrorCode invalid = ErrorCode::invalid_argument;
  expect_refused(routed, *prepared, [](DeviceCall& d) { d.call.x.memory = Memory::host; }, "memory", invalid);
  expect_refused(routed, *prepared, [](DeviceCall& d) { d.call.options.top_k = 0; }, "top_k = 0 is outside", invalid);
  expect_refused(routed, *prepared, [](DeviceCall& d) { d.call.x.cols -= 16; }, "hidden size", invalid);
  expect_refused(routed, *prepared, [](DeviceCall& d) { d.out_view.cols -= 1; }, "MoE output is", invalid);
  expect_refused(routed, *prepared, [](DeviceCall& d) { d.call.x.device = 99; }, "device 99", invalid);
  expect_refused(given, *given_prepared, [](DeviceCall& d) { d.call.routing.memory = Memory::host; }, "memory", invalid);
  expect_refused(routed, *prepared, [](DeviceCall& d) { d.call.options.activation = ActivationType::nvfp4; }, "W4A4",
                 ErrorCode::unsupported);
}

TEST_F(CudaMoe, RefusesWhatItDoesNotRunAndNothingElse) {
  MoeProblem problem;
  problem.tokens = 4;
  problem.hidden = 64;
  problem.intermediate = 32;
  problem.experts = 5;
  problem.top_k = 2;
  EXPECT_TRUE(backend_.check_problem(problem, gpu_));
  MoeProblem w4a4 = problem;
  w4a4.activation = ActivationType::nvfp4;
  EXPECT_NE(backend_.check_problem(w4a4, gpu_).reason.find("W4A4"), std::string::npos);
  MoeProblem dense = problem;
  dense.shared_expert = dense.shared_dense = true;
  dense.shared_intermediate = 48;
  EXPECT_TRUE(backend_.check_problem(dense, gpu_));
  MoeProblem many = problem;
  many.experts = 4096;
  EXPECT_NE(backend_.check_problem(many, gpu_).reason.find("at most"), std::string::npos);
}

// The runner serves device operands with cuda_moe after its canary (run on host data staged to
// the device) passes, and says so in explain.
TEST_F(CudaMoe, TheRunnerServesDeviceOperandsAfterItsCanary) {
  MoeRunnerOptions options;
  options.device = gpu_.index;
  MoeRunner runner(options);
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  MoeCase c;
  c.tokens = 3;
  c.layer.shared = SharedKind::nvfp4;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  DeviceCall d = upload_call(inputs.call, c.layer.hidden, c.output, gpu_.index);
  runner.run(d.call, layer, d.out_view, {stream_->get()});
  stream_->synchronize();
  EXPECT_TRUE(runner.quarantined().empty());
  const std::vector<std::string> prepared = layer.prepared_backends();
  EXPECT_EQ(prepared, std::vector<std::string>{"cuda_moe"});
  const std::string failures = judge(c, inputs, d, "through the runner");
  EXPECT_TRUE(failures.empty()) << failures;
  for (const CanaryReport& report : runner.run_all_canaries()) {
    if (report.backend == "cuda_moe") EXPECT_TRUE(report.passed) << report.reason;
  }
}

}  // namespace
}  // namespace fp4gemm::moe::testing
