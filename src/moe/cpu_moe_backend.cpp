#include "moe/cpu_moe_backend.hpp"

#include <cblas.h>
#include <omp.h>

#include <cmath>

#include "core/host_rows.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_routing.hpp"
#include "moe/cpu_moe_layout.hpp"
#include "moe/router_logits.hpp"

namespace fp4gemm::moe {
namespace {

// Below this many elements an elementwise loop runs on the calling thread (as in the dense backend).
constexpr std::int64_t kParallelMinElements = 1 << 16;

float silu(float value) { return value / (1.0f + std::exp(-value)); }

// h [rows, I] in x's dtype: the activation of the down GEMM.
struct Intermediate {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  DenseView view(DType dtype, std::int64_t rows, std::int64_t intermediate) const {
    return {dtype == DType::bf16 ? static_cast<const void*>(bf16.data()) : f32.data(), dtype, rows, intermediate, 0, Memory::host, 0};
  }
};

// h = SiLU(gate) ⊙ up from the gate_up GEMM's [rows, 2I] result, rounded to x's dtype.
Intermediate silu_and_multiply(const std::vector<float>& gate_up, std::int64_t rows, std::int64_t intermediate,
                               float gate_scale, float up_scale, DType dtype) {
  Intermediate h;
  const std::size_t count = static_cast<std::size_t>(rows * intermediate);
  if (dtype == DType::bf16) h.bf16.resize(count); else h.f32.resize(count);
#pragma omp parallel for schedule(static) if (std::int64_t(count) >= kParallelMinElements)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = gate_up.data() + r * 2 * intermediate;
    const float* up = gate + intermediate;
    for (std::int64_t j = 0; j < intermediate; ++j) {
      const float value = silu(gate_scale * gate[j]) * (up_scale * up[j]);
      const std::size_t index = std::size_t(r * intermediate + j);
      if (dtype == DType::bf16) h.bf16[index] = float_to_bf16(value); else h.f32[index] = value;
    }
  }
  return h;
}

// result [rows, H] FP32 = one NVFP4 expert on `input` [rows, H] (x's dtype), W4A16 or W4A4.
void run_expert(CpuBackend& gemm, const CpuExpert& expert, const DenseView& input, bool w4a4, float* result) {
  const std::int64_t rows = input.rows, hidden = input.cols, intermediate = expert.down->cols;
  Nvfp4Matrix quantized_input;
  ActivationView activation = ActivationView::from_dense(input);
  float input_scale = 1.0f;
  if (w4a4) {
    quantized_input = quantize_activation(input, expert.gate_up_input_scale);
    activation = ActivationView::from_nvfp4(quantized_input.view());
    input_scale = expert.gate_up_input_scale;
  }
  std::vector<float> gate_up(static_cast<std::size_t>(rows * 2 * intermediate));
  gemm.run(activation, *expert.gate_up, input_scale, {gate_up.data(), DType::f32, rows, 2 * intermediate, 0, Memory::host, 0}, {});
  const Intermediate h = silu_and_multiply(gate_up, rows, intermediate, expert.gate_scale, expert.up_scale, input.dtype);
  const DenseView h_view = h.view(input.dtype, rows, intermediate);
  Nvfp4Matrix quantized_h;
  ActivationView down_activation = ActivationView::from_dense(h_view);
  float down_alpha = expert.down_scale;
  if (w4a4) {
    quantized_h = quantize_activation(h_view, expert.down_input_scale);
    down_activation = ActivationView::from_nvfp4(quantized_h.view());
    down_alpha *= expert.down_input_scale;
  }
  gemm.run(down_activation, *expert.down, down_alpha, {result, DType::f32, rows, hidden, 0, Memory::host, 0}, {});
}

// A dense shared expert by SGEMM: FP32 weights, h rounded to x's dtype as for NVFP4 experts.
void run_dense_expert(const CpuDenseExpert& expert, const DenseView& x, float* result) {
  const std::int64_t rows = x.rows, hidden = x.cols, intermediate = expert.intermediate;
  std::vector<float> input(static_cast<std::size_t>(rows * hidden));
  for (std::int64_t r = 0; r < rows; ++r) load_activation_row(ActivationView::from_dense(x), r, input.data() + r * hidden);
  std::vector<float> gate_up(static_cast<std::size_t>(rows * 2 * intermediate));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(2 * intermediate), int(hidden), 1.0f, input.data(),
              int(hidden), expert.gate_up.data(), int(hidden), 0.0f, gate_up.data(), int(2 * intermediate));
  const Intermediate h = silu_and_multiply(gate_up, rows, intermediate, 1.0f, 1.0f, x.dtype);
  std::vector<float> h_f32(static_cast<std::size_t>(rows * intermediate));
  for (std::int64_t r = 0; r < rows; ++r)
    load_activation_row(ActivationView::from_dense(h.view(x.dtype, rows, intermediate)), r, h_f32.data() + r * intermediate);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(hidden), int(intermediate), 1.0f, h_f32.data(),
              int(intermediate), expert.down.data(), int(intermediate), 0.0f, result, int(hidden));
}

// The rows of x that `permutation` gives expert e, in its order, in x's dtype.
struct GatheredRows {
  std::vector<std::uint8_t> bytes;
  DenseView view;
};
GatheredRows gather(const DenseView& x, const Permutation& permutation, std::int64_t expert) {
  const std::int64_t begin = permutation.offsets[std::size_t(expert)], rows = permutation.offsets[std::size_t(expert) + 1] - begin;
  const std::size_t row_bytes = std::size_t(x.cols) * dtype_size(x.dtype);
  GatheredRows gathered;
  gathered.bytes.resize(std::size_t(rows) * row_bytes);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto* source = static_cast<const std::uint8_t*>(x.data) + std::size_t(permutation.token[std::size_t(begin + r)]) *
                                                                          std::size_t(x.stride()) * dtype_size(x.dtype);
    std::copy(source, source + row_bytes, gathered.bytes.begin() + std::ptrdiff_t(std::size_t(r) * row_bytes));
  }
  gathered.view = {gathered.bytes.data(), x.dtype, rows, x.cols, 0, Memory::host, 0};
  return gathered;
}

TopK routing_of(const MoeCall& call, const CpuPreparedMoe& layer, std::int64_t tokens) {
  const int k = call.options.top_k;
  if (call.routing.topk_ids != nullptr) {
    return TopK{tokens, k, std::vector<std::int32_t>(call.routing.topk_ids, call.routing.topk_ids + tokens * k),
                std::vector<float>(call.routing.topk_weights, call.routing.topk_weights + tokens * k)};
  }
  std::vector<float> logits(static_cast<std::size_t>(tokens * layer.experts));
  router_logits_by_hidden(call.x, layer.router_by_hidden.data(), layer.experts, logits.data());
  return route_from_logits(logits.data(), tokens, layer.experts, k, call.options.norm_topk_prob);
}

// sigmoid(x · shared_gateᵀ) per token, FP64 accumulation (1 without a gate).
std::vector<float> shared_gate_weights(const DenseView& x, const std::vector<float>& gate) {
  std::vector<float> weights(static_cast<std::size_t>(x.rows), 1.0f);
  if (gate.empty()) return weights;
  std::vector<float> row(static_cast<std::size_t>(x.cols));
  for (std::int64_t t = 0; t < x.rows; ++t) {
    load_activation_row(ActivationView::from_dense(x), t, row.data());
    double logit = 0.0;
    for (std::int64_t i = 0; i < x.cols; ++i) logit += double(row[std::size_t(i)]) * double(gate[std::size_t(i)]);
    weights[std::size_t(t)] = float(1.0 / (1.0 + std::exp(-logit)));
  }
  return weights;
}

}  // namespace

std::string CpuMoeBackend::summary() const {
  return "CPU MoE: tokens grouped by expert, each expert's GEMMs on the dense cpu backend (" +
         std::to_string(omp_get_max_threads()) + " threads)";
}

CheckResult CpuMoeBackend::check_device(const DeviceInfo& device) const { return gemm_.check_device(device); }

CheckResult CpuMoeBackend::check_problem(const MoeProblem& problem, const DeviceInfo& device) const {
  // The expert GEMMs are the dense backend's; their largest M is every token on one expert.
  const ActivationType gemm_activation = problem.activation;
  for (const GemmProblem& gemm : {GemmProblem{problem.tokens * problem.top_k, 2 * problem.intermediate, problem.hidden,
                                              gemm_activation, DType::f32},
                                  GemmProblem{problem.tokens * problem.top_k, problem.hidden, problem.intermediate,
                                              gemm_activation, DType::f32}}) {
    const CheckResult check = gemm_.check_problem(gemm, device);
    if (!check) return CheckResult::fail("the expert GEMM " + gemm.to_string() + " cannot run on the cpu backend: " + check.reason);
  }
  return CheckResult::pass();
}

std::string CpuMoeBackend::plan(const MoeProblem& problem, const DeviceInfo&) const {
  return "tokens grouped by expert; per active expert one gate_up GEMM [m_e, " + std::to_string(2 * problem.intermediate) +
         "] and one down GEMM [m_e, " + std::to_string(problem.hidden) + "] on the cpu backend" +
         (problem.shared_expert ? std::string("; the shared expert on all ") + std::to_string(problem.tokens) + " tokens" +
                                      (problem.shared_dense ? " (SGEMM)" : "")
                                : std::string());
}

void CpuMoeBackend::run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext&) {
  const MoeProblem problem = validate_moe_call(call, layer, out, Memory::host);
  const auto& prepared = prepared_moe_as<CpuPreparedMoe>(layer, name());
  const std::int64_t tokens = problem.tokens, hidden = problem.hidden;
  if (tokens == 0) return;
  const bool w4a4 = problem.activation == ActivationType::nvfp4;

  // route -> permute -> experts -> combine, everything into an FP32 accumulator before `out`.
  const TopK routing = routing_of(call, prepared, tokens);
  const Permutation permutation = permute_by_expert(routing, prepared.experts);
  std::vector<float> sum(static_cast<std::size_t>(tokens * hidden), 0.0f);
  std::vector<float> expert_out;
  for (std::int64_t e = 0; e < prepared.experts; ++e) {
    const std::int64_t begin = permutation.offsets[std::size_t(e)], rows = permutation.offsets[std::size_t(e) + 1] - begin;
    if (rows == 0) continue;
    const GatheredRows input = gather(call.x, permutation, e);
    expert_out.resize(static_cast<std::size_t>(rows * hidden));
    run_expert(gemm_, prepared.expert_weights[std::size_t(e)], input.view, w4a4, expert_out.data());
    // NOTE: rows of one expert may share a token (given routing may name an expert twice): serial.
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t token = permutation.token[std::size_t(begin + r)];
      const float weight = routing.weights[std::size_t(token * routing.k + permutation.slot[std::size_t(begin + r)])];
      float* destination = sum.data() + token * hidden;
      const float* source = expert_out.data() + r * hidden;
      for (std::int64_t c = 0; c < hidden; ++c) destination[c] += weight * source[c];
    }
  }
  if (prepared.shared_nvfp4 || prepared.shared_dense) {
    expert_out.resize(static_cast<std::size_t>(tokens * hidden));
    if (prepared.shared_nvfp4) {
      run_expert(gemm_, *prepared.shared_nvfp4, call.x, w4a4, expert_out.data());
    } else {
      run_dense_expert(*prepared.shared_dense, call.x, expert_out.data());
    }
    const std::vector<float> gate = shared_gate_weights(call.x, prepared.shared_gate);
#pragma omp parallel for schedule(static) if (tokens * hidden >= kParallelMinElements)
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < hidden; ++c) sum[std::size_t(t * hidden + c)] += gate[std::size_t(t)] * expert_out[std::size_t(t * hidden + c)];
  }
#pragma omp parallel for schedule(static) if (tokens * hidden >= kParallelMinElements)
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t c = 0; c < hidden; ++c) store_output(out, t, c, sum[std::size_t(t * hidden + c)]);
}

}  // namespace fp4gemm::moe
