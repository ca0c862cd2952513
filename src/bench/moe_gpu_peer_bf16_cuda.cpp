// The cuBLAS BF16 MoE peer: the touched experts dequantized to BF16 (global scales applied) once
// before timing, tokens gathered by expert, one cublasGemmGroupedBatchedEx for every active
// expert's gate_up and one for every down (one group per expert: each has its own M), BF16 h
// and output, FP32 accumulation. Where this cuBLAS refuses the grouped call for a shape, the same
// GEMMs run as one cublasGemmEx per active expert and the peer is named cublas_bf16_per_expert.
#include "backends/cuda_common/cuda_check.hpp"
#include "bench/gpu_support.hpp"
#include "bench/moe_gpu_peers.hpp"
#include "bench/moe_peer_kernels.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::bench {
namespace {

using cuda::check_cublas;
using cuda::check_cuda;

// One grouped GEMM of a draw: C_i [m_i, N] = B_i [m_i, K] · A_iᵀ (A_i [N, K] row-major), in cuBLAS's
// column-major terms C_iᵀ = op_T(A_i) · B_iᵀ: m = N, n = m_i, k = K.
struct GroupedGemm {
  std::vector<cublasOperation_t> transa, transb;
  std::vector<int> m, n, k, lda, ldb, ldc, group_size;
  std::vector<float> alpha, beta;
  std::vector<const void*> a, b;
  std::vector<void*> c;
  cuda::DeviceBuffer a_device, b_device, c_device;  // the pointer arrays cuBLAS reads on the device
};

GroupedGemm make_grouped(const MoePeerPlan& plan, std::int64_t n, std::int64_t k, const std::vector<const void*>& weights,
                         const std::uint16_t* input, std::uint16_t* output) {
  GroupedGemm gemm;
  for (std::size_t i = 0; i < plan.experts.size(); ++i) {
    gemm.transa.push_back(CUBLAS_OP_T);
    gemm.transb.push_back(CUBLAS_OP_N);
    gemm.m.push_back(int(n));
    gemm.n.push_back(int(plan.rows[i]));
    gemm.k.push_back(int(k));
    gemm.lda.push_back(int(k));
    gemm.ldb.push_back(int(k));
    gemm.ldc.push_back(int(n));
    gemm.group_size.push_back(1);
    gemm.alpha.push_back(1.0f);
    gemm.beta.push_back(0.0f);
    gemm.a.push_back(weights[i]);
    gemm.b.push_back(input + plan.first_row[i] * k);
    gemm.c.push_back(output + plan.first_row[i] * n);
  }
  const std::size_t bytes = gemm.a.size() * sizeof(void*);
  gemm.a_device = cuda::upload(gemm.a.data(), bytes, "the BF16 peer's A pointers");
  gemm.b_device = cuda::upload(gemm.b.data(), bytes, "the BF16 peer's B pointers");
  gemm.c_device = cuda::upload(gemm.c.data(), bytes, "the BF16 peer's C pointers");
  return gemm;
}

std::vector<std::uint8_t> bf16_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t bits = float_to_bf16(values[i]);
    bytes[2 * i] = std::uint8_t(bits & 0xFF);
    bytes[2 * i + 1] = std::uint8_t(bits >> 8);
  }
  return bytes;
}

class CublasBf16GroupedPeer final : public GpuMoePeer {
 public:
  CublasBf16GroupedPeer(const MoeBenchLayer& layer, GpuMoeOperands& operands)
      : GpuMoePeer(operands), operands_(operands), shape_(layer.shape()) {
    const std::int64_t hidden = shape_.hidden, inter = shape_.intermediate, rows = operands.tokens * operands.top_k;
    const std::vector<std::int32_t> touched = touched_experts(operands.routings, shape_.experts);
    touched_ = std::int64_t(touched.size());
    const double expert_bytes = 2.0 * 3.0 * double(hidden) * double(inter);
    require_device_memory(expert_bytes * double(touched.size()) + 2.0 * double(rows) * double(2 * hidden + 3 * inter), name());
    experts_ = copy_touched_experts(layer, touched, [&](std::int64_t d, bool down) {
      return bf16_bytes(down ? layer.dequantized_down(d) : layer.dequantized_gate_up(d));
    });
    gathered_ = cuda::DeviceBuffer(std::size_t(rows * hidden) * 2, "the BF16 peer's gathered x");
    gate_up_ = cuda::DeviceBuffer(std::size_t(rows * 2 * inter) * 2, "the BF16 peer's gate_up");
    h_ = cuda::DeviceBuffer(std::size_t(rows * inter) * 2, "the BF16 peer's h");
    y_ = cuda::DeviceBuffer(std::size_t(rows * hidden) * 2, "the BF16 peer's expert outputs");
    plans_ = upload_plans(operands.routings, shape_.experts);
    for (const DevicePlan& device : plans_) {
      std::vector<const void*> gate_up_weights, down_weights;
      for (std::int32_t e : device.plan.experts) {
        gate_up_weights.push_back(experts_.gate_up_of(e));
        down_weights.push_back(experts_.down_of(e));
      }
      gate_up_gemms_.push_back(make_grouped(device.plan, 2 * inter, hidden, gate_up_weights, gathered_.as<std::uint16_t>(),
                                            gate_up_.as<std::uint16_t>()));
      down_gemms_.push_back(make_grouped(device.plan, hidden, inter, down_weights, h_.as<std::uint16_t>(), y_.as<std::uint16_t>()));
    }
    // The copies and uploads ran on the legacy stream, which the bench's non-blocking stream does not wait for.
    check_cuda(cudaDeviceSynchronize(), "bench: making the BF16 peer's expert copies and pointer arrays");
  }

  std::string name() const override { return grouped_ ? "cublas_bf16_grouped" : "cublas_bf16_per_expert"; }

  std::string how() const override {
    return std::string(grouped_ ? "cublasGemmGroupedBatchedEx (one group per active expert) for gate_up and for down"
                                : "cublasGemmEx per active expert for gate_up and down (cuBLAS refused the grouped call: " +
                                      grouped_refusal_ + ")") +
           ", BF16 x BF16 -> BF16, FP32 accumulation, BF16 h; gather, SiLU·mul and combine kernels; BF16 copies of the " +
           std::to_string(touched_) + " touched experts made before timing";
  }

  void prepare(cudaStream_t stream) override {
    cublas_ = std::make_unique<CublasHandle>(stream);
    stream_ = stream;
    preparing_ = true;
    GpuMoePeer::prepare(stream);
    preparing_ = false;
  }

  void enqueue(int draw, cudaStream_t stream) override {
    if (!cublas_) throw_invalid("the BF16 MoE peer ran before prepare()");
    if (stream != stream_) {  // rebinding resets cuBLAS's workspace: never done per call, nor inside a capture
      check_cublas(cublasSetStream(cublas_->get(), stream), "bench: binding the BF16 peer's stream");
      stream_ = stream;
    }
    const DevicePlan& device = plans_[std::size_t(draw)];
    const std::int64_t rows = operands_.tokens * operands_.top_k, hidden = shape_.hidden, inter = shape_.intermediate;
    gather_rows_bf16(operands_.x.as<std::uint16_t>(), device.gather.as<std::int32_t>(), rows, hidden, gathered_.as<std::uint16_t>(),
                     stream);
    run(gate_up_gemms_[std::size_t(draw)], "gate_up");
    silu_mul_bf16(gate_up_.as<std::uint16_t>(), rows, inter, h_.as<std::uint16_t>(), nullptr, stream);
    run(down_gemms_[std::size_t(draw)], "down");
    combine_bf16(y_.as<std::uint16_t>(), device.combine_rows.as<std::int32_t>(), device.combine_weights.as<float>(),
                 operands_.tokens, operands_.top_k, hidden, operands_.out.as<std::uint16_t>(), stream);
  }

 private:
  void run(const GroupedGemm& gemm, const char* which) {
    const int groups = int(gemm.group_size.size());
    if (grouped_) {
      const cublasStatus_t status = cublasGemmGroupedBatchedEx(
          cublas_->get(), gemm.transa.data(), gemm.transb.data(), gemm.m.data(), gemm.n.data(), gemm.k.data(), gemm.alpha.data(),
          gemm.a_device.as<const void* const>(), CUDA_R_16BF, gemm.lda.data(), gemm.b_device.as<const void* const>(), CUDA_R_16BF,
          gemm.ldb.data(), gemm.beta.data(), gemm.c_device.as<void* const>(), CUDA_R_16BF, gemm.ldc.data(), groups,
          gemm.group_size.data(), CUBLAS_COMPUTE_32F);
      if (status == CUBLAS_STATUS_SUCCESS) return;
      if (!preparing_) check_cublas(status, std::string("bench: the BF16 peer's grouped ") + which + " GEMM");
      // Refused while preparing, outside capture (the status is kept for the note): the per-expert
      // form from now on, and the grouped GEMMs that did run are simply redone.
      grouped_ = false;
      grouped_refusal_ = std::string(which) + ": " + cublasGetStatusName(status);
    }
    for (int i = 0; i < groups; ++i) {
      check_cublas(cublasGemmEx(cublas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, gemm.m[std::size_t(i)], gemm.n[std::size_t(i)],
                                gemm.k[std::size_t(i)], &gemm.alpha[std::size_t(i)], gemm.a[std::size_t(i)], CUDA_R_16BF,
                                gemm.lda[std::size_t(i)], gemm.b[std::size_t(i)], CUDA_R_16BF, gemm.ldb[std::size_t(i)],
                                &gemm.beta[std::size_t(i)], gemm.c[std::size_t(i)], CUDA_R_16BF, gemm.ldc[std::size_t(i)],
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   std::string("bench: the BF16 peer's per-expert ") + which + " GEMM");
    }
  }

  GpuMoeOperands& operands_;
  MoeBenchShape shape_;
  std::unique_ptr<CublasHandle> cublas_;
  cudaStream_t stream_ = nullptr;  // the stream cublas_ is bound to
  std::int64_t touched_ = 0;
  TouchedExpertCopies experts_;
  cuda::DeviceBuffer gathered_, gate_up_, h_, y_;
  std::vector<DevicePlan> plans_;
  std::vector<GroupedGemm> gate_up_gemms_, down_gemms_;
  bool grouped_ = true, preparing_ = false;
  std::string grouped_refusal_;
};

}  // namespace

std::unique_ptr<GpuMoePeer> make_cublas_bf16_grouped_peer(const MoeBenchLayer& layer, GpuMoeOperands& operands) {
  return std::make_unique<CublasBf16GroupedPeer>(layer, operands);
}

}  // namespace fp4gemm::bench
