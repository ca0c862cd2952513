#include "backends/cuda_nvfp4/tuning_knobs.hpp"

#include <cstdlib>
#include <string>

#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {

const char* tuning_knob(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int integer_knob(const char* name, const char* text, long low, long high, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) {
    throw_invalid(std::string(name) + " must be " + what + " from " + std::to_string(low) + " to " + std::to_string(high) + ", not '" +
                  text + "'");
  }
  return int(value);
}

}  // namespace fp4gemm::cuda_nvfp4
