#pragma once
// What the runner would do for one problem, and why: the device, every candidate with ok or the
// reason it was passed over, the tuned-profile hit or miss, the choice, and the roofline.
#include <string>
#include <vector>

#include "fp4gemm/dispatch/roofline.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::dispatch {

struct CandidateReport {
  std::string backend;
  std::string checked_on;  // the device description its checks ran against
  std::string origin;      // "requested", "profile" or "auto order"
  bool ok = false;         // it would be tried (checks pass, not quarantined, not failed)
  std::string reason;      // why not, when !ok
};

struct ProfileReport {
  bool loaded = false;     // a profile path was given and the file parsed
  bool valid = false;      // its metadata matches this device
  bool hit = false;        // an entry matched this problem and its backend passed its checks
  std::string backend;     // the entry's backend, when one matched
  std::string detail;      // a sentence: which file, why invalid, which entry, or why a miss
};

// What the choice keeps in memory for this weight, and what auto's choices across M keep together.
struct ServedRange {
  std::string backend;
  std::int64_t m_first = 0, m_last = 0;  // the sampled M it serves (powers of two, and the problem's M)
  std::int64_t resident_bytes = 0;       // its layout of this weight
};
struct MemoryReport {
  bool available = false;        // a backend was chosen
  std::string backend;           // the choice
  std::int64_t resident_bytes = 0;  // its layout of this weight (Backend::residency)
  std::string memory;            // "GPU" or "host"
  std::string layout;            // the phrase the backend gives
  bool dense_copy = false;
  std::int64_t workspace_bytes = 0;  // per call, for this problem (an upper bound)
  std::int64_t nvfp4_bytes = 0;  // N x K at 0.5625 B/element
  std::int64_t bf16_bytes = 0;   // N x K at 2 B/element, for comparison
  // Filled by Runner::explain under auto: the backends auto picks for this weight at M = 1, 2, 4, ...
  // 65536 (and the problem's M), each layout made once per weight, and their sum: what serving the
  // weight at every M holds besides the caller's checkpoint copy.
  std::vector<ServedRange> served;
  std::int64_t served_bytes = 0;
};

struct Explanation {
  GemmProblem problem;
  std::string device;             // the primary device (GPU, or the CPU without one)
  std::string host_device;        // the CPU, where host backends run (staged when data is on the GPU)
  std::string family;             // "SM 9.0", ...
  std::string setting;            // the requested backend, or "auto"
  std::string setting_origin;     // where that request came from
  ProfileReport profile;
  std::vector<CandidateReport> candidates;  // in the order they would be tried
  std::string order_evidence;     // the measurement behind the family's auto order for this problem
                                  // (empty when the backend was requested or the order was given)
  std::string choice;             // empty when nothing can serve
  std::string choice_reason;      // why this one, or why none
  std::string kernel;             // the choice's kernel and launch shape (Backend::kernel_plan; may be empty)
  RooflineEstimate roofline;      // for the choice on the primary device
  MemoryReport memory;            // what the choice keeps (and, under auto, what every M's choice keeps)

  std::string to_text() const;    // the human-readable report `fp4gemm explain` prints
};

}  // namespace fp4gemm::dispatch
