// The canary: before a backend's kernel first serves on a device, one small random problem that
// takes the same kernel (canary_problems.hpp) is run on it and compared with the `ref` oracle. It
// catches the failure modes users have reported from vendor FP4 paths (all zeros, NaN:
// flashinfer#2577, #3398, sglang#20043) and partial writes, before they reach a model's output.
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "backends/ref/ref_backend.hpp"
#include "dispatch/canary_problems.hpp"
#include "dispatch/runner_state.hpp"
#include "dispatch/staging.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm::dispatch {
namespace {

// NOTE: canary tolerance: |out - ref| <= 1e-3 * sum|alpha*a*w| (+ one output rounding unit for
// BF16/FP16). Any correct FP32-accumulating backend is orders of magnitude inside it; a wrong
// layout, a missing scale or alpha is orders of magnitude outside.
constexpr double kCanaryRelativeTolerance = 1e-3;

// Poison bytes: 0xFF is a NaN in FP32, BF16 and FP16, and no backend computes this exact pattern.
constexpr std::uint8_t kPoisonByte = 0xFF;

std::vector<float> random_values(std::int64_t count, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-3.0f, 3.0f);
  std::vector<float> values(static_cast<std::size_t>(count));
  float block_magnitude = 1.0f;
  for (std::int64_t i = 0; i < count; ++i) {
    if (i % 16 == 0) block_magnitude = std::exp2(exponent(rng));  // distinct block scales
    values[std::size_t(i)] = normal(rng) * block_magnitude;
  }
  return values;
}

float output_value(const std::vector<std::uint8_t>& bytes, DType dtype, std::int64_t index, bool& unwritten) {
  const std::size_t size = dtype_size(dtype);
  unwritten = true;
  for (std::size_t byte = 0; byte < size; ++byte) unwritten = unwritten && bytes[index * size + byte] == kPoisonByte;
  if (dtype == DType::f32) {
    float value;
    std::memcpy(&value, bytes.data() + index * 4, 4);
    return value;
  }
  std::uint16_t bits;
  std::memcpy(&bits, bytes.data() + index * 2, 2);
  return dtype == DType::bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
}

// "" when the output is right, else the first thing wrong with it.
std::string judge(const std::vector<std::uint8_t>& bytes, const GemmProblem& problem, const ReferenceResult& reference) {
  const std::int64_t count = problem.m * problem.n;
  const double rounding = problem.output == DType::bf16 ? std::ldexp(1.0, -8)
                          : problem.output == DType::f16 ? std::ldexp(1.0, -11)
                                                         : 0.0;
  std::int64_t unwritten_count = 0, nan_count = 0, zero_count = 0, wrong_count = 0, first_wrong = -1;
  float first_wrong_value = 0.0f;
  for (std::int64_t index = 0; index < count; ++index) {
    bool unwritten = false;
    const float value = output_value(bytes, problem.output, index, unwritten);
    const double expected = reference.values[std::size_t(index)];
    if (unwritten) { ++unwritten_count; continue; }
    if (!std::isfinite(value)) { ++nan_count; continue; }
    if (value == 0.0f) ++zero_count;
    const double tolerance = kCanaryRelativeTolerance * reference.absolute_sum[std::size_t(index)] +
                             rounding * std::fabs(expected) + 1e-30;
    if (std::fabs(double(value) - expected) > tolerance && wrong_count++ == 0) {
      first_wrong = index;
      first_wrong_value = value;
    }
  }
  const std::string of = " of " + std::to_string(count) + " output elements";
  if (unwritten_count > 0) return "left " + std::to_string(unwritten_count) + of + " unwritten";
  if (nan_count > 0) return "returned NaN or Inf in " + std::to_string(nan_count) + of;
  if (zero_count == count) return "returned all zeros";
  if (wrong_count > 0) {
    std::ostringstream text;
    text << wrong_count << of << " differ from ref beyond tolerance (first: [" << first_wrong / problem.n << ", "
         << first_wrong % problem.n << "] = " << first_wrong_value << ", ref " << reference.values[std::size_t(first_wrong)]
         << ")";
    return text.str();
  }
  return "";
}

struct CanaryOperands {
  Nvfp4Matrix weight;
  std::vector<float> activation_f32;
  std::vector<std::uint16_t> activation_bf16;
  Nvfp4Matrix activation_nvfp4;
  ActivationView activation;
  float alpha = 1.0f;
};

CanaryOperands make_operands(const GemmProblem& problem, std::mt19937_64& rng) {
  CanaryOperands operands;
  const std::vector<float> weight = random_values(problem.n * problem.k, rng);
  operands.weight = quantize_weight(weight.data(), problem.n, problem.k);
  operands.activation_f32 = random_values(problem.m * problem.k, rng);
  const DenseView dense{operands.activation_f32.data(), DType::f32, problem.m, problem.k};
  float input_scale = 1.0f;
  switch (problem.activation) {
    case ActivationType::f32: operands.activation = ActivationView::from_dense(dense); break;
    case ActivationType::bf16:
      for (float value : operands.activation_f32) operands.activation_bf16.push_back(float_to_bf16(value));
      operands.activation = ActivationView::from_dense({operands.activation_bf16.data(), DType::bf16, problem.m, problem.k});
      break;
    case ActivationType::nvfp4:
      input_scale = activation_global_scale(dense);
      operands.activation_nvfp4 = quantize_activation(dense, input_scale);
      operands.activation = ActivationView::from_nvfp4(operands.activation_nvfp4.view());
      break;
  }
  // As a deployment computes alpha, times 1.5 so that a backend ignoring alpha fails.
  operands.alpha = operands.weight.global_scale * input_scale * 1.5f;
  return operands;
}

// "the wgmma kernel"; a backend with one path (or a kernel_name that cannot say) has no name.
std::string kernel_phrase(const std::string& kernel) {
  return kernel.empty() ? "the backend's unnamed path" : "the " + kernel + " kernel";
}

}  // namespace

CanaryReport run_canary(Backend& backend, const DeviceInfo& device, int gpu_index, const GemmProblem& served) {
  CanaryReport report;
  report.backend = backend.name();
  const CanaryChoice choice = choose_canary_problem(backend, device, served);
  if (!choice.problem) {
    report.reason = "no canary problem passes its checks: " + choice.rejection;
    return report;
  }
  const GemmProblem& chosen = *choice.problem;
  report.kernel = choice.problem_kernel;
  report.problem = chosen.to_string();
  // A simulated GPU (`--simulate-sm`, tests) has no hardware behind it: a backend that computes in
  // GPU memory cannot run there, which is not a fault of the backend (it used to be quarantined
  // for the CUDA error of a machine without a GPU).
  if (backend.memory() == Memory::cuda && device.is_cuda() && !device.probed) {
    const std::string what = report.kernel.empty() ? backend.name() : kernel_phrase(report.kernel);
    report.reason = "no GPU behind the simulated device to run " + what + " on (its canary would be " + report.problem + ")";
    return report;
  }
  report.ran = true;
  if (!choice.reaches_kernel) {
    report.coverage_gap = "no canary problem within the cost cap takes " + kernel_phrase(choice.kernel) + " (served " +
                          served.to_string() + "), so the canary ran " + kernel_phrase(choice.problem_kernel) + " instead";
  }

  const std::uint64_t seed = std::random_device{}();
  // What a failure's reason ends with: how to replay it, and what the canary could not reach.
  const std::string replay = " on canary " + chosen.to_string() + " (" +
                             (report.kernel.empty() ? "" : report.kernel + " kernel, ") + "seed " + std::to_string(seed) + ")" +
                             (report.coverage_gap.empty() ? "" : "; " + report.coverage_gap);
  std::mt19937_64 rng(seed);
  const CanaryOperands operands = make_operands(chosen, rng);
  std::vector<std::uint8_t> out_bytes(std::size_t(chosen.m * chosen.n) * dtype_size(chosen.output), kPoisonByte);
  const MutableDenseView out{out_bytes.data(), chosen.output, chosen.m, chosen.n, 0, Memory::host, 0};
  try {
    const auto prepared = backend.prepare(operands.weight.view(), device);
    run_with_staging(backend, operands.activation, *prepared, operands.alpha, out, {}, gpu_index);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::unrecoverable) throw;
    report.reason = std::string("threw: ") + error.what() + replay;
    return report;
  } catch (const std::exception& error) {
    report.reason = std::string("threw: ") + error.what() + replay;
    return report;
  } catch (...) {
    report.reason = "threw an exception that is not a std::exception" + replay;
    return report;
  }
  const ReferenceResult reference = reference_gemm(operands.activation, operands.weight.view(), operands.alpha);
  const std::string verdict = judge(out_bytes, chosen, reference);
  report.passed = verdict.empty();
  if (!report.passed) report.reason = verdict + replay;
  return report;
}

}  // namespace fp4gemm::dispatch
