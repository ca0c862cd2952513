#pragma once
// The sizes of the `cuda_moe` launches and of its per-call workspace, as plain host code so the
// formulas are tested on machines without a GPU (tests/moe/cuda_moe_shape_test.cpp). Every tuned
// constant of the backend lives here; the kernels include this header too.
// NOTE: CUDA sources include this header: keep it C++17.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::moe::cuda_moe {

// Expert kernels: one warp per output row (gate_up: gate row i and up row i together), so a block
// covers this many rows of one expert.
inline constexpr int kWarpsPerBlock = 8;
inline constexpr int kExpertThreads = kWarpsPerBlock * 32;
// Rows of x (or h) staged in shared memory at a time: each decoded weight is used this many times.
inline constexpr int kTokensPerChunk = 8;
// Elements along K staged per pass: with 32-element units, exactly one unit per lane.
inline constexpr int kKTile = 1024;
// The streaming kernel (cuda_moe_streaming.cu): units whose loads a lane issues before using any,
// and weight rows per warp, for gate_up (gate and up rows: 2) and down. Bytes in flight per warp:
// batch x rows x 512.
inline constexpr int kGateUpBatch = 4;
inline constexpr int kDownBatch = 2;
inline constexpr int kDownRowsPerWarp = 4;
// Resident blocks per SM the streaming kernel is compiled for: a bound of 128 registers a thread
// (65536 / (256 x 2)), with which no variant spills; at 3 blocks (80 registers) they spilled.
inline constexpr int kStreamingBlocksPerSm = 2;
// The tensor-core kernel (cuda_moe_mma.cu): warps of a block, each taking 1/kMmaWarpsK of K for
// the block's rows (gate_up: 16 outputs, gate and up rows; down: 32 rows); chunks of 64 columns
// whose loads a lane issues before using any (halved when a pass holds two entry tiles: the
// activations take the registers); resident warps per SM it is compiled for (a bound of 128
// registers a thread). Bytes in flight are not what holds T = 1 back: asking L2 to fetch 128 or
// 256 bytes around each weight load (.L2::128B / .L2::256B, so a row's next chunks come from L2)
// measured level on an H100 (T = 1 51.5 µs against 51.4-52.1; T = 8, 64 within 0.3 %), while
// cutting the decode's instructions (cuda_moe_code_order.hpp) took 6-7 % off T = 1-512.
inline constexpr int kMmaWarpsK = 4;
inline constexpr int kMmaBatchChunks = 4;
inline constexpr int kMmaWarpsPerSm = 16;  // resident warps a SM either K split keeps (128 registers a thread)
// A decode step's grid is short: T = 1 of Qwen3.5-397B-A17B's layer is 640 gate_up and 1280 down
// blocks, 1.2 and 2.4 waves of 4-warp blocks on 132 SMs, whose last partial wave leaves most SMs
// idle. Split K over kMmaFewWarpsK warps instead and twice the blocks are resident (gate_up in one
// wave), each twice as long. Taken where the layer's larger grid (down's) fits kMmaFewWarpsMaxWaves
// waves of such blocks, for one-tile passes. Measured on an H100, that layer, given routing, µs:
// T = 1 57.9 -> 51.3 with 2 warps (8 warps: 59.3; 51.7 with the rule in a second run); T = 8
// (10240 down blocks) 272.7 -> 280.5 with 2 warps forced, T = 64 1253 -> 1256, so 4 warps stay there.
inline constexpr int kMmaFewWarpsK = 2;
inline constexpr int kMmaFewWarpsMaxWaves = 2;
// The K split of a layer call's tensor-core launches: kMmaFewWarpsK where the larger grid has at
// most kMmaFewWarpsMaxWaves waves of kMmaFewWarpsK-warp blocks on `multiprocessors` SMs and the
// pass holds one entry tile, else kMmaWarpsK (`knob`: FP4GEMM_MOE_MMA_WARPS_K, 2, 3 or 4, the first
// two at one entry tile only; anything else throws a sentence naming it). 3 warps (5 blocks, 15
// warps a SM) fit T = 1's 640 gate_up blocks in one wave with half again the warps of 2, yet measured
// level on an H100 (codes in fragment order; T = 1, given routing, µs, two runs each): both GEMMs
// at 2 warps 48.3 / 48.1, both at 3 48.2 / 48.3, gate_up at 3 and down at 2 48.5 / 48.5.
int mma_warps_k(std::int64_t largest_grid_blocks, int multiprocessors, int entry_tiles,
                const std::optional<std::string>& knob = std::nullopt);
// Entry tiles of 8 a pass holds (each weight byte is read and decoded once per tile set): one up
// to kMmaOneTileEntries expected entries per active expert, two up to kMmaTwoTileEntries, then
// four (32 entries a pass, one chunk of loads in flight). A pass of one tile runs an expert with
// more than 8 entries twice, decoding its weights again, which the expected count's spread makes
// common well below 8. Measured on an H100, Qwen3.5-397B-A17B layer, given routing, one tile vs
// two, µs: 3.1 entries per expert (T = 160) 1664 vs 1833, 5 (T = 256) 1871 vs 1943, 6.25 (T = 320)
// 2095 vs 1981, 7.5 (T = 384) 2367 vs 2017, 8.75 (T = 448) 2649 vs 2070; at 10 (T = 512) two tiles
// take 2137 us and four 2708; at 80 (T = 4096) two take 11747 us and four 9532. Where between 10
// and 80 four starts to win is not measured.
inline constexpr std::int64_t kMmaOneTileEntries = 5;
inline constexpr std::int64_t kMmaTwoTileEntries = 32;
inline constexpr int kMmaMaxEntryTiles = 4;

// Whether the decode chain's kernels (routing, the one-block permutation, the tensor-core expert
// kernels, the combine) go out as programmatic dependent launches (cuda_moe_launch.cuh): on SM 9.0
// and newer unless `knob` (FP4GEMM_MOE_PDL) is "0"; "1" keeps the default; anything else throws a
// sentence naming the knob. Older GPUs have no PDL.
bool moe_programmatic_launch(int sm, const std::optional<std::string>& knob = std::nullopt);

// Routing and permutation keep one value per expert in shared memory.
inline constexpr std::int64_t kMaxExperts = 2048;
inline constexpr int kRoutingThreads = 256;
// Router logits: warps per expert (each sums every kRouterSplits-th 4-element group of H), and
// tokens per block (grid.y = ceil(T / this), at most 65535: the token limit).
inline constexpr int kRouterSplits = 4;
inline constexpr std::int64_t kRouterTokensPerBlock = 8;
inline constexpr std::int64_t kMaxRoutedTokens = 65535 * kRouterTokensPerBlock;
// From this many tokens the router logits are one FP64 GEMM on cuBLAS (cuda_moe_router_gemm.hpp)
// instead of the logits kernel, which re-reads x per block of two experts. Measured on an H100,
// Qwen3.5-397B-A17B layer, the router row's extra over given routing, µs, kernel -> GEMM: T = 1
// 19.7 -> 32.5, T = 8 45.6 -> 46.9, T = 64 109 -> 52, T = 512 659 -> 121, T = 4096 4627 -> 412; the
// GEMM's at T = 16 / 32: 61 / 49 (the kernel's grows ~1 µs a token from 8 to 64).
inline constexpr std::int64_t kRouterGemmMinTokens = 32;
// Whether T tokens' logits take the GEMM: from kRouterGemmMinTokens, or as `knob`
// (FP4GEMM_MOE_ROUTER: "gemm" or "kernel"; anything else throws a sentence naming the knob) says.
bool router_gemm_takes(std::int64_t tokens, const std::optional<std::string>& knob = std::nullopt);
// The FP64 scratch the GEMM needs: x (T x H), the router (E x H) and the logits (T x E).
std::int64_t router_gemm_scratch_doubles(std::int64_t tokens, std::int64_t hidden, std::int64_t experts);
// Threads of the permutation's scan block (one CUB block scan; each thread owns E / this experts):
// at 1024 the scan spilled under the 64-register bound of a 1024-thread block.
inline constexpr int kScanThreads = 256;
// Up to this many entries (T·k) the permutation runs in one block with its counts in shared
// memory: one launch instead of a memset and three (decode; the count and place kernels spread
// larger T over the GPU).
inline constexpr std::int64_t kOneBlockPermuteEntries = 8192;
inline constexpr int kElementwiseThreads = 256;
// The combine's (token, slot) entries whose loads a thread issues together (k = 10: two groups).
inline constexpr int kCombineSlotsInFlight = 8;

// Floats of the staged activation tile: a unit of `unit_elements` consecutive elements (what one
// lane decodes from one wide load) is stored with one float of padding, so the 32 lanes of a warp,
// reading element j of 32 different units, hit 32 different shared-memory banks.
constexpr int staged_floats_per_token(int unit_elements) { return (kKTile / unit_elements) * (unit_elements + 1); }
inline constexpr int kStagedFloats = kTokensPerChunk * staged_floats_per_token(16);  // the larger of 16 and 32

// 32 elements (two scale blocks, 16 code bytes: one 16-byte load) when K allows, else 16 (8 bytes).
constexpr int unit_elements_for(std::int64_t k) { return k % 32 == 0 ? 32 : 16; }

// Which kernel runs the NVFP4 experts: `mma` (tensor cores, BF16 x; the default: on an H100 it
// serves the Qwen3.5-397B-A17B layer 1.9-2.4x faster than cuBLAS BF16 grouped up to T = 512,
// bench/results/h100-moe.md), `staged` (CUDA-core decode with the activations staged in shared
// memory per K tile: any x, and the dense FP32 shared expert) or `streaming` (CUDA-core decode, no
// shared memory; measured slower than mma at T = 1 and 8). x that is not BF16 (FP32, or NVFP4 for
// W4A4) takes the staged kernel.
// `wide` (SM 9.0, wide/cuda_moe_wide.cu): the routed experts of a prefill on wgmma, where mma
// would decode each weight once per 32 entries. `automatic`, the default: mma, whose routed
// experts go to wide where wide_experts_take holds; a knob naming mma keeps them on mma.
enum class ExpertKernel { streaming, staged, mma, wide, automatic };
// The kernel for this call: FP4GEMM_MOE_EXPERT_KERNEL's value when given (`knob`: streaming,
// staged, mma or wide; anything else throws a sentence naming the knob), else automatic.
ExpertKernel choose_expert_kernel(const std::optional<std::string>& knob);
const char* expert_kernel_name(ExpertKernel kernel);

// The fixed grid of one grouped expert launch: `rows` output rows per expert in tiles of
// kWarpsPerBlock warps of `rows_per_warp` rows, times the most experts that can be active (the host cannot know how many are
// without a synchronisation; blocks beyond the active count exit at once).
struct GroupedGrid {
  std::int64_t row_tiles = 0;
  std::int64_t expert_slots = 0;
};
GroupedGrid grouped_grid(std::int64_t rows, std::int64_t experts, std::int64_t entries, int rows_per_warp = 1);

// The tensor-core kernel's blocks along one expert's output rows (16 outputs a block for gate_up,
// 32 rows for down), and the entry tiles (1, 2 or 4) a pass holds for `entries_per_group` expected
// entries per active group.
constexpr int mma_rows_per_block(bool gate_up) { return gate_up ? 16 : 32; }
std::int64_t mma_row_blocks(std::int64_t out_rows, bool gate_up);
// `knob`: FP4GEMM_MOE_MMA_ENTRY_TILES (1, 2 or 4; anything else throws a sentence naming it).
int mma_entry_tiles(std::int64_t entries_per_group, const std::optional<std::string>& knob = std::nullopt);
// Whether a pass of `entry_tiles` runs as two register stages (the next half batch's loads in
// flight while this half is decoded) rather than one batch loaded then decoded. Default: at one
// entry tile. Measured on an H100, Qwen3.5-397B-A17B layer, given routing, µs one batch -> two
// stages: T = 1 60.4 -> 58.0, T = 8 287.2 -> 274.2, T = 64 1306 -> 1256 (one tile); T = 512
// 2136 -> 2361 (two tiles: the stages halve a batch of 2 chunks to 1). `knob`:
// FP4GEMM_MOE_MMA_PIPELINE ("0" off, "1" on for 1 and 2 entry tiles; anything else throws a
// sentence naming it). Four entry tiles hold a batch of one chunk: never staged.
bool mma_pipelined(int entry_tiles, const std::optional<std::string>& knob = std::nullopt);

// The wide expert kernel (wide/cuda_moe_wide.cu, SM 9.0): a CTA multiplies a token block (up to
// 32, 64 or kWideEntries entries of one expert: wgmma's N) with kWideRows weight rows (gate_up: 64
// gate rows and the 64 up rows of the same outputs; down: 128 rows) decoded in registers as wgmma's
// A, the entries' rows gathered and packed per call into the image its shared-memory B reads. The
// default (automatic) hands the routed experts to it on SM 9.0 from kWideMinEntries expected
// entries per active expert, when H and I are multiples of 64 (whole chunks: the copies stay
// aligned). Measured on an H100, Qwen3.5-397B-A17B layer, given routing, µs, mma vs wide at blocks
// of 32 / 64 / 128 entries: T = 256 (5 entries per expert) 1862 vs 2027 / 2601 / -; T = 512 (10)
// 2127 vs 2107 / 2682 / 3469; T = 1024 (20) 3683 vs 2250 / 2849 / 3638; T = 2048 (40) 5750 vs
// 3960 / 3245 / 4008; T = 4096 (80) 9416 vs 6365 / 6141 / 4712 (the mma figures at 2048 and 4096
// and wide-128 below 4096 from an earlier run).
inline constexpr int kWideEntries = 128;
inline constexpr int kWideRows = 128;
inline constexpr std::int64_t kWideMinEntries = 12;
// T·k over the experts that can be active (min(E, T·k)): the entries an active expert gets on
// average, which the wide kernel's threshold and block width and the mma kernel's entry tiles go by.
// 0 for T = 0.
std::int64_t expected_entries_per_expert(const MoeProblem& problem);
// Whether the routed experts of `problem` run on the wide kernel on an SM `sm` GPU, given the asked
// kernel (automatic: from kWideMinEntries; wide: wherever it can run; any other: never).
bool wide_experts_take(const MoeProblem& problem, int sm, ExpertKernel asked);
// The token block's entries for `entries_per_expert` expected entries per active expert: the
// smallest of 32, 64 and 128 that holds them (`knob`: FP4GEMM_MOE_WIDE_ENTRIES, 32, 64 or 128;
// anything else throws a sentence naming it).
int wide_block_entries(std::int64_t entries_per_expert, const std::optional<std::string>& knob = std::nullopt);
// The most token blocks of `block_entries` that `entries` entries over at most `experts` groups
// fill (every group's last block may be partial): the wide launches' fixed grid.y.
std::int64_t wide_token_blocks(std::int64_t entries, std::int64_t experts, int block_entries = kWideEntries);
// The wide kernel's row blocks of one expert: gate_up 64 outputs, down 128 rows.
constexpr std::int64_t wide_row_blocks(std::int64_t out_rows, bool gate_up) {
  const std::int64_t rows = gate_up ? kWideRows / 2 : kWideRows;
  return (out_rows + rows - 1) / rows;
}

// The shared expert's launch: one group of all T entries, split over grid.y into `slots` slices
// of `slice` entries (a multiple of kTokensPerChunk), so T tokens run on T/8 blocks per row tile
// and not in one block's loop.
struct SingleGroupSplit {
  std::int64_t slots = 0, slice = 0;
};
SingleGroupSplit single_group_split(std::int64_t entries);

// The per-call scratch space, one stream-ordered allocation carved into 256-byte aligned arrays.
// Offsets in bytes; an array a call does not need has size 0 (its offset is still valid).
struct WorkspaceLayout {
  std::size_t logits = 0;                      // [T, E] float (when the router routes)
  std::size_t topk_ids = 0, topk_weights = 0;  // [T·k] int32 / float (when the router routes)
  std::size_t counts = 0, offsets = 0, cursor = 0, active = 0, active_count = 0;  // [E], [E+1], [E], [E], [1] int32
  std::size_t entry_token = 0, entry_of = 0;  // [T·k] int32: token of a permuted entry; entry of (token, slot)
  std::size_t intermediate = 0;               // h [T·k, I] float
  std::size_t expert_out = 0;                 // y [T·k, H] float
  std::size_t shared_intermediate = 0, shared_out = 0, shared_weight = 0;  // [T, I_s], [T, H], [T] float
  // The wide kernel's: its token blocks (int4 expert, first, end entry; then their count) and the
  // packed entries of every block, chunks of max(H, I) (x for gate_up, then h for down).
  std::size_t wide_blocks = 0, wide_packed = 0;
  std::size_t router_gemm = 0;  // router_gemm_scratch_doubles when the router runs as a GEMM
  std::size_t total = 0;
};
// `wide_entries`: the wide kernel's token block (wide_block_entries), 0 when it does not run.
WorkspaceLayout workspace_layout(const MoeProblem& problem, int wide_entries = 0, bool router_gemm = false);

}  // namespace fp4gemm::moe::cuda_moe
