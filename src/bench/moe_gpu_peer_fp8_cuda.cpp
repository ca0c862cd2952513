// The cuBLASLt FP8 MoE peer: the touched experts quantized to E4M3 with a per-tensor scale per
// expert and projection (amax / 448 of the dequantized values) once before timing; per call, x
// quantized to E4M3 with a per-tensor scale found on the device (amax / 448) while it is gathered
// by expert, one cublasLtMatmul per active expert for gate_up (BF16 out), SiLU·mul to BF16 h, h
// quantized the same way, one cublasLtMatmul per active expert for down, the weighted combine.
// FP8 matmuls take only the "TN" layout; K (H or I) is a multiple of 16 by the bench's shape check.
#include <algorithm>
#include <cmath>
#include <map>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/gpu_bench_settings.hpp"
#include "bench/gpu_support.hpp"
#include "bench/moe_gpu_peers.hpp"
#include "bench/moe_peer_kernels.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/e4m3.hpp"

namespace fp4gemm::bench {
namespace {

using cuda::check_cublas;
using cuda::check_cuda;

// Each device scalar in its own 16-byte slot: cuBLASLt refused FP8 algorithms for scale pointers
// 4 bytes apart on the H200 (gpu_peers_cuda.cpp), and ran them 16 bytes apart.
constexpr std::size_t kScaleStride = 16;

// Per-tensor E4M3: the scale amax / 448 and the codes of values / scale (scale 1 for all zeros).
std::vector<std::uint8_t> e4m3_with_scale(const std::vector<float>& values, float& scale) {
  float largest = 0.0f;
  for (float value : values) largest = std::max(largest, std::fabs(value));
  scale = largest > 0.0f ? largest / e4m3::kMax : 1.0f;
  std::vector<std::uint8_t> codes(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) codes[i] = e4m3::encode(values[i] / scale);
  return codes;
}

// One FP8 GEMM kind (gate_up or down): out [m, N] = act [m, K] · Wᵀ as outᵀ [N, m] = op_T(W) · actᵀ.
class Fp8Gemm {
 public:
  Fp8Gemm(std::int64_t n, std::int64_t k, const char* which) : n_(n), k_(k), which_(which) {
    const std::string what = std::string("bench: setting up the FP8 peer's ") + which;
    check_cublas(cublasLtMatmulDescCreate(&operation_, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
    const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose), what);
    check_cublas(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep), what);
    check_cublas(cublasLtMatrixLayoutCreate(&weight_, CUDA_R_8F_E4M3, std::uint64_t(k), std::uint64_t(n), k), what);
    check_cublas(cublasLtMatmulPreferenceCreate(&preference_), what);
    const std::uint64_t workspace = gpu_settings::kLtWorkspaceBytes;
    check_cublas(cublasLtMatmulPreferenceSetAttribute(preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                      sizeof workspace), what);
  }
  ~Fp8Gemm() {
    for (auto& [m, shape] : shapes_) {
      cublasLtMatrixLayoutDestroy(shape.activation);
      cublasLtMatrixLayoutDestroy(shape.output);
    }
    if (preference_ != nullptr) cublasLtMatmulPreferenceDestroy(preference_);
    if (weight_ != nullptr) cublasLtMatrixLayoutDestroy(weight_);
    if (operation_ != nullptr) cublasLtMatmulDescDestroy(operation_);
  }
  Fp8Gemm(const Fp8Gemm&) = delete;
  Fp8Gemm& operator=(const Fp8Gemm&) = delete;

  // out = act · Wᵀ for `m` rows. While `choosing`, a row count seen for the first time gets the
  // heuristic's candidates, each tried on this very call until one runs; later (in capture) an
  // unseen row count is an error, since nothing may be tried there.
  void run(cublasLtHandle_t lt, std::int64_t m, const std::uint8_t* weight, const float* weight_scale, const std::uint8_t* act,
           const float* act_scale, std::uint16_t* out, std::uint16_t* addend, void* workspace, cudaStream_t stream, bool choosing) {
    const std::string what = std::string("bench: the FP8 peer's ") + which_ + " matmul";
    check_cublas(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &weight_scale, sizeof weight_scale),
                 what);
    check_cublas(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &act_scale, sizeof act_scale), what);
    auto found = shapes_.find(m);
    if (found == shapes_.end()) {
      if (!choosing) throw_invalid(what + ": M = " + std::to_string(m) + " was not seen while preparing (no algorithm chosen)");
      found = shapes_.emplace(m, Shape{}).first;
      check_cublas(cublasLtMatrixLayoutCreate(&found->second.activation, CUDA_R_8F_E4M3, std::uint64_t(k_), std::uint64_t(m), k_), what);
      check_cublas(cublasLtMatrixLayoutCreate(&found->second.output, CUDA_R_16BF, std::uint64_t(n_), std::uint64_t(m), n_), what);
    }
    Shape& shape = found->second;
    const float alpha = 1.0f, beta = 0.0f;
    const auto matmul = [&](const cublasLtMatmulAlgo_t& algorithm) {
      return cublasLtMatmul(lt, operation_, &alpha, weight, weight_, act, shape.activation, &beta, addend, shape.output, out,
                            shape.output, &algorithm, workspace, gpu_settings::kLtWorkspaceBytes, stream);
    };
    if (shape.chosen) {
      check_cublas(matmul(shape.algorithm), what);
      return;
    }
    if (!choosing) throw_invalid(what + ": M = " + std::to_string(m) + " has no algorithm (none ran while preparing)");
    cublasLtMatmulHeuristicResult_t candidates[gpu_settings::kLtHeuristicCandidates] = {};
    int count = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt, operation_, weight_, shape.activation, shape.output, shape.output,
                                                                 preference_, gpu_settings::kLtHeuristicCandidates, candidates, &count);
    std::string refusals = status != CUBLAS_STATUS_SUCCESS ? std::string("heuristic: ") + cublasGetStatusName(status) : "";
    for (int i = 0; i < count && status == CUBLAS_STATUS_SUCCESS; ++i) {
      const cublasStatus_t tried = matmul(candidates[i].algo);
      if (tried == CUBLAS_STATUS_SUCCESS) {
        shape.algorithm = candidates[i].algo;
        shape.chosen = true;
        return;
      }
      refusals += std::string(refusals.empty() ? "" : ", ") + cublasGetStatusName(tried);
    }
    throw Error(ErrorCode::unsupported, "cuBLASLt runs no FP8 E4M3 algorithm for the " + std::string(which_) + " GEMM at M = " +
                                           std::to_string(m) + ", N = " + std::to_string(n_) + ", K = " + std::to_string(k_) + " (" +
                                           (refusals.empty() ? "0 candidates" : refusals) + "); not padded, by design");
  }

 private:
  struct Shape {
    cublasLtMatrixLayout_t activation = nullptr, output = nullptr;
    cublasLtMatmulAlgo_t algorithm{};
    bool chosen = false;
  };
  std::int64_t n_, k_;
  const char* which_;
  cublasLtMatmulDesc_t operation_ = nullptr;
  cublasLtMatrixLayout_t weight_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  std::map<std::int64_t, Shape> shapes_;
};

class CublasLtFp8Peer final : public GpuMoePeer {
 public:
  CublasLtFp8Peer(const MoeBenchLayer& layer, GpuMoeOperands& operands)
      : GpuMoePeer(operands), operands_(operands), shape_(layer.shape()), gate_up_(2 * shape_.intermediate, shape_.hidden, "gate_up"),
        down_(shape_.hidden, shape_.intermediate, "down") {
    const std::int64_t hidden = shape_.hidden, inter = shape_.intermediate, rows = operands.tokens * operands.top_k;
    const std::vector<std::int32_t> touched = touched_experts(operands.routings, shape_.experts);
    touched_ = std::int64_t(touched.size());
    require_device_memory(3.0 * double(hidden) * double(inter) * double(touched.size()) +
                              double(rows) * double(hidden + 2 * inter + 2 * 2 * (2 * inter) + 2 * inter + 2 * 2 * hidden) +
                              double(gpu_settings::kLtWorkspaceBytes),
                          name());
    const std::int64_t distinct = std::min<std::int64_t>(MoeBenchLayer::kDistinctExperts, shape_.experts);
    std::vector<float> distinct_scales(std::size_t(2 * distinct));  // gate_up, down per distinct expert
    experts_ = copy_touched_experts(layer, touched, [&](std::int64_t d, bool down) {
      return e4m3_with_scale(down ? layer.dequantized_down(d) : layer.dequantized_gate_up(d),
                             distinct_scales[std::size_t(2 * d + (down ? 1 : 0))]);
    });
    std::vector<float> scales(touched.size() * 2 * (kScaleStride / 4), 0.0f);
    for (std::size_t slot = 0; slot < touched.size(); ++slot)
      for (int projection = 0; projection < 2; ++projection)
        scales[(slot * 2 + std::size_t(projection)) * (kScaleStride / 4)] =
            distinct_scales[std::size_t(2 * (touched[slot] % distinct) + projection)];
    weight_scales_ = cuda::upload(scales.data(), scales.size() * 4, "the FP8 peer's weight scales");
    for (auto* buffer : {&x_amax_, &x_scale_, &h_amax_, &h_scale_}) *buffer = cuda::DeviceBuffer(kScaleStride, "an FP8 peer scale");
    gathered_ = cuda::DeviceBuffer(std::size_t(rows * hidden), "the FP8 peer's gathered E4M3 x");
    gate_up_out_ = cuda::DeviceBuffer(std::size_t(rows * 2 * inter) * 2, "the FP8 peer's gate_up");
    gate_up_addend_ = cuda::DeviceBuffer(std::size_t(rows * 2 * inter) * 2, "the FP8 peer's gate_up C (unused, beta = 0)");
    h_ = cuda::DeviceBuffer(std::size_t(rows * inter) * 2, "the FP8 peer's h");
    h8_ = cuda::DeviceBuffer(std::size_t(rows * inter), "the FP8 peer's E4M3 h");
    y_ = cuda::DeviceBuffer(std::size_t(rows * hidden) * 2, "the FP8 peer's expert outputs");
    y_addend_ = cuda::DeviceBuffer(std::size_t(rows * hidden) * 2, "the FP8 peer's down C (unused, beta = 0)");
    workspace_ = cuda::DeviceBuffer(std::size_t(gpu_settings::kLtWorkspaceBytes), "the FP8 peer's cuBLASLt workspace");
    check_cuda(cudaMemset(gate_up_addend_.data(), 0, gate_up_addend_.bytes()), "bench: clearing the FP8 peer's C");
    check_cuda(cudaMemset(y_addend_.data(), 0, y_addend_.bytes()), "bench: clearing the FP8 peer's C");
    plans_ = upload_plans(operands.routings, shape_.experts);
    slot_of_ = experts_.slot_of;
    // The copies and uploads ran on the legacy stream, which the bench's non-blocking stream does not wait for.
    check_cuda(cudaDeviceSynchronize(), "bench: making the FP8 peer's expert copies");
  }

  std::string name() const override { return "cublaslt_fp8"; }

  std::string how() const override {
    return "cublasLtMatmul E4M3 x E4M3 -> BF16 per active expert for gate_up and down, FP32 accumulation; x and h quantized to "
           "E4M3 per call with a per-tensor scale found on the device; gather+quantize, SiLU·mul, quantize and combine kernels; "
           "E4M3 copies (per-tensor scale per expert and projection) of the " + std::to_string(touched_) +
           " touched experts made before timing";
  }

  void prepare(cudaStream_t stream) override {
    preparing_ = true;
    GpuMoePeer::prepare(stream);
    preparing_ = false;
  }

  void enqueue(int draw, cudaStream_t stream) override {
    const DevicePlan& device = plans_[std::size_t(draw)];
    const MoePeerPlan& plan = device.plan;
    const std::int64_t rows = operands_.tokens * operands_.top_k, hidden = shape_.hidden, inter = shape_.intermediate;
    float* x_amax = x_amax_.as<float>();
    float* h_amax = h_amax_.as<float>();
    check_cuda(cudaMemsetAsync(x_amax, 0, sizeof(float), stream), "bench: clearing the FP8 peer's x amax");
    check_cuda(cudaMemsetAsync(h_amax, 0, sizeof(float), stream), "bench: clearing the FP8 peer's h amax");
    absmax_bf16(operands_.x.as<std::uint16_t>(), operands_.tokens * hidden, x_amax, stream);
    quantize_rows_e4m3(operands_.x.as<std::uint16_t>(), device.gather.as<std::int32_t>(), rows, hidden, x_amax, x_scale_.as<float>(),
                       gathered_.as<std::uint8_t>(), stream);
    for (std::size_t i = 0; i < plan.experts.size(); ++i) {
      const std::int32_t e = plan.experts[i];
      gate_up_.run(lt_.get(), plan.rows[i], experts_.gate_up_of(e), weight_scale(e, 0), gathered_.as<std::uint8_t>() + plan.first_row[i] * hidden,
                   x_scale_.as<float>(), gate_up_out_.as<std::uint16_t>() + plan.first_row[i] * 2 * inter,
                   gate_up_addend_.as<std::uint16_t>() + plan.first_row[i] * 2 * inter, workspace_.data(), stream, preparing_);
    }
    silu_mul_bf16(gate_up_out_.as<std::uint16_t>(), rows, inter, h_.as<std::uint16_t>(), h_amax, stream);
    quantize_rows_e4m3(h_.as<std::uint16_t>(), nullptr, rows, inter, h_amax, h_scale_.as<float>(), h8_.as<std::uint8_t>(), stream);
    for (std::size_t i = 0; i < plan.experts.size(); ++i) {
      const std::int32_t e = plan.experts[i];
      down_.run(lt_.get(), plan.rows[i], experts_.down_of(e), weight_scale(e, 1), h8_.as<std::uint8_t>() + plan.first_row[i] * inter,
                h_scale_.as<float>(), y_.as<std::uint16_t>() + plan.first_row[i] * hidden,
                y_addend_.as<std::uint16_t>() + plan.first_row[i] * hidden, workspace_.data(), stream, preparing_);
    }
    combine_bf16(y_.as<std::uint16_t>(), device.combine_rows.as<std::int32_t>(), device.combine_weights.as<float>(), operands_.tokens,
                 operands_.top_k, hidden, operands_.out.as<std::uint16_t>(), stream);
  }

 private:
  const float* weight_scale(std::int32_t expert, int projection) const {
    const std::size_t slot = std::size_t(slot_of_[std::size_t(expert)]);
    return weight_scales_.as<const float>() + (slot * 2 + std::size_t(projection)) * (kScaleStride / 4);
  }

  GpuMoeOperands& operands_;
  MoeBenchShape shape_;
  CublasLtHandle lt_;
  Fp8Gemm gate_up_, down_;
  std::int64_t touched_ = 0;
  TouchedExpertCopies experts_;
  std::vector<std::int64_t> slot_of_;
  cuda::DeviceBuffer weight_scales_, x_amax_, x_scale_, h_amax_, h_scale_;
  cuda::DeviceBuffer gathered_, gate_up_out_, gate_up_addend_, h_, h8_, y_, y_addend_, workspace_;
  std::vector<DevicePlan> plans_;
  bool preparing_ = false;
};

}  // namespace

std::unique_ptr<GpuMoePeer> make_cublaslt_fp8_peer(const MoeBenchLayer& layer, GpuMoeOperands& operands) {
  return std::make_unique<CublasLtFp8Peer>(layer, operands);
}

}  // namespace fp4gemm::bench
