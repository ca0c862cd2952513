#pragma once
// The JSON documents `fp4gemm info --json` and `fp4gemm explain [--moe] --json` print, built in one
// place so the Python package (fp4gemm.info(), fp4gemm.explain(), fp4gemm.explain_moe()) returns
// exactly what the CLI prints.
#include <nlohmann/json.hpp>

#include "fp4gemm/dispatch/explanation.hpp"
#include "fp4gemm/moe/moe_runner.hpp"

namespace fp4gemm::cli {

// This machine: every device with each compiled-in backend's verdict, the CUDA reason when there is
// no GPU, and each compiled-in backend's summary.
nlohmann::json info_report();

// One explanation: the problem, devices, setting, profile, candidates, choice, kernel, roofline.
nlohmann::json explanation_report(const dispatch::Explanation& explanation);

// One MoE explanation: the problem, device, setting, profile, candidates, order, choice, plan.
nlohmann::json moe_explanation_report(const moe::MoeExplanation& explanation);

}  // namespace fp4gemm::cli
