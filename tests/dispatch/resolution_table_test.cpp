// The `auto` resolution over simulated devices (no GPU needed): for each SM and cuBLASLt state,
// the expected choice and the reasons the better-ranked candidates were passed over.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "dispatch/preference.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::testing {
namespace {

RunnerOptions simulated_options(const DeviceInfo& device) {
  RunnerOptions options;
  options.simulated_device = device;
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  options.backends = {std::make_shared<RefBackend>(), std::make_shared<CpuBackend>(), cuda_nvfp4_stand_in(),
                      cuda_dequant_cublas_stand_in(), cublaslt_stand_in()};
  return options;
}

const dispatch::CandidateReport* find_candidate(const dispatch::Explanation& explanation, const std::string& name) {
  for (const auto& candidate : explanation.candidates)
    if (candidate.backend == name) return &candidate;
  return nullptr;
}

struct Row {
  int sm_major, sm_minor;
  int cublaslt_version;  // 0: absent
  GemmProblem problem;
  std::string expected_choice;
  std::string cublaslt_reason;  // a phrase the cublaslt candidate's reason must contain; empty: it must be ok
};

constexpr int kPresent = 130100;  // cuBLASLt 13.1.0, as on this machine
constexpr int kAbsent = 0;
constexpr int kOld = 120600;      // before NVFP4 (12.8)
constexpr int kOnly128 = 120800;  // enough for sm_100/sm_120, too old for sm_103/sm_121

const GemmProblem kDecodeW4A4{1, 4096, 4096, ActivationType::nvfp4, DType::bf16};
const GemmProblem kDecodeW4A16{1, 4096, 4096, ActivationType::bf16, DType::bf16};
const GemmProblem kPrefillW4A16{512, 4096, 4096, ActivationType::bf16, DType::bf16};
const GemmProblem kLargePrefillW4A16{4096, 4096, 4096, ActivationType::bf16, DType::bf16};
const GemmProblem kPrefillW4A4{512, 4096, 4096, ActivationType::nvfp4, DType::bf16};

const Row kTable[] = {
    // Ampere / Ada: no native FP4; the decode kernel for small M, dequantize + cuBLAS above.
    {8, 0, kPresent, kDecodeW4A4, "cuda_nvfp4", "not supported by cuBLASLt on sm_80"},
    {8, 0, kPresent, kPrefillW4A16, "cuda_dequant_cublas", "not supported by cuBLASLt on sm_80"},
    {8, 9, kPresent, kDecodeW4A16, "cuda_nvfp4", "not supported by cuBLASLt on sm_89"},
    {8, 9, kAbsent, kPrefillW4A4, "cuda_dequant_cublas", "not supported by cuBLASLt on sm_89"},
    // Hopper (the H200 here): cuBLASLt answers NOT_SUPPORTED.
    {9, 0, kPresent, kDecodeW4A4, "cuda_nvfp4", "not supported by cuBLASLt on sm_90"},
    {9, 0, kPresent, kDecodeW4A16, "cuda_nvfp4", "not supported by cuBLASLt on sm_90"},
    {9, 0, kPresent, kPrefillW4A16, "cuda_nvfp4", "not supported by cuBLASLt on sm_90"},
    {9, 0, kPresent, kLargePrefillW4A16, "cuda_dequant_cublas", "not supported by cuBLASLt on sm_90"},
    // Blackwell datacenter: native W4A4 through cuBLASLt when the library is there and new enough.
    {10, 0, kPresent, kDecodeW4A4, "cublaslt", ""},
    {10, 0, kPresent, kPrefillW4A4, "cublaslt", ""},
    {10, 0, kPresent, kDecodeW4A16, "cuda_nvfp4", "needs nvfp4 activations"},
    {10, 0, kPresent, kPrefillW4A16, "cuda_dequant_cublas", "needs nvfp4 activations"},
    {10, 0, kAbsent, kDecodeW4A4, "cuda_nvfp4", "cuBLASLt library was not found"},
    {10, 0, kOld, kPrefillW4A4, "cuda_dequant_cublas", "cuBLASLt 12.6.0 is too old"},
    {10, 0, kOnly128, kPrefillW4A4, "cublaslt", ""},
    {10, 3, kPresent, kPrefillW4A4, "cublaslt", ""},
    {10, 3, kOnly128, kPrefillW4A4, "cuda_dequant_cublas", "needs cuBLASLt 12.9.0 or newer"},
    {10, 3, kAbsent, kDecodeW4A4, "cuda_nvfp4", "cuBLASLt library was not found"},
    // Blackwell workstation / GB10.
    {12, 0, kPresent, kDecodeW4A4, "cublaslt", ""},
    {12, 0, kPresent, kDecodeW4A16, "cuda_nvfp4", "needs nvfp4 activations"},
    {12, 0, kOld, kDecodeW4A4, "cuda_nvfp4", "too old"},
    {12, 1, kPresent, kPrefillW4A4, "cublaslt", ""},
    {12, 1, kOnly128, kDecodeW4A4, "cuda_nvfp4", "needs cuBLASLt 12.9.0 or newer"},
    {12, 1, kAbsent, kPrefillW4A16, "cuda_dequant_cublas", "cuBLASLt library was not found"},
};

TEST(ResolutionTable, SimulatedDevicesPickTheExpectedBackendWithReasons) {
  for (const Row& row : kTable) {
    const DeviceInfo device = simulated_gpu(row.sm_major, row.sm_minor, row.cublaslt_version);
    Runner runner(simulated_options(device));
    const dispatch::Explanation explanation = runner.explain(row.problem);
    const std::string where = device.name + " cuBLASLt " + std::to_string(row.cublaslt_version) + " " +
                              row.problem.to_string() + "\n" + explanation.to_text();
    EXPECT_EQ(explanation.choice, row.expected_choice) << where;
    const dispatch::CandidateReport* cublaslt = find_candidate(explanation, "cublaslt");
    ASSERT_NE(cublaslt, nullptr) << where;
    if (row.cublaslt_reason.empty()) {
      EXPECT_TRUE(cublaslt->ok) << where;
    } else {
      EXPECT_FALSE(cublaslt->ok) << where;
      EXPECT_NE(cublaslt->reason.find(row.cublaslt_reason), std::string::npos) << where;
    }
    // Every candidate ranked above the choice says why it was passed over.
    for (const auto& candidate : explanation.candidates) {
      if (candidate.backend == explanation.choice) break;
      EXPECT_FALSE(candidate.ok) << where;
      EXPECT_FALSE(candidate.reason.empty()) << candidate.backend << " has no reason\n" << where;
    }
  }
}

TEST(ResolutionTable, WithoutGpuTheCpuBackendServesAndGpuBackendsSayWhy) {
  DeviceInfo cpu = probe_cpu();
  Runner runner(simulated_options(cpu));
  const auto explanation = runner.explain(kDecodeW4A16);
  EXPECT_EQ(explanation.family, "no GPU");
  EXPECT_EQ(explanation.choice, "cpu");
  const auto* cublaslt = find_candidate(explanation, "cublaslt");
  ASSERT_NE(cublaslt, nullptr);
  EXPECT_NE(cublaslt->reason.find("this device is the CPU"), std::string::npos) << cublaslt->reason;
  EXPECT_EQ(cublaslt->origin, "not in this family's order");
}

TEST(ResolutionTable, HostBackendsCloseEveryGpuOrderAndAreCheckedOnTheHost) {
  Runner runner(simulated_options(simulated_gpu(9, 0)));
  GemmProblem f32_prefill = kPrefillW4A16;
  f32_prefill.activation = ActivationType::f32;
  f32_prefill.m = 4096;
  // The SM 9.0 row for M > 2048, then the backends in no SM 9.0 row (listed for explain, never tried).
  const auto explanation = runner.explain(f32_prefill);
  std::vector<std::string> order;
  for (const auto& candidate : explanation.candidates) order.push_back(candidate.backend);
  const std::vector<std::string> expected{"cuda_dequant_cublas", "cuda_nvfp4", "cpu", "ref", "cublaslt"};
  EXPECT_EQ(order, expected);
  EXPECT_EQ(explanation.choice, "cuda_dequant_cublas");
  const auto* cpu = find_candidate(explanation, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->ok);
  EXPECT_EQ(cpu->checked_on.rfind("cpu:", 0), 0u) << "host backends are checked on the CPU: " << cpu->checked_on;
}

// The measured H200 crossover for weights below 4096 rows or K (here 2048x4096): the decode
// kernel up to M = 32, dequantize + cuBLAS from M = 33.
TEST(ResolutionTable, Sm90SwitchesFromTheDecodeKernelToCublasAboveMThirtyTwoOnSmallWeights) {
  Runner runner(simulated_options(simulated_gpu(9, 0)));
  for (std::int64_t m : {1, 4, 8, 16, 24, 32}) {
    EXPECT_EQ(runner.explain({m, 2048, 4096, ActivationType::bf16, DType::bf16}).choice, "cuda_nvfp4") << m;
  }
  for (std::int64_t m : {33, 48, 64, 256, 4096}) {
    EXPECT_EQ(runner.explain({m, 2048, 4096, ActivationType::bf16, DType::bf16}).choice, "cuda_dequant_cublas") << m;
    EXPECT_EQ(runner.explain({m, 4096, 1024, ActivationType::bf16, DType::bf16}).choice, "cuda_dequant_cublas") << m;
  }
}

// From 4096 rows and K >= 4096 (measured: the four issue weights), cuda_nvfp4 serves up to M = 1024
// on SM 9.0, from 12288 rows up to M = 2048 (its wide prefill kernel); K >= 1024 from 16384 rows
// up to M = 64; dequantize + cuBLAS above.
TEST(ResolutionTable, Sm90KeepsCudaNvfp4ForLargeWeightsUpToMTwoThousand) {
  Runner runner(simulated_options(simulated_gpu(9, 0)));
  const auto choice = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return runner.explain({m, n, k, ActivationType::bf16, DType::bf16}).choice;
  };
  for (std::int64_t m : {1, 32, 33, 64, 65, 128, 256, 512, 1024}) {
    EXPECT_EQ(choice(m, 28672, 8192), "cuda_nvfp4") << m;
    EXPECT_EQ(choice(m, 12288, 4096), "cuda_nvfp4") << m;
    EXPECT_EQ(choice(m, 4096, 12288), "cuda_nvfp4") << m;
    EXPECT_EQ(choice(m, 4096, 4096), "cuda_nvfp4") << m;
  }
  EXPECT_EQ(choice(2048, 28672, 8192), "cuda_nvfp4");
  EXPECT_EQ(choice(2048, 12288, 4096), "cuda_nvfp4");
  EXPECT_EQ(choice(2048, 4096, 4096), "cuda_dequant_cublas");
  for (std::int64_t m : {2049, 4096, 8192}) {
    EXPECT_EQ(choice(m, 28672, 8192), "cuda_dequant_cublas") << m;
    EXPECT_EQ(choice(m, 4096, 4096), "cuda_dequant_cublas") << m;
  }
  EXPECT_EQ(choice(64, 16384, 1024), "cuda_nvfp4");
  EXPECT_EQ(choice(65, 16384, 1024), "cuda_dequant_cublas");
  EXPECT_EQ(choice(33, 16383, 2048), "cuda_dequant_cublas");
  EXPECT_EQ(choice(33, 4095, 8192), "cuda_dequant_cublas");
  EXPECT_EQ(choice(33, 12288, 4080), "cuda_dequant_cublas");
  // explain cites the measurement behind the order it used.
  const auto mid = runner.explain({48, 12288, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_NE(mid.order_evidence.find("12288x4096"), std::string::npos) << mid.order_evidence;
  EXPECT_NE(mid.to_text().find("order:    " + mid.order_evidence), std::string::npos) << mid.to_text();
  const auto tall = runner.explain({48, 16384, 2048, ActivationType::bf16, DType::bf16});
  EXPECT_NE(tall.order_evidence.find("16384x2048"), std::string::npos) << tall.order_evidence;
  const auto prefill = runner.explain({1024, 28672, 8192, ActivationType::bf16, DType::bf16});
  EXPECT_NE(prefill.order_evidence.find("28672x8192 701.6 vs 849.0"), std::string::npos) << prefill.order_evidence;
  const auto large = runner.explain({4096, 28672, 8192, ActivationType::bf16, DType::bf16});
  EXPECT_NE(large.order_evidence.find("28672x8192 2890.9 vs 2906.0"), std::string::npos) << large.order_evidence;
}

TEST(ResolutionTable, EveryFamilyRowEndsWithTheHostBackendsAndCitesEvidence) {
  for (const auto& row : dispatch::preference_table()) {
    ASSERT_GE(row.order.size(), 2u);
    EXPECT_EQ(row.order[row.order.size() - 2], "cpu") << dispatch::to_string(row.family);
    EXPECT_EQ(row.order.back(), "ref") << dispatch::to_string(row.family);
    EXPECT_GT(std::string(row.evidence).size(), 20u) << dispatch::to_string(row.family);
  }
  // Every family's last row has no bounds, so that every problem finds a row.
  for (const auto family : {dispatch::ArchFamily::sm12x, dispatch::ArchFamily::sm10x, dispatch::ArchFamily::sm90,
                            dispatch::ArchFamily::sm8x, dispatch::ArchFamily::other_gpu, dispatch::ArchFamily::no_gpu}) {
    const dispatch::PreferenceRow* last = nullptr;
    for (const auto& row : dispatch::preference_table())
      if (row.family == family) last = &row;
    ASSERT_NE(last, nullptr) << dispatch::to_string(family);
    EXPECT_EQ(last->max_m, INT64_MAX) << dispatch::to_string(family);
    EXPECT_EQ(last->min_n, 0) << dispatch::to_string(family);
    EXPECT_EQ(last->min_k, 0) << dispatch::to_string(family);
  }
  EXPECT_EQ(dispatch::family_of(simulated_gpu(12, 1)), dispatch::ArchFamily::sm12x);
  EXPECT_EQ(dispatch::family_of(simulated_gpu(10, 3)), dispatch::ArchFamily::sm10x);
  EXPECT_EQ(dispatch::family_of(simulated_gpu(9, 0)), dispatch::ArchFamily::sm90);
  EXPECT_EQ(dispatch::family_of(simulated_gpu(8, 9)), dispatch::ArchFamily::sm8x);
  EXPECT_EQ(dispatch::family_of(simulated_gpu(7, 5)), dispatch::ArchFamily::other_gpu);
  EXPECT_EQ(dispatch::family_of(probe_cpu()), dispatch::ArchFamily::no_gpu);
}

TEST(ResolutionTable, RooflineOnAnH200UsesTheMeasuredCeilings) {
  Runner runner(simulated_options(simulated_gpu(9, 0, kPresent, "NVIDIA H200")));
  const auto explanation = runner.explain({1, 4096, 4096, ActivationType::bf16, DType::bf16});
  ASSERT_TRUE(explanation.roofline.available);
  EXPECT_TRUE(explanation.roofline.ceilings.measured);
  // bytes = 4096*4096*0.5625 + 4096*2 (activation) + 4096*2 (output) = 9453568; at 4.28 TB/s = 2.209 us
  EXPECT_DOUBLE_EQ(explanation.roofline.bytes, 9453568.0);
  EXPECT_NEAR(explanation.roofline.seconds * 1e6, 2.2088, 0.001);
  EXPECT_EQ(explanation.roofline.bound, "memory");
  // A large M is bound by the BF16 rate (796 TFLOP/s): 2*8192*28672*8192 / 796e12 = 4.835 ms (GPU.md: 4835 us).
  const auto large = runner.explain({8192, 28672, 8192, ActivationType::bf16, DType::bf16});
  EXPECT_EQ(large.roofline.bound, "compute");
  EXPECT_NEAR(large.roofline.seconds * 1e6, 4835.0, 1.0);
  // Any other GPU gets nominal figures, labelled as such.
  Runner b200(simulated_options(simulated_gpu(10, 0)));
  const auto nominal = b200.explain(kDecodeW4A4);
  EXPECT_FALSE(nominal.roofline.ceilings.measured);
  EXPECT_NE(nominal.roofline.ceilings.label.find("nominal"), std::string::npos);
  EXPECT_EQ(nominal.roofline.math, "fp4") << "cublaslt multiplies in FP4";
}

}  // namespace
}  // namespace fp4gemm::testing
