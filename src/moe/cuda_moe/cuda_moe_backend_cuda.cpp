// `cuda_moe` checks, plan and run() (cuda_moe_backend.hpp); prepare() is cuda_moe_prepare_cuda.cpp.
#include "moe/cuda_moe/cuda_moe_backend.hpp"

#include <climits>
#include <cstdlib>
#include <optional>

#include "backends/cuda_common/cuda_check.hpp"
#include "moe/cuda_moe/cuda_moe_layout.hpp"
#include "moe/cuda_moe/cuda_moe_mma.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"
#include "moe/cuda_moe/wide/cuda_moe_wide.hpp"

namespace fp4gemm::moe {
namespace {

constexpr int kMinimumSm = 80;  // BF16 conversions in the kernels and the SM 8.0 fp32 atomics/shuffles

void expect_device(int view_device, int layer_device, const std::string& what) {
  if (view_device != layer_device) {
    throw_invalid("cuda_moe: " + what + " is on CUDA device " + std::to_string(view_device) +
                  " but the layer was prepared on device " + std::to_string(layer_device) + "; run on the layer's device");
  }
}

// Every pointer the kernels read or write, checked before anything is launched.
void check_call_pointers(const MoeCall& call, const MutableDenseView& out, int device) {
  expect_device(call.x.device, device, "x");
  expect_device(out.device, device, "the output");
  cuda::check_device_pointer(call.x.data, device, "cuda_moe: the x pointer");
  cuda::check_device_pointer(out.data, device, "cuda_moe: the output pointer");
  if (call.routing.topk_ids != nullptr) {
    expect_device(call.routing.device, device, "the top-k routing");
    cuda::check_device_pointer(call.routing.topk_ids, device, "cuda_moe: the top-k ids pointer");
    cuda::check_device_pointer(call.routing.topk_weights, device, "cuda_moe: the top-k weights pointer");
  }
}

std::optional<std::string> knob(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? std::nullopt : std::optional<std::string>(value);
}

// The wide kernel's token block for `problem` (FP4GEMM_MOE_WIDE_ENTRIES or the expected entries per
// active expert), or 0 when the routed experts do not run on it on an SM `sm` GPU.
int wide_entries_for(const MoeProblem& problem, int sm, cuda_moe::ExpertKernel asked) {
  if (!cuda_moe::wide_experts_take(problem, sm, asked)) return 0;
  return cuda_moe::wide_block_entries(cuda_moe::expected_entries_per_expert(problem), knob("FP4GEMM_MOE_WIDE_ENTRIES"));
}

bool router_gemm_for(const MoeProblem& problem) {
  return !problem.routing_given && cuda_moe::router_gemm_takes(problem.tokens, knob("FP4GEMM_MOE_ROUTER"));
}

// The routing and permutation steps of the plan, in words.
std::string routing_text(const MoeProblem& problem) {
  const std::int64_t entries = problem.tokens * problem.top_k;
  const std::string permutation = entries <= cuda_moe::kOneBlockPermuteEntries ? "; permutation (one block)" : "; permutation (count, scan, place)";
  if (problem.routing_given) return "given routing" + permutation;
  return (router_gemm_for(problem) ? "routing (router logits as one FP64 GEMM on cuBLAS, x and the router widened to FP64, from T = " +
                                         std::to_string(cuda_moe::kRouterGemmMinTokens) +
                                         " (FP4GEMM_MOE_ROUTER=gemm|kernel); softmax + top-k, one warp per token)"
                                   : "routing (router logits over E/2 x T/8 blocks; softmax + top-k, one warp per token)") +
         permutation;
}

// The routed experts on the wide kernel at token blocks of `wide` entries, in words (its launches and
// the packed entries' workspace).
std::string wide_text(const MoeProblem& problem, cuda_moe::ExpertKernel asked, int wide) {
  const std::int64_t entries = problem.tokens * problem.top_k;
  const std::int64_t blocks = cuda_moe::wide_token_blocks(entries, problem.experts, wide);
  const cuda_moe::WorkspaceLayout layout = cuda_moe::workspace_layout(problem, wide);  // the packed entries come last
  return "; the routed experts on the wide kernel (" + std::to_string(cuda_moe::expected_entries_per_expert(problem)) +
         " expected entries per active expert" +
         (asked == cuda_moe::ExpertKernel::wide ? ", set by FP4GEMM_MOE_EXPERT_KERNEL=wide"
                                                : " >= " + std::to_string(cuda_moe::kWideMinEntries) + " on SM 9.0") +
         "): token blocks of up to " + std::to_string(wide) + " entries of one expert (the smallest of 32, 64, 128 that holds the expected entries" +
         (knob("FP4GEMM_MOE_WIDE_ENTRIES") ? ", set by FP4GEMM_MOE_WIDE_ENTRIES" : "") + "; at most " + std::to_string(blocks) +
         "), x gathered and packed per block, gate_up on wgmma (" + std::to_string(cuda_moe::wide_row_blocks(problem.intermediate, true)) +
         " x " + std::to_string(blocks) + " CTAs of wgmma.m64n" + std::to_string(wide) + "k16, 64 gate and 64 up rows each), h packed, down (" +
         std::to_string(cuda_moe::wide_row_blocks(problem.hidden, false)) + " x " + std::to_string(blocks) + " CTAs); packed entries " +
         std::to_string((layout.total - layout.wide_packed) >> 20) + " MiB of the workspace" +
         (problem.shared_expert ? "; the shared expert on the mma kernel" : "");
}

// The measurement knobs (cuda_moe_shape.hpp): FP4GEMM_MOE_EXPERT_KERNEL picks the expert kernel,
// FP4GEMM_MOE_MMA_ENTRY_TILES the tensor-core kernel's entry tiles a pass, FP4GEMM_MOE_MMA_PIPELINE
// whether a pass runs as two register stages.
cuda_moe::ExpertKernel expert_kernel_from_environment() { return cuda_moe::choose_expert_kernel(knob("FP4GEMM_MOE_EXPERT_KERNEL")); }
// The kernel of the experts that the wide kernel does not take: the wide kernel is the routed
// experts' only, so `wide` elsewhere (and automatic) runs as mma.
cuda_moe::ExpertKernel runs_as(cuda_moe::ExpertKernel asked) {
  return asked == cuda_moe::ExpertKernel::wide || asked == cuda_moe::ExpertKernel::automatic ? cuda_moe::ExpertKernel::mma : asked;
}
int entry_tiles_for(std::int64_t entries_per_group) {
  return cuda_moe::mma_entry_tiles(entries_per_group, knob("FP4GEMM_MOE_MMA_ENTRY_TILES"));
}

template <class T>
T* at(const cuda::StreamBuffer& workspace, std::size_t offset) {
  return reinterpret_cast<T*>(workspace.as<std::uint8_t>() + offset);
}

// The tensor-core kernel's pass for launches of `gate_up_blocks` and `down_blocks` row blocks over
// `expert_slots` groups of `entries_per_group` expected entries, on a GPU of `multiprocessors` SMs
// (what run() launches and plan() says).
cuda_moe::MmaPass mma_pass_for(std::int64_t gate_up_blocks, std::int64_t down_blocks, std::int64_t expert_slots,
                               std::int64_t entries_per_group, int multiprocessors) {
  const int entry_tiles = entry_tiles_for(entries_per_group);
  return {entry_tiles, cuda_moe::mma_pipelined(entry_tiles, knob("FP4GEMM_MOE_MMA_PIPELINE")),
          cuda_moe::mma_warps_k(std::max(gate_up_blocks, down_blocks) * expert_slots, multiprocessors, entry_tiles,
                                knob("FP4GEMM_MOE_MMA_WARPS_K"))};
}

// gate_up then down for one set of experts (routed or shared) over `grouping`: on the tensor-core
// kernel when it is asked for and takes these experts and x (h then holds BF16; its launches are
// programmatic when `programmatic`; its K split from the GPU's `multiprocessors`), else on `kernel`.
void run_experts(const cuda_moe::StackedExperts& gate_up, const cuda_moe::StackedExperts& down, const cuda_moe::DeviceRows& x,
                 const cuda_moe::Grouping& grouping, std::int64_t entries_per_group, bool round_to_bf16,
                 cuda_moe::ExpertKernel kernel, float* h, float* y, cudaStream_t stream, bool programmatic, int multiprocessors) {
  if (kernel == cuda_moe::ExpertKernel::mma && cuda_moe::mma_takes(gate_up, x)) {
    auto* h_bf16 = reinterpret_cast<__nv_bfloat16*>(h);  // half of h's FP32 space
    const cuda_moe::MmaPass pass = mma_pass_for(cuda_moe::mma_row_blocks(gate_up.rows / 2, true), cuda_moe::mma_row_blocks(down.rows, false),
                                                grouping.expert_slots, entries_per_group, multiprocessors);
    cuda_moe::launch_mma_gate_up(gate_up, x, grouping, pass, h_bf16, stream, programmatic);
    cuda_moe::launch_mma_down(down, h_bf16, grouping, pass, y, stream, programmatic);
    return;
  }
  const auto fallback = kernel == cuda_moe::ExpertKernel::mma ? cuda_moe::ExpertKernel::staged : kernel;
  cuda_moe::launch_gate_up(gate_up, x, grouping, round_to_bf16, fallback, h, stream);
  cuda_moe::launch_down(down, h, grouping, fallback, y, stream);
}

}  // namespace

std::string CudaMoeBackend::summary() const {
  return "CUDA MoE: routing and permutation on the GPU, all active experts in one launch per GEMM "
         "(CUDA-core NVFP4 decode, or tensor cores for BF16 x), weighted combine; SM 8.0+";
}

CheckResult CudaMoeBackend::check_device(const DeviceInfo& device) const {
  if (!device.is_cuda()) return CheckResult::fail("needs a CUDA GPU; this device is the CPU");
  if (device.sm() < kMinimumSm) {
    return CheckResult::fail("needs a CUDA GPU of SM 8.0 or newer; this is SM " + std::to_string(device.sm_major) + "." +
                             std::to_string(device.sm_minor));
  }
  return CheckResult::pass();
}

CheckResult CudaMoeBackend::check_problem(const MoeProblem& problem, const DeviceInfo& device) const {
  if (problem.activation == ActivationType::nvfp4) {
    return CheckResult::fail("runs W4A16 only (x in BF16 or FP32); W4A4 (activation nvfp4) runs on cpu or ref");
  }
  if (problem.experts > cuda_moe::kMaxExperts) {
    return CheckResult::fail("routes at most " + std::to_string(cuda_moe::kMaxExperts) +
                             " experts (its routing keeps one logit per expert in shared memory); the layer has " +
                             std::to_string(problem.experts));
  }
  if (!problem.routing_given && problem.tokens > cuda_moe::kMaxRoutedTokens) {
    return CheckResult::fail("routes at most " + std::to_string(cuda_moe::kMaxRoutedTokens) +
                             " tokens per call (the router kernel's grid); split the call or give the routing");
  }
  if (problem.tokens * problem.top_k >= std::int64_t(INT_MAX)) {
    return CheckResult::fail("indexes the T·k (token, expert) entries with 32-bit integers; T·k must be below 2^31");
  }
  const int wide = wide_entries_for(problem, device.sm(), expert_kernel_from_environment());
  const double workspace = double(cuda_moe::workspace_layout(problem, wide, router_gemm_for(problem)).total);
  if (device.free_memory_bytes > 0 && workspace > double(device.free_memory_bytes)) {
    return CheckResult::fail("its per-call workspace needs " + std::to_string(std::int64_t(workspace) >> 20) +
                             " MiB (h and y for each of the T·k entries" + (wide > 0 ? ", and the wide kernel's packed entries" : "") +
                             ") but the GPU has " +
                             std::to_string(device.free_memory_bytes >> 20) + " MiB free");
  }
  return CheckResult::pass();
}

std::string CudaMoeBackend::plan(const MoeProblem& problem, const DeviceInfo& device) const {
  const std::int64_t entries = problem.tokens * problem.top_k;
  const cuda_moe::ExpertKernel asked = expert_kernel_from_environment();
  if (const int wide = wide_entries_for(problem, device.sm(), asked); wide > 0) {
    return routing_text(problem) + wide_text(problem, asked, wide) + "; weighted combine (1 launch)";
  }
  // The tensor-core kernel takes BF16 x (with 16-byte aligned rows, checked per call).
  const cuda_moe::ExpertKernel chosen = runs_as(asked);
  const bool mma = chosen == cuda_moe::ExpertKernel::mma && problem.activation == ActivationType::bf16;
  const cuda_moe::ExpertKernel kernel = chosen == cuda_moe::ExpertKernel::mma && !mma ? cuda_moe::ExpertKernel::staged : chosen;
  const bool streaming = kernel == cuda_moe::ExpertKernel::streaming;
  const std::int64_t slots = cuda_moe::grouped_grid(0, problem.experts, entries).expert_slots;
  const std::int64_t gate_up_blocks = mma ? cuda_moe::mma_row_blocks(problem.intermediate, true)
                                          : cuda_moe::grouped_grid(problem.intermediate, problem.experts, entries).row_tiles;
  const std::int64_t down_blocks =
      mma ? cuda_moe::mma_row_blocks(problem.hidden, false)
          : cuda_moe::grouped_grid(problem.hidden, problem.experts, entries, streaming ? cuda_moe::kDownRowsPerWarp : 1).row_tiles;
  std::string text = routing_text(problem) + "; gate_up over all active experts in one launch (" + std::to_string(gate_up_blocks) +
                     " x " + std::to_string(slots) + " blocks); down likewise (" + std::to_string(down_blocks) + " x " +
                     std::to_string(slots) + " blocks)";
  if (problem.shared_expert) {
    text += std::string("; the ") + (problem.shared_dense ? "dense (FP32)" : "NVFP4") + " shared expert on all " +
            std::to_string(problem.tokens) + " tokens (3 launches)";
  }
  const std::string decode = mma ? "; tensor-core (mma.sync BF16) NVFP4 decode, h in BF16, " : "; CUDA-core NVFP4 decode, ";
  const bool knob_set = knob("FP4GEMM_MOE_EXPERT_KERNEL").has_value();
  const std::string launches = cuda_moe::moe_programmatic_launch(device.sm(), knob("FP4GEMM_MOE_PDL"))
                                   ? "; routing, permutation, tensor-core and combine kernels as programmatic dependent launches"
                                   : "";
  std::string split;
  if (mma) {
    const std::int64_t expected = cuda_moe::expected_entries_per_expert(problem);
    const cuda_moe::MmaPass pass = mma_pass_for(gate_up_blocks, down_blocks, slots, expected, device.multiprocessors);
    const int tiles = pass.entry_tiles, warps = pass.warps_k;
    split = "; " + std::to_string(tiles) + " entry tile" + (tiles == 1 ? "" : "s") + " of 8 a pass (expected entries per active expert: " +
            std::to_string(expected) + "; 1 tile up to " +
            std::to_string(cuda_moe::kMmaOneTileEntries) + ", 2 up to " + std::to_string(cuda_moe::kMmaTwoTileEntries) +
            ", then 4" + (knob("FP4GEMM_MOE_MMA_ENTRY_TILES") ? ", set by FP4GEMM_MOE_MMA_ENTRY_TILES" : "") + ")" +
            "; K split over " + std::to_string(warps) + " warps a block" +
            (warps == cuda_moe::kMmaFewWarpsK ? " (a short grid: at most " + std::to_string(cuda_moe::kMmaFewWarpsMaxWaves) +
                                                    " waves of such blocks on " + std::to_string(device.multiprocessors) + " SMs)"
                                              : "");
  }
  return text + "; weighted combine (1 launch)" + decode + cuda_moe::expert_kernel_name(kernel) + " expert kernel" +
         (knob_set ? " (set by FP4GEMM_MOE_EXPERT_KERNEL)" : " (FP4GEMM_MOE_EXPERT_KERNEL=streaming|staged|mma|wide picks another)") + split +
         launches;
}

void CudaMoeBackend::run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext& context) {
  const MoeProblem problem = validate_moe_call(call, layer, out, Memory::cuda);
  const auto& prepared = prepared_moe_as<CudaPreparedMoe>(layer, name());
  if (problem.tokens == 0) return;
  if (const CheckResult fits = check_problem(problem, DeviceInfo{}); !fits) {
    throw Error(ErrorCode::unsupported, "cuda_moe cannot run " + problem.to_string() + ": " + fits.reason);
  }
  check_call_pointers(call, out, prepared.device);
  cuda::DeviceGuard guard(prepared.device);
  const auto stream = static_cast<cudaStream_t>(context.cuda_stream);
  const std::int64_t tokens = problem.tokens, hidden = problem.hidden, experts = problem.experts;
  const int k = problem.top_k;

  const cuda_moe::ExpertKernel asked = expert_kernel_from_environment();
  const cuda_moe::ExpertKernel kernel = runs_as(asked);
  const bool programmatic = cuda_moe::moe_programmatic_launch(prepared.sm, knob("FP4GEMM_MOE_PDL"));
  const cuda_moe::DeviceRows x{call.x.data, call.x.dtype == DType::bf16, call.x.stride()};
  const int wide = cuda_moe::wide_takes(prepared.gate_up.view(), prepared.down.view(), x) ? wide_entries_for(problem, prepared.sm, asked) : 0;
  const bool router_gemm = router_gemm_for(problem);
  const cuda_moe::WorkspaceLayout layout = cuda_moe::workspace_layout(problem, wide, router_gemm);
  const cuda::StreamBuffer workspace(layout.total, stream, "cuda_moe: the per-call workspace");

  // 1. routing
  const std::int32_t* ids = call.routing.topk_ids;
  const float* weights = call.routing.topk_weights;
  if (ids == nullptr) {
    auto* routed_ids = at<std::int32_t>(workspace, layout.topk_ids);
    auto* routed_weights = at<float>(workspace, layout.topk_weights);
    auto* logits = at<float>(workspace, layout.logits);
    if (router_gemm) {
      cuda_moe::launch_router_gemm(*prepared.router_gemm, x, tokens, hidden, prepared.router.as<const float>(), experts,
                                   at<double>(workspace, layout.router_gemm), logits, stream);
      cuda_moe::launch_top_k(logits, tokens, experts, k, call.options.norm_topk_prob, routed_ids, routed_weights, stream, programmatic);
    } else {
      cuda_moe::launch_route(x, tokens, hidden, prepared.router.as<const float>(), experts, k, call.options.norm_topk_prob, logits,
                             routed_ids, routed_weights, stream, programmatic);
    }
    ids = routed_ids;
    weights = routed_weights;
  }
  // 2. permutation
  const cuda_moe::PermutationArrays arrays{at<std::int32_t>(workspace, layout.counts),       at<std::int32_t>(workspace, layout.offsets),
                                           at<std::int32_t>(workspace, layout.cursor),       at<std::int32_t>(workspace, layout.active),
                                           at<std::int32_t>(workspace, layout.active_count), at<std::int32_t>(workspace, layout.entry_token),
                                           at<std::int32_t>(workspace, layout.entry_of)};
  cuda_moe::launch_permute(ids, tokens, k, experts, arrays, stream, programmatic);
  // 3, 4. the routed experts, one launch per GEMM
  cuda_moe::Grouping routed;
  routed.active_count = arrays.active_count;
  routed.active = arrays.active;
  routed.offsets = arrays.offsets;
  routed.entry_token = arrays.entry_token;
  routed.expert_slots = cuda_moe::grouped_grid(0, experts, tokens * k).expert_slots;
  const bool round_to_bf16 = call.x.dtype == DType::bf16;
  auto* h = at<float>(workspace, layout.intermediate);
  auto* y = at<float>(workspace, layout.expert_out);
  if (wide > 0) {
    const cuda_moe::WideScratch scratch{at<std::uint8_t>(workspace, layout.wide_blocks), at<std::uint8_t>(workspace, layout.wide_packed),
                                        cuda_moe::wide_token_blocks(tokens * k, experts, wide), wide};
    cuda_moe::launch_wide_experts(prepared.gate_up.view(), prepared.down.view(), x, routed, scratch, reinterpret_cast<__nv_bfloat16*>(h),
                                  y, stream);
  } else {
    run_experts(prepared.gate_up.view(), prepared.down.view(), x, routed, cuda_moe::expected_entries_per_expert(problem), round_to_bf16, kernel, h,
                y, stream, programmatic, prepared.multiprocessors);
  }
  // The shared expert: one group of every token, in slices over grid.y.
  float* shared_y = nullptr;
  float* shared_weight = nullptr;
  if (prepared.has_shared) {
    const cuda_moe::SingleGroupSplit split = cuda_moe::single_group_split(tokens);
    cuda_moe::Grouping all_tokens;
    all_tokens.single_group_entries = tokens;
    all_tokens.single_group_slice = split.slice;
    all_tokens.expert_slots = split.slots;
    auto* shared_h = at<float>(workspace, layout.shared_intermediate);
    shared_y = at<float>(workspace, layout.shared_out);
    shared_weight = at<float>(workspace, layout.shared_weight);
    run_experts(prepared.shared_gate_up.view(), prepared.shared_down.view(), x, all_tokens, split.slice, round_to_bf16, kernel,
                shared_h, shared_y, stream, programmatic, prepared.multiprocessors);
    cuda_moe::launch_shared_gate(x, tokens, hidden, prepared.shared_gate.as<const float>(), shared_weight, stream);
  }
  // 5. combine
  cuda_moe::launch_combine(y, arrays.entry_of, weights, tokens, k, hidden, shared_y, shared_weight, out, stream, programmatic);
}

}  // namespace fp4gemm::moe
