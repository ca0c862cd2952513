#pragma once
// The environment knobs that override cuda_nvfp4's tuned choices for measurements
// (FP4GEMM_DECODE_SHAPE, FP4GEMM_PREFILL_SPLITS, FP4GEMM_RESIDENT_SPLITS, ...): reading one, and
// parsing it as a bounded integer with an error that names the knob.
namespace fp4gemm::cuda_nvfp4 {

// A tuning knob's value, or nullptr when the variable is unset or empty.
const char* tuning_knob(const char* name);

// A knob's value `text` as a whole decimal integer in [low, high]; throws naming the knob and
// `what` it must be otherwise.
int integer_knob(const char* name, const char* text, long low, long high, const char* what);

}  // namespace fp4gemm::cuda_nvfp4
