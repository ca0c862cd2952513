#pragma once
// The shared-memory budget of the activation-resident wgmma kernel (sm90_resident_gemm.cu): the
// kernel lays its shared memory out by it, and the host's shape rule (choose_resident_shape in
// resident_tuning.cpp) sizes the K split by it.
#include <cstdint>

#include "backends/cuda_decode/activation_pack_layout.hpp"
#include "backends/cuda_decode/decode_layout.hpp"
#include "backends/cuda_decode/resident_tuning.hpp"

namespace fp4gemm::cuda_decode {

// Dynamic shared memory of one CTA, in this order: the weight ring (kResidentStages stages of one
// 128-row record each), the receive buffer of the partial-tile reduction ([K groups][splits][128 /
// splits rows][tokens] FP32: every K group of every CTA of the cluster sends its partial sums of
// this CTA's rows here; two spare columns keep each row's pairs 8-byte aligned and spread the
// reads over banks), the scale
// table, the mbarriers, then the CTA's K slice of the packed activations (slice_chunks chunks).
// Every region starts 128-byte aligned.
struct ResidentLayout {
  int tokens;
  static constexpr int kRows = kTileRows * kTilesPerBlock;  // a row block: one weight record per chunk
  static constexpr int kStageBytes = kRecordBytes;
  // Row blocks of N weight rows: what the persistent grid's clusters take in turn.
  static constexpr std::int64_t row_blocks(std::int64_t n) { return (n + kRows - 1) / kRows; }
  constexpr int receive_stride() const { return tokens + 2; }  // floats per received row
  constexpr int receive_offset() const { return kResidentStages * kStageBytes; }
  constexpr int table_offset() const { return receive_offset() + kResidentKGroups * kRows * receive_stride() * 4; }
  constexpr int barrier_offset() const { return table_offset() + 256 * 4; }
  // full and empty per stage, received, sent-free, one per resident activation chunk.
  static constexpr int kBarriers = 2 * kResidentStages + 2 + kMaxResidentSliceChunks;
  constexpr int activation_offset() const { return (barrier_offset() + kBarriers * 8 + 127) / 128 * 128; }
  constexpr int chunk_bytes() const { return int(packed_chunk_bytes(tokens)); }
  constexpr std::int64_t bytes(int slice_chunks) const { return activation_offset() + std::int64_t(slice_chunks) * chunk_bytes(); }
  // The most activation chunks a CTA can hold with `shared_bytes` of shared memory.
  constexpr int slice_capacity(std::int64_t shared_bytes) const {
    const std::int64_t fit = (shared_bytes - activation_offset()) / chunk_bytes();
    return int(fit < 0 ? 0 : fit < kMaxResidentSliceChunks ? fit : kMaxResidentSliceChunks);
  }
};
static_assert(ResidentLayout{64}.receive_offset() % 128 == 0 && ResidentLayout{64}.table_offset() % 128 == 0 &&
                  ResidentLayout{32}.table_offset() % 128 == 0,
              "regions stay 128-byte aligned");

}  // namespace fp4gemm::cuda_decode
