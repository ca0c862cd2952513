// The JSON documents of `fp4gemm info` and `fp4gemm explain` (see reports.hpp).
#include "reports.hpp"

#include "fp4gemm/fp4gemm.hpp"

namespace fp4gemm::cli {

nlohmann::json info_report() {
  std::vector<DeviceInfo> devices{probe_cpu()};
  const auto gpus = probe_cuda_devices();
  devices.insert(devices.end(), gpus.begin(), gpus.end());
  const auto backends = make_all_backends();
  nlohmann::json report;
  for (const auto& device : devices) {
    nlohmann::json entry{{"device", device.to_string()}, {"backends", nlohmann::json::array()}};
    for (const auto& backend : backends) {
      const CheckResult check = backend->check_device(device);
      entry["backends"].push_back({{"name", backend->name()}, {"ok", check.ok}, {"reason", check.reason}});
    }
    report["devices"].push_back(entry);
  }
  if (gpus.empty()) report["cuda"] = cuda_unavailable_reason();
  for (const auto& backend : backends) report["compiled_backends"].push_back({{"name", backend->name()}, {"summary", backend->summary()}});
  return report;
}

nlohmann::json explanation_report(const dispatch::Explanation& explanation) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& candidate : explanation.candidates) {
    candidates.push_back({{"backend", candidate.backend},
                          {"origin", candidate.origin},
                          {"checked_on", candidate.checked_on},
                          {"ok", candidate.ok},
                          {"reason", candidate.reason}});
  }
  const auto& roofline = explanation.roofline;
  const auto& memory = explanation.memory;
  nlohmann::json served = nlohmann::json::array();
  for (const auto& range : memory.served) {
    served.push_back({{"backend", range.backend}, {"m_first", range.m_first}, {"m_last", range.m_last},
                      {"resident_bytes", range.resident_bytes}});
  }
  return {{"problem", {{"m", explanation.problem.m}, {"n", explanation.problem.n}, {"k", explanation.problem.k},
                       {"activation", to_string(explanation.problem.activation)},
                       {"output", to_string(explanation.problem.output)}}},
          {"device", explanation.device},
          {"host_device", explanation.host_device},
          {"family", explanation.family},
          {"setting", explanation.setting},
          {"setting_origin", explanation.setting_origin},
          {"profile", {{"loaded", explanation.profile.loaded}, {"valid", explanation.profile.valid},
                       {"hit", explanation.profile.hit}, {"backend", explanation.profile.backend},
                       {"detail", explanation.profile.detail}}},
          {"candidates", candidates},
          {"order_evidence", explanation.order_evidence},
          {"choice", explanation.choice},
          {"choice_reason", explanation.choice_reason},
          {"kernel", explanation.kernel},
          {"memory", {{"available", memory.available}, {"backend", memory.backend},
                      {"resident_bytes", memory.resident_bytes}, {"memory", memory.memory}, {"layout", memory.layout},
                      {"dense_copy", memory.dense_copy}, {"workspace_bytes", memory.workspace_bytes},
                      {"nvfp4_bytes", memory.nvfp4_bytes}, {"bf16_bytes", memory.bf16_bytes}, {"served", served},
                      {"served_bytes", memory.served_bytes}}},
          {"roofline", {{"available", roofline.available}, {"ceilings", roofline.ceilings.label},
                        {"ceilings_measured", roofline.ceilings.measured}, {"bytes", roofline.bytes},
                        {"flops", roofline.flops}, {"math", roofline.math}, {"bound", roofline.bound},
                        {"seconds", roofline.seconds}, {"memory_seconds", roofline.memory_seconds},
                        {"compute_seconds", roofline.compute_seconds}}}};
}

nlohmann::json moe_explanation_report(const moe::MoeExplanation& explanation) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const dispatch::CandidateReport& candidate : explanation.candidates) {
    candidates.push_back({{"backend", candidate.backend}, {"origin", candidate.origin}, {"ok", candidate.ok}, {"reason", candidate.reason}});
  }
  return {{"problem", explanation.problem.to_string()},
          {"device", explanation.device},
          {"setting", explanation.setting},
          {"setting_origin", explanation.setting_origin},
          {"profile", explanation.profile.detail},
          {"candidates", candidates},
          {"order", explanation.order_evidence},
          {"choice", explanation.choice},
          {"choice_reason", explanation.choice_reason},
          {"plan", explanation.plan}};
}

}  // namespace fp4gemm::cli
