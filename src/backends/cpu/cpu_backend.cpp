#include "backends/cpu/cpu_backend.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_bf16_kernels.hpp"
#include "backends/cpu/cpu_kernels.hpp"
#include "backends/cpu/cpu_layout.hpp"
#include "backends/cpu/cpu_tuning.hpp"
#include "core/host_rows.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {
namespace {

constexpr std::int64_t kBlock = scale_layout::kBlock;
// Below this many elements a loop runs on the calling thread: waking an OpenMP team costs more
// than the work, and under load a descheduled team member stalls the whole call.
constexpr std::int64_t kParallelMinElements = 1 << 16;

std::uint8_t scale_of(const Nvfp4View& weight, std::int64_t row, std::int64_t block) {
  const std::int64_t offset = weight.scale_layout == ScaleLayout::linear
                                  ? row * scale_layout::scale_cols(weight.cols) + block
                                  : scale_layout::swizzled_offset(row, block, weight.cols);
  return weight.scales[offset];
}

// FP32 copy of the activations, [m, stride] with zero padding (see cpu_layout.hpp).
std::vector<float> activations_as_f32(const ActivationView& a, std::int64_t stride) {
  const std::int64_t m = a.rows();
  std::vector<float> values(static_cast<std::size_t>(m * stride), 0.0f);
#pragma omp parallel for schedule(static) if (m * stride >= kParallelMinElements)
  for (std::int64_t row = 0; row < m; ++row) load_activation_row(a, row, values.data() + row * stride);
  return values;
}

// BF16 copy of activations that BF16 holds exactly (BF16 itself, NVFP4 decoded), [m, stride],
// zero padded. Converted row by row, so no FP32 copy of the whole matrix is made.
std::vector<std::uint16_t> activations_as_bf16(const ActivationView& a, std::int64_t stride) {
  const std::int64_t m = a.rows();
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(m * stride), 0);
#pragma omp parallel for schedule(static) if (m * stride >= kParallelMinElements)
  for (std::int64_t row = 0; row < m; ++row) {
    std::vector<float> values(static_cast<std::size_t>(a.cols()));
    load_activation_row(a, row, values.data());
    for (std::size_t col = 0; col < values.size(); ++col) {
      std::uint32_t word;
      std::memcpy(&word, &values[col], 4);
      bits[static_cast<std::size_t>(row * stride) + col] = std::uint16_t(word >> 16);  // exact: from BF16 or e2m1 x e4m3
    }
  }
  return bits;
}

void store_scaled(const float* accumulators, std::int64_t accumulator_stride, float alpha, const MutableDenseView& out) {
#pragma omp parallel for schedule(static) if (out.rows * out.cols >= kParallelMinElements)
  for (std::int64_t row = 0; row < out.rows; ++row)
    for (std::int64_t col = 0; col < out.cols; ++col)
      store_output(out, row, col, alpha * accumulators[row * accumulator_stride + col]);
}

// BF16 and NVFP4 activations are exact in BF16; FP32 ones are not and take the FP32 kernels.
bool takes_bf16_kernel(const ActivationView& a, std::int64_t m) {
  return a.type != ActivationType::f32 && m <= cpu_tuning::kBf16FusedMaxM && cpu_kernels::bf16_kernel_available();
}

void run_fused(const CpuWeight& weight, const ActivationView& a, float alpha, const MutableDenseView& out, bool use_bf16) {
  const std::int64_t stride = weight.padded_k();
  std::vector<float> activations;
  std::vector<std::uint16_t> bf16_activations;
  if (use_bf16) {
    bf16_activations = activations_as_bf16(a, stride);
  } else {
    activations = activations_as_f32(a, stride);
  }
  std::vector<float> accumulators(static_cast<std::size_t>(out.rows * weight.padded_rows()));
  const std::int64_t tasks = (weight.tiles + cpu_tuning::kFusedTilesPerTask - 1) / cpu_tuning::kFusedTilesPerTask;
#pragma omp parallel for schedule(static) if (tasks > 1 && out.rows * weight.rows * weight.cols >= kParallelMinElements)
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::int64_t begin = task * cpu_tuning::kFusedTilesPerTask;
    const std::int64_t end = std::min(weight.tiles, begin + cpu_tuning::kFusedTilesPerTask);
    if (use_bf16) {
      cpu_kernels::fused_small_m_bf16(weight, bf16_activations.data(), out.rows, begin, end, accumulators.data());
    } else {
      cpu_kernels::fused_small_m(weight, activations.data(), out.rows, begin, end, accumulators.data());
    }
  }
  store_scaled(accumulators.data(), weight.padded_rows(), alpha, out);
}

// Large M: decode a panel of weight rows to FP32, then one SGEMM per panel.
// NOTE: no OpenMP here. OpenBLAS runs its own threads; OpenMP workers left spinning after a
// parallel region steal those cores (measured: 3x slower at M=256). Decoding on one thread costs
// ~5% of the SGEMM time at M=256, and less as M grows.
void run_panels(const CpuWeight& weight, const ActivationView& a, float alpha, const MutableDenseView& out) {
  const std::int64_t m = out.rows, n = weight.rows, k = weight.cols;
  std::vector<float> activations(static_cast<std::size_t>(m * k));
  for (std::int64_t row = 0; row < m; ++row) load_activation_row(a, row, activations.data() + row * k);
  const bool write_in_place = out.dtype == DType::f32;
  std::vector<float> staging(write_in_place ? 0 : static_cast<std::size_t>(m * n));
  float* result = write_in_place ? static_cast<float*>(out.data) : staging.data();
  const std::int64_t result_stride = write_in_place ? out.stride() : n;
  std::vector<float> panel(static_cast<std::size_t>(std::min(n, cpu_tuning::kPanelRows) * k));
  for (std::int64_t first = 0; first < n; first += cpu_tuning::kPanelRows) {
    const std::int64_t rows = std::min(cpu_tuning::kPanelRows, n - first);
    cpu_kernels::decode_rows(weight, first, first + rows, panel.data());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(rows), int(k), alpha, activations.data(), int(k),
                panel.data(), int(k), 0.0f, result + first, int(result_stride));
  }
  if (!write_in_place) {
    for (std::int64_t row = 0; row < m; ++row)
      for (std::int64_t col = 0; col < n; ++col) store_output(out, row, col, staging[static_cast<std::size_t>(row * n + col)]);
  }
}

}  // namespace

std::string CpuBackend::summary() const {
  return std::string("CPU, SIMD ") + cpu_kernels::active_target() + " (Highway)" +
         (cpu_kernels::bf16_kernel_available() ? " + AVX512-BF16 for BF16/NVFP4 activations up to M = " +
                                                     std::to_string(cpu_tuning::kBf16FusedMaxM)
                                               : std::string()) +
         ", " + std::to_string(omp_get_max_threads()) + " threads; otherwise fused decode for M <= " +
         std::to_string(cpu_kernels::fused_max_m()) + ", OpenBLAS SGEMM panels above";
}

CheckResult CpuBackend::check_device(const DeviceInfo& device) const {
  if (device.is_cuda()) return CheckResult::fail("runs on the CPU only");
  return CheckResult::pass();
}

CheckResult CpuBackend::check_problem(const GemmProblem& problem, const DeviceInfo& device) const {
  if (problem.k % kBlock != 0) return CheckResult::fail("K must be a multiple of 16");
  // BLAS takes int dimensions.
  if (problem.m > INT32_MAX || problem.n > INT32_MAX || problem.k > INT32_MAX) {
    return CheckResult::fail("dimensions above 2^31-1 are not supported by the SGEMM path");
  }
  return CheckResult::pass();
}

WeightResidency CpuBackend::residency(std::int64_t rows, std::int64_t cols) const {
  const std::int64_t tiles = (rows + kCpuTileRows - 1) / kCpuTileRows, groups = (cols + kCpuGroupK - 1) / kCpuGroupK;
  return {tiles * groups * kCpuGroupBytes, Memory::host, false,
          "NVFP4 codes and E4M3 scales regrouped in 4-row x 64-column tiles (0.5625 B/element, rows padded to 4 and K "
          "to 64)"};
}

std::int64_t CpuBackend::workspace_bytes(const GemmProblem& problem, const DeviceInfo&) const {
  const std::int64_t m = problem.m, n = problem.n, k = problem.k;
  const std::int64_t padded_rows = (n + kCpuTileRows - 1) / kCpuTileRows * kCpuTileRows;
  const std::int64_t padded_k = (k + kCpuGroupK - 1) / kCpuGroupK * kCpuGroupK;
  const bool fused = m <= cpu_kernels::fused_max_m() ||
                     (problem.activation != ActivationType::f32 && m <= cpu_tuning::kBf16FusedMaxM &&
                      cpu_kernels::bf16_kernel_available());
  // Fused: the activations as FP32 (BF16 for the BF16 kernel: no more) and the FP32 accumulators.
  if (fused) return m * padded_k * 4 + m * padded_rows * 4;
  // Panels: the activations as FP32, one decoded FP32 panel, and a staging output unless it is FP32.
  const std::int64_t staging = problem.output == DType::f32 ? 0 : m * n * 4;
  return m * k * 4 + std::min(n, cpu_tuning::kPanelRows) * k * 4 + staging;
}

std::unique_ptr<PreparedWeight> CpuBackend::prepare(const Nvfp4View& weight, const DeviceInfo&) {
  validate_weight(weight);
  if (weight.memory != Memory::host) throw_invalid("cpu: the weight must be in host memory");
  auto prepared = std::make_unique<CpuWeight>();
  prepared->rows = weight.rows;
  prepared->cols = weight.cols;
  prepared->backend = name();
  prepared->tiles = (weight.rows + kCpuTileRows - 1) / kCpuTileRows;
  prepared->groups = (weight.cols + kCpuGroupK - 1) / kCpuGroupK;
  prepared->data.assign(static_cast<std::size_t>(prepared->tiles * prepared->groups * kCpuGroupBytes), 0);
  const std::int64_t blocks = weight.cols / kBlock;
#pragma omp parallel for schedule(static) if (weight.rows * weight.cols >= kParallelMinElements)
  for (std::int64_t row = 0; row < weight.rows; ++row) {
    const std::uint8_t* codes = weight.codes + row * (weight.cols / 2);
    const std::int64_t tile = row / kCpuTileRows, r = row % kCpuTileRows;
    for (std::int64_t block = 0; block < blocks; ++block) {
      // Block b of a group: codes in the low nibbles of bytes 16b.. (b < 2) or the high nibbles of
      // bytes 16(b-2).. (b >= 2); see cpu_layout.hpp.
      const std::int64_t group = block / 4, in_group = block % 4;
      std::uint8_t* group_bytes = prepared->group_data(tile, group);
      group_bytes[kCpuGroupCodeBytes + 4 * r + in_group] = scale_of(weight, row, block);
      std::uint8_t* row_codes = group_bytes + 32 * r + kBlock * (in_group % 2);
      const int shift = in_group < 2 ? 0 : 4;
      for (std::int64_t element = 0; element < kBlock; ++element)
        row_codes[element] |= std::uint8_t(e2m1::unpack(codes, block * kBlock + element) << shift);
    }
  }
  prepared->resident_bytes = std::int64_t(prepared->data.size());
  return prepared;
}

void CpuBackend::run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
                     const RunContext&) {
  validate_gemm(a, weight, out, Memory::host);
  const auto& prepared = prepared_as<CpuWeight>(weight, name());
  if (out.rows == 0 || out.cols == 0) return;
  const bool use_bf16 = takes_bf16_kernel(a, out.rows);
  if (out.rows <= cpu_kernels::fused_max_m() || use_bf16) {
    run_fused(prepared, a, alpha, out, use_bf16);
  } else {
    run_panels(prepared, a, alpha, out);
  }
}

}  // namespace fp4gemm
