#pragma once
// The JSON documents `fp4gemm info --json` and `fp4gemm explain --json` print, built in one place
// so the Python package (fp4gemm.info(), fp4gemm.explain()) returns exactly what the CLI prints.
#include <nlohmann/json.hpp>

#include "fp4gemm/dispatch/explanation.hpp"

namespace fp4gemm::cli {

// This machine: every device with each compiled-in backend's verdict, the CUDA reason when there is
// no GPU, and each compiled-in backend's summary.
nlohmann::json info_report();

// One explanation: the problem, devices, setting, profile, candidates, choice, kernel, roofline.
nlohmann::json explanation_report(const dispatch::Explanation& explanation);

}  // namespace fp4gemm::cli
