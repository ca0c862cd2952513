#include "backends/cuda_decode/resident_tuning.hpp"

#include <bit>
#include <string>

#include "backends/cuda_decode/decode_layout.hpp"
#include "backends/cuda_decode/resident_layout.hpp"
#include "backends/cuda_decode/tuning_knobs.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_decode {

ResidentShape choose_resident_shape(std::int64_t m, std::int64_t k, std::int64_t shared_bytes) {
  ResidentShape shape{m <= 32 ? 32 : 64, 0};
  const std::int64_t chunks = chunks_covering(k);
  const int capacity = ResidentLayout{shape.tokens}.slice_capacity(shared_bytes);
  const auto fits = [&](int splits) { return (chunks + splits - 1) / splits <= capacity; };
  if (const char* text = tuning_knob("FP4GEMM_RESIDENT_SPLITS")) {
    const int splits = integer_knob("FP4GEMM_RESIDENT_SPLITS", text, 1, kMaxResidentSplits, "a power of two");
    if (!std::has_single_bit(unsigned(splits))) {
      throw_invalid(std::string("FP4GEMM_RESIDENT_SPLITS must be a power of two from 1 to ") + std::to_string(kMaxResidentSplits) +
                    ", not '" + text + "'");
    }
    shape.splits = fits(splits) ? splits : 0;
    return shape;
  }
  for (int splits = 1; splits <= kMaxResidentSplits; splits *= 2) {
    if (fits(splits)) {
      shape.splits = splits;
      break;
    }
  }
  return shape;
}

bool resident_clusters_override(int& clusters) {
  const char* text = tuning_knob("FP4GEMM_RESIDENT_CLUSTERS");
  if (text == nullptr) return false;
  clusters = integer_knob("FP4GEMM_RESIDENT_CLUSTERS", text, 1, 65535, "a cluster count");
  return true;
}

}  // namespace fp4gemm::cuda_decode
