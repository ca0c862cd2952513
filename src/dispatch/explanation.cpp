// The human-readable form of an Explanation (`fp4gemm explain` without --json).
#include "fp4gemm/dispatch/explanation.hpp"

#include <cstdio>
#include <sstream>

namespace fp4gemm::dispatch {
namespace {

std::string with_unit(double value, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int index = 0;
  while (value >= 1000.0 && index < 5) {
    value /= 1000.0;
    ++index;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3g %s%s", value, prefixes[index], unit);
  return text;
}

// "memory:" lines: what the choice keeps, its workspace, and under auto what every M's choice keeps.
void write_memory(std::ostringstream& text, const MemoryReport& memory) {
  if (!memory.available) return;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", memory.bf16_bytes > 0 ? double(memory.resident_bytes) / double(memory.bf16_bytes) : 0.0);
  text << "memory:   " << memory.backend << " keeps " << with_unit(double(memory.resident_bytes), "B") << " of " << memory.memory
       << " memory for this weight, " << ratio << "x its BF16 size (" << with_unit(double(memory.bf16_bytes), "B")
       << "; NVFP4 itself " << with_unit(double(memory.nvfp4_bytes), "B") << ")";
  if (memory.dense_copy) text << ", a dense copy: it serves only when named";
  text << "; per call a workspace of up to " << with_unit(double(memory.workspace_bytes), "B") << "\n";
  text << "          layout: " << memory.layout << "\n";
  if (memory.served.empty()) return;
  text << "          under auto at M = 1, 2, 4 ... 65536 this weight holds " << with_unit(double(memory.served_bytes), "B") << ":";
  const char* separator = " ";
  for (const ServedRange& range : memory.served) {
    text << separator << range.backend << " (M = " << range.m_first;
    if (range.m_last != range.m_first) text << "-" << range.m_last;
    text << ", " << with_unit(double(range.resident_bytes), "B") << ")";
    separator = ", ";
  }
  text << "; each layout made once, when it first serves\n";
}

}  // namespace

std::string Explanation::to_text() const {
  std::ostringstream text;
  text << "problem:  " << problem.to_string() << "\n";
  text << "device:   " << device << " (" << family << ")\n";
  if (host_device != device) text << "host:     " << host_device << " (host backends; GPU data is staged through it)\n";
  text << "setting:  " << setting << " (from " << setting_origin << ")\n";
  text << "profile:  " << (profile.hit ? "hit: " : profile.loaded ? "miss: " : "") << profile.detail << "\n";
  text << "candidates, in the order they would be tried:\n";
  for (const auto& candidate : candidates) {
    text << "  " << (candidate.ok ? "ok     " : "skip   ") << candidate.backend;
    text << " [" << candidate.origin << "]";
    if (!candidate.ok) text << ": " << candidate.reason;
    text << "\n";
  }
  if (!order_evidence.empty()) text << "order:    " << order_evidence << "\n";
  text << "choice:   " << (choice.empty() ? "none" : choice) << " — " << choice_reason << "\n";
  if (!kernel.empty()) text << "kernel:   " << kernel << "\n";
  write_memory(text, memory);
  if (roofline.available) {
    char seconds[64];
    std::snprintf(seconds, sizeof seconds, "%.2f us", roofline.seconds * 1e6);
    text << "roofline: " << seconds << ", " << roofline.bound << "-bound (" << with_unit(roofline.bytes, "B") << " at "
         << with_unit(roofline.ceilings.bandwidth_bytes_per_s, "B/s") << "; " << with_unit(roofline.flops, "FLOP")
         << " at " << roofline.math << " " << with_unit(roofline.math == "fp4" ? roofline.ceilings.fp4_flops_per_s
                                                                               : roofline.ceilings.bf16_flops_per_s,
                                                        "FLOP/s")
         << ")\n          ceilings: " << roofline.ceilings.label << "\n";
  } else {
    text << "roofline: not available (" << roofline.ceilings.label << "); minimal bytes " << with_unit(roofline.bytes, "B")
         << ", " << with_unit(roofline.flops, "FLOP") << "\n";
  }
  return text.str();
}

}  // namespace fp4gemm::dispatch
