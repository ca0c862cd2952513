#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/cuda_nvfp4_backend.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <optional>
#include <vector>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "backends/cuda_common/nvfp4_dequantize.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_pack.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/plan.hpp"
#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_pack.hpp"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_gemm.cuh"
#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_gemm.cuh"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_gemm.cuh"
#include "backends/cuda_nvfp4/wgmma_wide/sm90_nvfp4_wide_gemm.cuh"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm {
namespace {

struct DecodeWeight final : PreparedWeight {
  std::int64_t chunks = 0;
  cuda::DeviceBuffer records;
  int multiprocessors = 0;
  int sm = 0;  // major * 10 + minor: the wgmma kernel runs on SM 9.0 only
};

// A device view copied to the host, so the reorder can run there (prepare is once per weight).
struct HostCopy {
  std::vector<std::uint8_t> codes, scales;
  Nvfp4View view;
};

HostCopy copy_to_host(const Nvfp4View& weight) {
  HostCopy copy;
  copy.codes.resize(static_cast<std::size_t>(weight.code_bytes()));
  copy.scales.resize(static_cast<std::size_t>(weight.scale_bytes()));
  cuda::check_cuda(cudaMemcpy(copy.codes.data(), weight.codes, copy.codes.size(), cudaMemcpyDeviceToHost),
                   "cuda_nvfp4: reading the weight codes from the device");
  cuda::check_cuda(cudaMemcpy(copy.scales.data(), weight.scales, copy.scales.size(), cudaMemcpyDeviceToHost),
                   "cuda_nvfp4: reading the weight scales from the device");
  copy.view = weight;
  copy.view.codes = copy.codes.data();
  copy.view.scales = copy.scales.data();
  copy.view.memory = Memory::host;
  return copy;
}

// The fields both kernels' arguments share.
cuda_nvfp4::KernelProblem kernel_problem(const GemmProblem& problem, const DecodeWeight& prepared, float alpha,
                                          const MutableDenseView& out) {
  cuda_nvfp4::KernelProblem kernel;
  kernel.records = prepared.records.data();
  kernel.out = out.data;
  kernel.out_stride = out.stride();
  kernel.out_dtype = out.dtype;
  kernel.m = int(problem.m);
  kernel.n = int(problem.n);
  kernel.k = int(problem.k);
  kernel.chunks = int(prepared.chunks);
  kernel.alpha = alpha;
  return kernel;
}

// A shape a knob asked for must be one this build compiles.
void check_compiled(const cuda_nvfp4::Plan& plan) {
  if (plan.kernel == cuda_nvfp4::DecodeKernel::mma && plan.mma_overridden && !cuda_nvfp4::is_compiled_shape(plan.mma)) {
    throw_invalid("FP4GEMM_DECODE_SHAPE names a CTA shape this build does not compile");
  }
  if (plan.kernel == cuda_nvfp4::DecodeKernel::wgmma && plan.wgmma_overridden && !cuda_nvfp4::is_compiled_wgmma_shape(plan.wgmma)) {
    throw_invalid("FP4GEMM_WGMMA_SHAPE / FP4GEMM_WGMMA_STREAM name a CTA shape this build does not compile (a stream-K grid has " +
                  std::to_string(cuda_nvfp4::kStreamKWarpgroups) + " warpgroups per CTA, K not split and no multicast)");
  }
}

// The device a prepared weight runs on, as the selector needs it.
DeviceInfo device_of(const DecodeWeight& prepared) {
  DeviceInfo device;
  device.kind = DeviceInfo::Kind::cuda;
  device.index = prepared.device;
  device.sm_major = prepared.sm / 10;
  device.sm_minor = prepared.sm % 10;
  device.multiprocessors = prepared.multiprocessors;
  return device;
}

void run_mma(const cuda_nvfp4::Plan& plan, const DecodeWeight& prepared, const void* activations, std::int64_t activation_stride,
             float alpha, const MutableDenseView& out, cudaStream_t stream) {
  const GemmProblem& problem = plan.problem;
  cuda_nvfp4::DecodeGemmArgs args;
  static_cast<cuda_nvfp4::KernelProblem&>(args) = kernel_problem(problem, prepared, alpha, out);
  args.activations = activations;
  args.activation_stride = activation_stride;
  cuda::check_cuda(cuda_nvfp4::launch_decode_gemm(args, plan.mma, plan.pdl, prepared.multiprocessors, stream),
                   "cuda_nvfp4: launching the kernel");
}

// Bytes rounded up to 256, so that every part of a per-call allocation stays 256-byte aligned.
template <class Bytes>
constexpr Bytes round_up_256(Bytes bytes) {
  return (bytes + 255) / 256 * 256;
}

// The prefill kernel's per-call allocation: the packed activations, then (split only) a counter per
// tile and the partial tiles, each part 256-byte aligned.
struct PrefillWorkspace {
  std::int64_t packed_bytes = 0, counters = 0, counter_bytes = 0, partial_bytes = 0;
  std::int64_t total() const { return packed_bytes + counter_bytes + partial_bytes; }
};
PrefillWorkspace prefill_workspace(const GemmProblem& problem, std::int64_t chunks, int splits) {
  PrefillWorkspace workspace;
  workspace.packed_bytes = round_up_256(cuda_nvfp4::prefill_packed_bytes(problem.m, chunks));
  workspace.counters = splits > 1 ? cuda_nvfp4::prefill_tiles(problem.m, problem.n) : 0;
  workspace.counter_bytes = round_up_256(workspace.counters * std::int64_t(sizeof(unsigned)));
  workspace.partial_bytes = cuda_nvfp4::prefill_partial_bytes(problem.m, problem.n, splits);
  return workspace;
}

// The wgmma kernels' per-call allocation (PackedActivations below): the packed activations, then
// (stream-K only) a flag per CTA and a slot of partial sums per CTA, each part 256-byte aligned.
struct WgmmaWorkspace {
  std::int64_t packed_bytes = 0, flag_bytes = 0, partial_bytes = 0;
  std::int64_t total() const { return packed_bytes + flag_bytes + partial_bytes; }
};
WgmmaWorkspace wgmma_workspace(std::int64_t chunks, int tokens, int stream_ctas, std::int64_t slot_bytes) {
  return {round_up_256(chunks * cuda_nvfp4::packed_chunk_bytes(tokens)), round_up_256(std::int64_t(stream_ctas) * 4),
          std::int64_t(stream_ctas) * slot_bytes};
}

void run_prefill(const cuda_nvfp4::Plan& plan, const DecodeWeight& prepared, const void* activations, std::int64_t activation_stride,
                 float alpha, const MutableDenseView& out, cudaStream_t stream) {
  const GemmProblem& problem = plan.problem;
  const bool programmatic = plan.pdl != cuda_nvfp4::ProgrammaticLaunch::off;
  const int splits = plan.prefill_splits;
  // One allocation: the packed activations, then (split only) a counter per tile and the partial
  // tiles, each part 256-byte aligned.
  const PrefillWorkspace workspace = prefill_workspace(problem, prepared.chunks, splits);
  const std::int64_t packed_bytes = workspace.packed_bytes, counters = workspace.counters, counter_bytes = workspace.counter_bytes;
  const cuda::StreamBuffer packed(static_cast<std::size_t>(workspace.total()), stream,
                                  "cuda_nvfp4: packed activations and K-split workspace of the prefill kernel");
  unsigned* const tile_counters = reinterpret_cast<unsigned*>(packed.as<std::uint8_t>() + packed_bytes);
  cuda::check_cuda(cuda_nvfp4::launch_pack_prefill_activations(static_cast<const std::uint16_t*>(activations), activation_stride,
                                                                int(problem.m), int(problem.k), int(prepared.chunks), packed.data(),
                                                                tile_counters, counters, programmatic, stream),
                   "cuda_nvfp4: packing the activations");
  cuda_nvfp4::PrefillGemmArgs args;
  static_cast<cuda_nvfp4::KernelProblem&>(args) = kernel_problem(problem, prepared, alpha, out);
  args.packed_activations = packed.data();
  args.k_splits = splits;
  args.tile_counters = splits > 1 ? tile_counters : nullptr;
  args.partials = splits > 1 ? packed.as<std::uint8_t>() + packed_bytes + counter_bytes : nullptr;
  cuda::check_cuda(cuda_nvfp4::launch_prefill_gemm(args, programmatic, stream), "cuda_nvfp4: launching the prefill kernel");
}

// The wide prefill kernel's per-call allocation: the activations packed in blocks of
// `tokens` rows (sm90_nvfp4_wgmma_pack.hpp), M x K x 2 bytes rounded up to whole blocks.
std::int64_t wide_workspace_bytes(const GemmProblem& problem, std::int64_t chunks, int tokens) {
  return round_up_256((problem.m + tokens - 1) / tokens * chunks * cuda_nvfp4::packed_chunk_bytes(tokens));
}

void run_wide(const cuda_nvfp4::Plan& plan, const DecodeWeight& prepared, const std::uint16_t* activations,
              std::int64_t activation_stride, float alpha, const MutableDenseView& out, cudaStream_t stream) {
  const GemmProblem& problem = plan.problem;
  const bool programmatic = plan.pdl != cuda_nvfp4::ProgrammaticLaunch::off;
  const cuda::StreamBuffer packed(static_cast<std::size_t>(wide_workspace_bytes(problem, prepared.chunks, plan.wide_tokens)), stream,
                                  "cuda_nvfp4: packed activations of the wide prefill kernel");
  cuda::check_cuda(cuda_nvfp4::launch_pack_activations(activations, activation_stride, int(problem.m), int(problem.k),
                                                       plan.wide_tokens, int(prepared.chunks), packed.data(),
                                                       nullptr, 0, programmatic, stream),
                   "cuda_nvfp4: packing the activations");
  cuda_nvfp4::WideGemmArgs args;
  static_cast<cuda_nvfp4::KernelProblem&>(args) = kernel_problem(problem, prepared, alpha, out);
  args.packed_activations = packed.data();
  args.tokens = plan.wide_tokens;
  args.ctas = int(plan.wide_ctas);
  cuda::check_cuda(cuda_nvfp4::launch_wide_gemm(args, programmatic, stream), "cuda_nvfp4: launching the wide prefill kernel");
}

// The activations packed into the image the two wgmma kernels' shared-memory operand B reads
// (sm90_nvfp4_wgmma_pack.hpp), `tokens` rows wide: allocated and packed on `stream`. With
// `stream_ctas` > 0 the same allocation also holds the stream-K grid's workspace: a flag per CTA,
// zeroed by the pack kernel, and a slot of `slot_bytes` partial sums per CTA.
class PackedActivations {
 public:
  PackedActivations(const GemmProblem& problem, const DecodeWeight& prepared, const std::uint16_t* activations,
                    std::int64_t activation_stride, int tokens, bool programmatic, cudaStream_t stream, int stream_ctas = 0,
                    std::size_t slot_bytes = 0)
      : layout_(wgmma_workspace(prepared.chunks, tokens, stream_ctas, std::int64_t(slot_bytes))),
        buffer_(std::size_t(layout_.total()), stream, "cuda_nvfp4: packed activations") {
    cuda::check_cuda(cuda_nvfp4::launch_pack_activations(activations, activation_stride, int(problem.m), int(problem.k), tokens,
                                                          int(prepared.chunks), buffer_.data(), flags(), stream_ctas, programmatic,
                                                          stream),
                     "cuda_nvfp4: packing the activations");
  }
  const void* data() const { return buffer_.data(); }
  unsigned* flags() const { return reinterpret_cast<unsigned*>(buffer_.as<std::uint8_t>() + layout_.packed_bytes); }
  void* partials() const { return buffer_.as<std::uint8_t>() + layout_.packed_bytes + layout_.flag_bytes; }

 private:
  WgmmaWorkspace layout_;
  cuda::StreamBuffer buffer_;
};

// The arguments of both wgmma kernels.
cuda_nvfp4::WgmmaGemmArgs wgmma_args(const GemmProblem& problem, const DecodeWeight& prepared, float alpha, const MutableDenseView& out,
                                      const PackedActivations& packed) {
  cuda_nvfp4::WgmmaGemmArgs args;
  static_cast<cuda_nvfp4::KernelProblem&>(args) = kernel_problem(problem, prepared, alpha, out);
  args.packed_activations = packed.data();
  return args;
}

void run_wgmma(const cuda_nvfp4::Plan& plan, const DecodeWeight& prepared, const std::uint16_t* activations,
               std::int64_t activation_stride, float alpha, const MutableDenseView& out, cudaStream_t stream) {
  const GemmProblem& problem = plan.problem;
  const cuda_nvfp4::WgmmaShape& shape = plan.wgmma;
  // The wgmma kernels let the next kernel in only after their main loop, which measured faster
  // with PDL on every shape (sm80_nvfp4_mma_tuning.hpp).
  const bool programmatic = plan.pdl != cuda_nvfp4::ProgrammaticLaunch::off;
  const cuda_nvfp4::StreamKPartition& partition = plan.stream;
  const PackedActivations packed(problem, prepared, activations, activation_stride, shape.tokens, programmatic, stream, partition.ctas,
                                 cuda_nvfp4::stream_k_slot_bytes(shape));
  cuda_nvfp4::WgmmaGemmArgs args = wgmma_args(problem, prepared, alpha, out, packed);
  args.stream = partition;
  args.stream_flags = packed.flags();
  args.stream_partials = packed.partials();
  cuda::check_cuda(cuda_nvfp4::launch_wgmma_gemm(args, shape, programmatic, prepared.multiprocessors, stream),
                   "cuda_nvfp4: launching the wgmma kernel");
}

// How the mma.sync kernel's grid meets the GPU's resident CTA slots (the compiled kernel's
// occupancy), which choose_launch_shape weighs (kMaxTailWaves). Empty when CUDA cannot say.
std::string grid_waves_text(const cuda_nvfp4::LaunchShape& shape, std::int64_t n, int multiprocessors) {
  const int resident = cuda_nvfp4::decode_gemm_resident_ctas_per_sm(shape);
  if (resident <= 0 || multiprocessors <= 0) return "";
  const std::int64_t ctas = cuda_nvfp4::grid_ctas(shape, n);
  char waves[32];
  std::snprintf(waves, sizeof waves, "%.2f", cuda_nvfp4::grid_waves(ctas, resident, multiprocessors));
  return "; grid: " + std::to_string(ctas) + (ctas == 1 ? " CTA" : " CTAs") + " on " +
         std::to_string(std::int64_t(resident) * multiprocessors) + " resident slots (" + std::to_string(resident) + " per SM), " +
         waves + " waves";
}

}  // namespace

std::string CudaNvfp4Backend::summary() const {
  return "CUDA small-M kernels (M <= " + std::to_string(cuda_nvfp4::kMaxActivationRows) +
         "): NVFP4 decoded in registers, BF16 mma.sync (on SM 9.0 wgmma from M = " +
         std::to_string(cuda_nvfp4::kWgmmaTallMinM) + " for tall weights, from M = " + std::to_string(cuda_nvfp4::kWgmmaFilledMinM) +
         " where its grid fills the SMs, from M = " + std::to_string(cuda_nvfp4::kWgmmaMinM) +
         " for large weights), weights streamed once (sm_90a, sm_80); above M = " + std::to_string(cuda_nvfp4::kMaxActivationRows) +
         " on SM 9.0 a prefill kernel (decoded weights in shared memory as wgmma's B)";
}

std::string CudaNvfp4Backend::kernel_plan(const GemmProblem& problem, const DeviceInfo& device) const {
  const cuda_nvfp4::Overrides overrides = cuda_nvfp4::Overrides::from_environment();
  // On a probed GPU, the plan weighs the kernels' occupancy and says what the PDL rule decides.
  if (!device.probed || !device.is_cuda()) return cuda_nvfp4::describe_plan(problem, device, overrides);
  try {
    cuda::DeviceGuard guard(device.index);
    const cuda_nvfp4::Plan plan = cuda_nvfp4::select_plan(problem, device, overrides, cuda_nvfp4::decode_gemm_resident_ctas_per_sm);
    std::string note;
    if (plan.kernel == cuda_nvfp4::DecodeKernel::mma && cuda_nvfp4::is_compiled_shape(plan.mma)) {
      if (plan.pdl == cuda_nvfp4::ProgrammaticLaunch::when_grid_fills) {
        const bool fills = cuda_nvfp4::decode_gemm_uses_programmatic_launch(plan.mma, problem.n, plan.pdl, device.multiprocessors);
        note += fills ? ": it does here" : ": it does not here, so no PDL";
      }
      note += grid_waves_text(plan.mma, problem.n, device.multiprocessors);
    }
    return plan.to_string(note);
  } catch (const Error& error) {
    return std::string("cannot plan: ") + error.what();
  }
}

std::string CudaNvfp4Backend::kernel_name(const GemmProblem& problem, const DeviceInfo& device) const {
  try {
    // On a probed GPU the switch weighs the kernels' occupancy, which is asked of that device.
    const bool probed = device.probed && device.is_cuda();
    std::optional<cuda::DeviceGuard> guard;
    if (probed) guard.emplace(device.index);
    const cuda_nvfp4::Plan plan = cuda_nvfp4::select_plan(problem, device, cuda_nvfp4::Overrides::from_environment(),
                                                          probed ? cuda_nvfp4::decode_gemm_resident_ctas_per_sm : nullptr);
    return cuda_nvfp4::decode_kernel_name(plan.kernel);
  } catch (const Error&) {
    return "";  // a malformed knob: kernel_plan() says so, run() throws it
  }
}

CheckResult CudaNvfp4Backend::check_device(const DeviceInfo& device) const {
  if (!device.is_cuda()) return CheckResult::fail("needs a CUDA GPU");
  if (device.sm() < 80) {
    return CheckResult::fail("needs SM 8.0 or newer for BF16 tensor cores; this GPU is SM " + std::to_string(device.sm_major) +
                             "." + std::to_string(device.sm_minor));
  }
  return CheckResult::pass();
}

CheckResult CudaNvfp4Backend::check_problem(const GemmProblem& problem, const DeviceInfo& device) const {
  if (problem.k % 16 != 0) return CheckResult::fail("K must be a multiple of 16");
  if (problem.m > cuda_nvfp4::kMaxActivationRows && device.sm() != 90) {
    return CheckResult::fail("serves M <= " + std::to_string(cuda_nvfp4::kMaxActivationRows) +
                             " here (larger M runs its prefill kernel, SM 9.0 only); M is " + std::to_string(problem.m));
  }
  if (problem.activation == ActivationType::f32) {
    return CheckResult::fail("takes BF16 (W4A16) or NVFP4 (W4A4) activations; FP32 would be rounded to BF16 "
                             "(cuda_dequant_cublas keeps FP32 exact)");
  }
  if (problem.m > INT32_MAX || problem.n > INT32_MAX || problem.k > INT32_MAX) return CheckResult::fail("M, N and K must be below 2^31");
  if (problem.m > cuda_nvfp4::kMaxActivationRows && (problem.n + cuda_nvfp4::kPrefillCtaRows - 1) / cuda_nvfp4::kPrefillCtaRows > 65535) {
    return CheckResult::fail("its prefill kernel (M > " + std::to_string(cuda_nvfp4::kMaxActivationRows) + ") takes N up to " +
                             std::to_string(65535 * cuda_nvfp4::kPrefillCtaRows) + " rows (one grid row per " +
                             std::to_string(cuda_nvfp4::kPrefillCtaRows) + ")");
  }
  const double weight_bytes = double(problem.n) * double(problem.k) * kNvfp4BytesPerElement;
  if (device.free_memory_bytes > 0 && weight_bytes > double(device.free_memory_bytes)) {
    return CheckResult::fail("the prepared weight (" + std::to_string(std::int64_t(weight_bytes) >> 20) +
                             " MiB) does not fit the free device memory");
  }
  return CheckResult::pass();
}

WeightResidency CudaNvfp4Backend::residency(std::int64_t rows, std::int64_t cols) const {
  const std::int64_t row_blocks = (rows + cuda_nvfp4::kTilesPerBlock * cuda_nvfp4::kTileRows - 1) /
                                  (cuda_nvfp4::kTilesPerBlock * cuda_nvfp4::kTileRows);
  return {row_blocks * cuda_nvfp4::chunks_covering(cols) * cuda_nvfp4::kRecordBytes, Memory::cuda, false,
          "NVFP4 codes and E4M3 scales in 128-row x 64-column records for its kernels (0.5625 B/element, rows padded to "
          "128 and K to 64), read by all three kernels"};
}

std::int64_t CudaNvfp4Backend::workspace_bytes(const GemmProblem& problem, const DeviceInfo& device) const {
  if (!device.is_cuda() || problem.m == 0) return 0;
  try {
    const cuda_nvfp4::Plan plan = cuda_nvfp4::select_plan(problem, device, cuda_nvfp4::Overrides::from_environment());
    const std::int64_t chunks = cuda_nvfp4::chunks_covering(problem.k);
    const std::int64_t staged = problem.activation == ActivationType::nvfp4 ? problem.m * problem.k * 2 : 0;
    switch (plan.kernel) {
      case cuda_nvfp4::DecodeKernel::mma: return staged;
      case cuda_nvfp4::DecodeKernel::wgmma:
        return staged +
               wgmma_workspace(chunks, plan.wgmma.tokens, plan.stream.ctas, std::int64_t(cuda_nvfp4::stream_k_slot_bytes(plan.wgmma)))
                   .total();
      case cuda_nvfp4::DecodeKernel::prefill: return staged + prefill_workspace(problem, chunks, plan.prefill_splits).total();
      case cuda_nvfp4::DecodeKernel::wide: return staged + wide_workspace_bytes(problem, chunks, plan.wide_tokens);
    }
  } catch (const Error&) {
    // a malformed knob: kernel_plan() says so, run() throws it
  }
  return 0;
}

std::unique_ptr<PreparedWeight> CudaNvfp4Backend::prepare(const Nvfp4View& weight, const DeviceInfo& device) {
  const CheckResult usable = check_device(device);
  if (!usable) throw Error(ErrorCode::unsupported, "cuda_nvfp4: " + usable.reason);
  cuda::DeviceGuard guard(device.index);
  HostCopy host_copy;
  const Nvfp4View* source = &weight;
  if (weight.memory == Memory::cuda) {
    validate_nvfp4(weight, "weight");  // shape checks; scales are checked once on the host copy
    host_copy = copy_to_host(weight);
    source = &host_copy.view;
  }
  validate_weight(*source);
  const cuda_nvfp4::DecodeLayout layout = cuda_nvfp4::make_decode_layout(*source);
  auto prepared = std::make_unique<DecodeWeight>();
  prepared->rows = weight.rows;
  prepared->cols = weight.cols;
  prepared->backend = name();
  prepared->device = device.index;
  prepared->chunks = layout.chunks;
  prepared->multiprocessors = device.multiprocessors;
  prepared->sm = device.sm();
  prepared->records = cuda::upload(layout.records.data(), layout.records.size(), "cuda_nvfp4: weight records");
  prepared->resident_bytes = std::int64_t(layout.records.size());
  return prepared;
}

void CudaNvfp4Backend::run(const ActivationView& a, const PreparedWeight& weight, float alpha,
                            const MutableDenseView& out, const RunContext& context) {
  const GemmProblem problem = validate_gemm(a, weight, out, Memory::cuda);
  const auto& prepared = prepared_as<DecodeWeight>(weight, name());
  if (problem.activation == ActivationType::f32) {
    throw Error(ErrorCode::unsupported, "cuda_nvfp4 takes BF16 or NVFP4 activations; use cuda_dequant_cublas for FP32");
  }
  if (problem.m > cuda_nvfp4::kMaxActivationRows && prepared.sm != 90) {
    throw Error(ErrorCode::unsupported, "cuda_nvfp4 serves M <= 64 on this GPU (its prefill kernel is SM 9.0 only); M is " +
                                            std::to_string(problem.m));
  }
  if (problem.m == 0 || problem.n == 0) return;
  cuda::DeviceGuard guard(prepared.device);
  const auto stream = static_cast<cudaStream_t>(context.cuda_stream);
  // NOTE: the mma.sync kernel reads each lane's 16 activations as two 16-byte loads, so base and
  // row stride must keep 16-byte alignment; other BF16 views are copied into a packed buffer first
  // (for the wgmma kernel's pack too: the copy also covers bases that are not 2-byte aligned). PDL
  // relaxes the wait on a previous kernel only; that copy is not one, so the kernel after it
  // launches plainly, and the plan is made for that.
  const bool copy_first = problem.activation == ActivationType::bf16 &&
                          (reinterpret_cast<std::uintptr_t>(a.dense.data) % 16 != 0 || a.dense.stride() % 8 != 0);
  const cuda_nvfp4::Plan plan = cuda_nvfp4::select_plan(problem, device_of(prepared), cuda_nvfp4::Overrides::from_environment(),
                                                        cuda_nvfp4::decode_gemm_resident_ctas_per_sm, copy_first);
  check_compiled(plan);
  const void* activations = a.dense.data;
  std::int64_t activation_stride = a.dense.stride();
  std::unique_ptr<cuda::StreamBuffer> staged;  // a staged copy of the activations, when one is needed
  if (problem.activation == ActivationType::nvfp4) {
    // W4A4: NVFP4 activations become BF16 exactly (e2m1 x e4m3), then the same kernel runs.
    cuda::check_device_pointer(a.nvfp4.codes, prepared.device, "cuda_nvfp4: activation codes");
    cuda::check_device_pointer(a.nvfp4.scales, prepared.device, "cuda_nvfp4: activation scales");
    staged = std::make_unique<cuda::StreamBuffer>(static_cast<std::size_t>(problem.m * problem.k) * 2, stream,
                                                  "cuda_nvfp4: BF16 copy of the NVFP4 activations");
    cuda::DeviceNvfp4 source;
    source.codes = a.nvfp4.codes;
    source.scales = a.nvfp4.scales;
    source.swizzled_scales = a.nvfp4.scale_layout == ScaleLayout::swizzled_128x4;
    source.rows = problem.m;
    source.cols = problem.k;
    cuda::launch_dequantize_to_bf16(source, staged->as<std::uint16_t>(), stream);
    cuda::check_launch("cuda_nvfp4: dequantizing the NVFP4 activations");
    activations = staged->data();
    activation_stride = problem.k;
  } else {
    cuda::check_device_pointer(a.dense.data, prepared.device, "cuda_nvfp4: activation");
    if (copy_first) {
      staged = std::make_unique<cuda::StreamBuffer>(static_cast<std::size_t>(problem.m * problem.k) * 2, stream,
                                                    "cuda_nvfp4: aligned copy of the BF16 activations");
      cuda::check_cuda(cudaMemcpy2DAsync(staged->data(), std::size_t(problem.k) * 2, activations,
                                         std::size_t(activation_stride) * 2, std::size_t(problem.k) * 2,
                                         std::size_t(problem.m), cudaMemcpyDeviceToDevice, stream),
                       "cuda_nvfp4: copying the activations to an aligned buffer");
      activations = staged->data();
      activation_stride = problem.k;
    }
  }
  cuda::check_device_pointer(out.data, prepared.device, "cuda_nvfp4: output");
  const auto* bf16_activations = static_cast<const std::uint16_t*>(activations);
  switch (plan.kernel) {
    case cuda_nvfp4::DecodeKernel::mma: run_mma(plan, prepared, activations, activation_stride, alpha, out, stream); break;
    case cuda_nvfp4::DecodeKernel::wgmma: run_wgmma(plan, prepared, bf16_activations, activation_stride, alpha, out, stream); break;
    case cuda_nvfp4::DecodeKernel::prefill: run_prefill(plan, prepared, activations, activation_stride, alpha, out, stream); break;
    case cuda_nvfp4::DecodeKernel::wide: run_wide(plan, prepared, bf16_activations, activation_stride, alpha, out, stream); break;
  }
}

}  // namespace fp4gemm
