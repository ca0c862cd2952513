#include "backends/cuda_nvfp4/overrides.hpp"

#include <cstdlib>

#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

std::optional<std::string> knob(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace

Overrides Overrides::from_environment() {
  Overrides overrides;
  overrides.decode_kernel = knob("FP4GEMM_DECODE_KERNEL");
  overrides.decode_shape = knob("FP4GEMM_DECODE_SHAPE");
  overrides.wgmma_shape = knob("FP4GEMM_WGMMA_SHAPE");
  overrides.wgmma_stream = knob("FP4GEMM_WGMMA_STREAM");
  overrides.pdl = knob("FP4GEMM_PDL");
  overrides.prefill_splits = knob("FP4GEMM_PREFILL_SPLITS");
  overrides.wide_ctas = knob("FP4GEMM_WIDE_CTAS");
  overrides.wide_tokens = knob("FP4GEMM_WIDE_TOKENS");
  return overrides;
}

int integer_knob(const char* name, const std::string& text, long low, long high, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < low || value > high) {
    throw_invalid(std::string(name) + " must be " + what + " from " + std::to_string(low) + " to " + std::to_string(high) + ", not '" +
                  text + "'");
  }
  return int(value);
}

}  // namespace fp4gemm::cuda_nvfp4
