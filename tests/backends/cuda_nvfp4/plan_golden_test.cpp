// The kernel and launch every problem gets, against a recorded table (plan_golden.txt): a safety
// net for refactoring the selector. For a grid of problems (M = 1-64 and prefill M; weights from
// 256 to 57344 rows) on simulated SM 9.0 GPUs of 132 and 114 SMs and an SM 8.0 GPU of 108, with
// and without the kernels' occupancy (a fixed model of it, so the wave-fitting rules run too), it
// writes one line per device and weight, listing for each run of M with the same plan: the kernel,
// its launch shape, K splits, clusters, stream-K CTAs and whether it launches with PDL. A few
// lines do the same with the measurement knobs set. Any difference fails and prints the first
// differing line; FP4GEMM_WRITE_PLAN_GOLDEN=1 rewrites the table (only for an intended change).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_nvfp4/plan.hpp"
#include "fp4gemm/device.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// NOTE: __FILE__ is absolute in CMake builds, so the table is found without configuration.
const std::filesystem::path kGolden = std::filesystem::path(__FILE__).parent_path() / "plan_golden.txt";

const char* const kKnobs[] = {"FP4GEMM_DECODE_KERNEL", "FP4GEMM_DECODE_SHAPE", "FP4GEMM_WGMMA_SHAPE", "FP4GEMM_WGMMA_STREAM",
                              "FP4GEMM_PDL", "FP4GEMM_PREFILL_SPLITS", "FP4GEMM_WIDE_CTAS", "FP4GEMM_WIDE_TOKENS"};

// A fixed model of the mma.sync kernels' occupancy (CTAs per SM), close to the compiled kernels'
// registers on SM 9.0: 65536 registers and 64 warps per SM.
int modelled_ctas_per_sm(const LaunchShape& shape) {
  const int warps = shape.warps_n * shape.warps_k;
  int registers = 80;
  if (shape.m_tiles == 1) registers = shape.tiles_per_warp == 2 && warps == 4 ? 72 : 80;
  if (shape.m_tiles == 2) registers = shape.tiles_per_warp == 2 ? 120 : 126;
  if (shape.m_tiles == 3) registers = shape.tiles_per_warp == 2 ? 168 : 127;
  if (shape.m_tiles == 4) registers = shape.tiles_per_warp == 2 ? 168 : shape.register_bounded ? 128 : 138;
  if (shape.m_tiles == 8) registers = 168;
  const int rounded = (registers + 7) / 8 * 8;
  int ctas = 65536 / (rounded * 32 * warps);
  ctas = std::min(ctas, 64 / warps);
  return std::min(ctas, 32);
}

struct GoldenDevice {
  const char* label;
  int sm;
  int multiprocessors;
};

// The plan of one problem as one short token: kernel, launch shape, PDL.
std::string plan_token(std::int64_t m, std::int64_t n, std::int64_t k, const GoldenDevice& golden, bool occupancy) {
  DeviceInfo device;
  device.kind = DeviceInfo::Kind::cuda;
  device.sm_major = golden.sm / 10;
  device.sm_minor = golden.sm % 10;
  device.multiprocessors = golden.multiprocessors;
  const ResidentCtasPerSm resident = occupancy ? ResidentCtasPerSm(modelled_ctas_per_sm) : ResidentCtasPerSm();
  std::ostringstream token;
  try {
    const Plan plan = select_plan({m, n, k, ActivationType::bf16, DType::bf16}, device, Overrides::from_environment(), resident);
    const bool programmatic = plan.pdl != ProgrammaticLaunch::off;
    token << decode_kernel_name(plan.kernel);
    if (plan.kernel == DecodeKernel::mma) {
      const LaunchShape& shape = plan.mma;
      token << ":" << shape.m_tiles << "t" << shape.warps_n << "x" << shape.warps_k << "x" << shape.tiles_per_warp
            << (shape.register_bounded ? "b" : "") << "c" << shape.cluster_k << " ctas=" << grid_ctas(shape, n);
      std::string pdl = plan.pdl == ProgrammaticLaunch::on ? "on" : "off";
      if (plan.pdl == ProgrammaticLaunch::when_grid_fills) {
        if (occupancy || programmatic_at_any_fill(shape)) {
          pdl = plan.mma_programmatic(occupancy ? modelled_ctas_per_sm(shape) : 0) ? "on" : "off";
        } else {
          pdl = "if-fills";
        }
      }
      token << " pdl=" << pdl;
    } else if (plan.kernel == DecodeKernel::wgmma) {
      const WgmmaShape& shape = plan.wgmma;
      const std::int64_t ctas = shape.stream_ctas > 0 ? plan.stream.ctas : wgmma_grid_ctas(shape, n);
      token << ":" << shape.tokens << "tok" << shape.warpgroups << "wg s" << shape.splits << "m" << shape.multicast << " stream="
            << shape.stream_ctas << " ctas=" << ctas << " one_per_sm=" << wgmma_one_cta_per_sm(ctas, golden.multiprocessors)
            << " pdl=" << (programmatic ? "on" : "off");
    } else if (plan.kernel == DecodeKernel::wide) {
      token << ": tokens=" << wide_tokens(m) << " tiles=" << wide_tiles(m, n) << " ctas=" << plan.wide_ctas << " pdl=" << (programmatic ? "on" : "off");
    } else {
      token << ": splits=" << plan.prefill_splits << " ctas=" << prefill_tiles(m, n) * plan.prefill_splits
            << " pdl=" << (programmatic ? "on" : "off");
    }
  } catch (const std::exception& error) {
    token << "error: " << error.what();
  }
  return token.str();
}

// One line per device and weight: runs of M with the same plan.
void append_line(std::ostream& out, const std::string& label, const std::vector<std::int64_t>& ms, std::int64_t n, std::int64_t k,
                 const GoldenDevice& device, bool occupancy) {
  out << label << " " << device.label << (occupancy ? " occupancy" : " simulated") << " " << n << "x" << k << ":";
  std::size_t begin = 0;
  while (begin < ms.size()) {
    const std::string token = plan_token(ms[begin], n, k, device, occupancy);
    std::size_t end = begin + 1;
    while (end < ms.size() && plan_token(ms[end], n, k, device, occupancy) == token) ++end;
    out << " M=" << ms[begin];
    if (end - begin > 1) out << "-" << ms[end - 1];
    out << " " << token << ";";
    begin = end;
  }
  out << "\n";
}

std::string golden_table() {
  for (const char* knob : kKnobs) unsetenv(knob);
  std::vector<std::int64_t> ms;
  for (std::int64_t m = 1; m <= 64; ++m) ms.push_back(m);
  for (const std::int64_t m : {65, 96, 128, 129, 200, 256, 512, 1024, 4096}) ms.push_back(m);
  const std::pair<std::int64_t, std::int64_t> weights[] = {
      {256, 4096},   {512, 4096},   {512, 8192},   {512, 16384},  {768, 4096},   {1024, 2048},  {1024, 4096},  {1024, 8192},
      {1536, 4096},  {2048, 4096},  {2048, 8192},  {3072, 4096},  {3584, 3584},  {4096, 1024},  {4096, 1536},  {4096, 2048},
      {4096, 4096},  {4096, 8192},  {4096, 12288}, {4096, 14336}, {4096, 16384}, {4096, 28672}, {5120, 4096},  {6144, 4096},
      {6144, 8192},  {8192, 1024},  {8192, 4096},  {8192, 8192},  {9216, 4096},  {10240, 8192}, {12288, 4096}, {14336, 4096},
      {16384, 4096}, {18432, 4096}, {20480, 4096}, {24576, 4096}, {24576, 8192}, {28672, 4096}, {28672, 8192}, {37888, 3584},
      {57344, 8192}};
  const GoldenDevice devices[] = {{"sm90/132", 90, 132}, {"sm90/114", 90, 114}, {"sm80/108", 80, 108}};
  std::ostringstream table;
  for (const GoldenDevice& device : devices) {
    for (const bool occupancy : {false, true}) {
      for (const auto& [n, k] : weights) append_line(table, "rule", ms, n, k, device, occupancy);
    }
  }
  // The measurement knobs, each on a few weights.
  const std::pair<const char*, const char*> knob_settings[] = {
      {"FP4GEMM_DECODE_KERNEL", "wgmma"}, {"FP4GEMM_DECODE_KERNEL", "mma"},  {"FP4GEMM_DECODE_KERNEL", "prefill"},
      {"FP4GEMM_DECODE_SHAPE", "2:4"},    {"FP4GEMM_DECODE_SHAPE", "1:8:2"}, {"FP4GEMM_DECODE_SHAPE", "1:8:1:0:4"},
      {"FP4GEMM_WGMMA_SHAPE", "2:2"},     {"FP4GEMM_WGMMA_STREAM", "0"},     {"FP4GEMM_WGMMA_STREAM", "132"},
      {"FP4GEMM_PDL", "0"},               {"FP4GEMM_PDL", "1"},              {"FP4GEMM_PREFILL_SPLITS", "3"},
      {"FP4GEMM_DECODE_KERNEL", "bogus"}, {"FP4GEMM_PDL", "2"}};
  const std::vector<std::int64_t> knob_ms = {1, 8, 16, 24, 32, 48, 64, 128, 256};
  for (const auto& [knob, value] : knob_settings) {
    setenv(knob, value, 1);
    for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096}, {12288, 4096}, {28672, 8192}, {512, 4096}}) {
      append_line(table, std::string(knob) + "=" + value, knob_ms, n, k, devices[0], true);
    }
    unsetenv(knob);
  }
  return table.str();
}

TEST(CudaNvfp4PlanGolden, EveryProblemGetsTheRecordedKernelAndLaunch) {
  const std::string table = golden_table();
  if (const char* write = std::getenv("FP4GEMM_WRITE_PLAN_GOLDEN"); write != nullptr && std::string(write) == "1") {
    std::ofstream(kGolden) << table;
    GTEST_SKIP() << "rewrote " << kGolden;
  }
  std::ifstream file(kGolden);
  ASSERT_TRUE(file.good()) << "cannot read " << kGolden;
  std::stringstream recorded;
  recorded << file.rdbuf();
  std::istringstream expected_lines(recorded.str()), actual_lines(table);
  std::string expected, actual;
  int line = 0;
  while (true) {
    const bool more_expected = bool(std::getline(expected_lines, expected));
    const bool more_actual = bool(std::getline(actual_lines, actual));
    ++line;
    if (!more_expected && !more_actual) break;
    ASSERT_EQ(actual, expected) << "plan table line " << line << " differs from " << kGolden;
  }
  EXPECT_GT(line, 250);
}

}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
