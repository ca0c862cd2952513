#include "moe/cpu_moe_backend.hpp"

#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_bf16_kernels.hpp"
#include "backends/cpu/cpu_kernels.hpp"
#include "backends/cpu/cpu_tuning.hpp"
#include "core/host_rows.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_routing.hpp"
#include "moe/cpu_moe_layout.hpp"
#include "moe/router_logits.hpp"

namespace fp4gemm::moe {
namespace {

// Below this many elements an elementwise loop runs on the calling thread (as in the dense backend).
constexpr std::int64_t kParallelMinElements = 1 << 16;
// Gathered rows of the experts one fused batch takes (run_fused_batch): bounds its buffers
// (rows x H floats) while a decode step's experts, a few rows each, fit one batch.
constexpr std::int64_t kFusedBatchMaxRows = 512;

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

// An expert whose gathered rows fit the dense backend's fused kernels, within a fused batch.
struct FusedJob {
  std::int64_t expert = 0, begin = 0, rows = 0;  // its rows [begin, begin + rows) of the permutation
  std::vector<float> f32;  // padded activations of the GEMM being run, [rows, padded K]
  std::vector<std::uint16_t> bf16;
  std::vector<float> accumulators;  // [rows, padded weight rows]
};

// The activation rows of `a` as the fused kernels read them: [rows, stride], zero padded, BF16 bit
// patterns (exact: from BF16 or e2m1 x e4m3) or FP32.
void load_padded(const ActivationView& a, std::int64_t stride, bool bf16, FusedJob& job) {
  const std::int64_t rows = a.rows(), cols = a.cols();
  std::vector<float> row(static_cast<std::size_t>(cols));
  if (bf16) job.bf16.assign(static_cast<std::size_t>(rows * stride), 0); else job.f32.assign(static_cast<std::size_t>(rows * stride), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* destination = bf16 ? row.data() : job.f32.data() + r * stride;
    load_activation_row(a, r, destination);
    if (!bf16) continue;
    for (std::int64_t c = 0; c < cols; ++c) {
      std::uint32_t word;
      std::memcpy(&word, &row[std::size_t(c)], 4);
      job.bf16[std::size_t(r * stride + c)] = std::uint16_t(word >> 16);
    }
  }
}

// `input` (x's dtype) as the activation of one expert GEMM: quantized with `input_scale` in W4A4.
void load_gemm_input(const DenseView& input, bool w4a4, float input_scale, std::int64_t stride, bool bf16, FusedJob& job) {
  if (!w4a4) return load_padded(ActivationView::from_dense(input), stride, bf16, job);
  const Nvfp4Matrix quantized = quantize_activation(input, input_scale);
  load_padded(ActivationView::from_nvfp4(quantized.view()), stride, bf16, job);
}

// One GEMM of every job in the batch: all their weight tiles in ONE OpenMP region. A region per
// expert GEMM made a decode step wait at ~2 barriers per active expert, and on a loaded machine
// each waits for a descheduled thread (measured: 42 experts at T = 8 took 14-133 ms, not ~2 ms).
void run_batch_gemm(std::vector<FusedJob>& jobs, const std::vector<const PreparedWeight*>& weights, bool bf16) {
  std::vector<std::pair<std::size_t, std::int64_t>> tasks;  // (job, first tile)
  std::int64_t work = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const auto& weight = static_cast<const CpuWeight&>(*weights[j]);
    jobs[j].accumulators.assign(static_cast<std::size_t>(jobs[j].rows * weight.padded_rows()), 0.0f);
    for (std::int64_t tile = 0; tile < weight.tiles; tile += cpu_tuning::kFusedTilesPerTask) tasks.push_back({j, tile});
    work += jobs[j].rows * weight.rows * weight.cols;
  }
#pragma omp parallel for schedule(static) if (tasks.size() > 1 && work >= kParallelMinElements)
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    FusedJob& job = jobs[tasks[t].first];
    const auto& weight = static_cast<const CpuWeight&>(*weights[tasks[t].first]);
    const std::int64_t begin = tasks[t].second, end = std::min(weight.tiles, begin + cpu_tuning::kFusedTilesPerTask);
    if (bf16) {
      cpu_kernels::fused_small_m_bf16(weight, job.bf16.data(), job.rows, begin, end, job.accumulators.data());
    } else {
      cpu_kernels::fused_small_m(weight, job.f32.data(), job.rows, begin, end, job.accumulators.data());
    }
  }
}

// Whether an expert with `rows` gathered rows runs in a fused batch, and on which kernel: the
// dense backend's own choice (CpuBackend::run) for that M.
bool fused_kernel_takes(std::int64_t rows, bool exact_in_bf16) {
  return (exact_in_bf16 && rows <= cpu_tuning::kBf16FusedMaxM && cpu_kernels::bf16_kernel_available()) ||
         rows <= cpu_kernels::fused_max_m();
}

// Experts `jobs` (ascending, each within the fused kernels) on their gathered rows of x; each job's
// down accumulators [rows, H] come back unscaled (scale: expert_down_alpha). Every expert's weights
// stream once; the batch waits at one barrier per GEMM, not per expert.
void run_fused_batch(const CpuPreparedMoe& layer, const DenseView& x, const Permutation& permutation, bool w4a4,
                     std::vector<FusedJob>& jobs) {
  const bool bf16 = (w4a4 || x.dtype == DType::bf16) && cpu_kernels::bf16_kernel_available();
  std::vector<const PreparedWeight*> gate_up, down;
  for (FusedJob& job : jobs) {
    const CpuExpert& expert = layer.expert_weights[std::size_t(job.expert)];
    gate_up.push_back(expert.gate_up.get());
    down.push_back(expert.down.get());
    const GatheredRows input = gather(x, permutation, job.expert);
    load_gemm_input(input.view, w4a4, expert.gate_up_input_scale,
                    static_cast<const CpuWeight&>(*expert.gate_up).padded_k(), bf16, job);
  }
  run_batch_gemm(jobs, gate_up, bf16);
  for (FusedJob& job : jobs) {
    const CpuExpert& expert = layer.expert_weights[std::size_t(job.expert)];
    const auto& weight = static_cast<const CpuWeight&>(*expert.gate_up);
    const std::int64_t intermediate = expert.down->cols;
    const float alpha = w4a4 ? expert.gate_up_input_scale : 1.0f;
    std::vector<float> gate_up_out(static_cast<std::size_t>(job.rows * 2 * intermediate));
    for (std::int64_t r = 0; r < job.rows; ++r)
      for (std::int64_t c = 0; c < 2 * intermediate; ++c)
        gate_up_out[std::size_t(r * 2 * intermediate + c)] = alpha * job.accumulators[std::size_t(r * weight.padded_rows() + c)];
    const Intermediate h = silu_and_multiply(gate_up_out, job.rows, intermediate, expert.gate_scale, expert.up_scale, x.dtype);
    load_gemm_input(h.view(x.dtype, job.rows, intermediate), w4a4, expert.down_input_scale,
                    static_cast<const CpuWeight&>(*expert.down).padded_k(), bf16, job);
  }
  run_batch_gemm(jobs, down, bf16);
}

float expert_down_alpha(const CpuExpert& expert, bool w4a4) {
  return w4a4 ? expert.down_scale * expert.down_input_scale : expert.down_scale;
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
  // NOTE: rows of one expert may share a token (given routing may name an expert twice): serial.
  const auto add_expert = [&](std::int64_t begin, std::int64_t rows, const float* result, std::int64_t stride, float alpha) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t token = permutation.token[std::size_t(begin + r)];
      const float weight = routing.weights[std::size_t(token * routing.k + permutation.slot[std::size_t(begin + r)])];
      float* destination = sum.data() + token * hidden;
      const float* source = result + r * stride;
      for (std::int64_t c = 0; c < hidden; ++c) destination[c] += weight * (alpha * source[c]);
    }
  };
  // Experts in ascending order; consecutive small ones (a decode step's) run as one fused batch.
  std::vector<FusedJob> batch;
  std::int64_t batch_rows = 0;
  const auto flush = [&] {
    if (batch.empty()) return;
    run_fused_batch(prepared, call.x, permutation, w4a4, batch);
    for (const FusedJob& job : batch) {
      const CpuExpert& expert = prepared.expert_weights[std::size_t(job.expert)];
      add_expert(job.begin, job.rows, job.accumulators.data(), static_cast<const CpuWeight&>(*expert.down).padded_rows(),
                 expert_down_alpha(expert, w4a4));
    }
    batch.clear();
    batch_rows = 0;
  };
  const bool exact_in_bf16 = w4a4 || call.x.dtype == DType::bf16;
  std::vector<float> expert_out;
  for (std::int64_t e = 0; e < prepared.experts; ++e) {
    const std::int64_t begin = permutation.offsets[std::size_t(e)], rows = permutation.offsets[std::size_t(e) + 1] - begin;
    if (rows == 0) continue;
    if (rows <= kFusedBatchMaxRows && fused_kernel_takes(rows, exact_in_bf16)) {
      if (batch_rows + rows > kFusedBatchMaxRows) flush();
      batch.push_back(FusedJob{e, begin, rows, {}, {}, {}});
      batch_rows += rows;
      continue;
    }
    flush();
    const GatheredRows input = gather(call.x, permutation, e);
    expert_out.resize(static_cast<std::size_t>(rows * hidden));
    run_expert(gemm_, prepared.expert_weights[std::size_t(e)], input.view, w4a4, expert_out.data());
    add_expert(begin, rows, expert_out.data(), hidden, 1.0f);
  }
  flush();
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
