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

  std::string to_text() const;    // the human-readable report `fp4gemm explain` prints
};

}  // namespace fp4gemm::dispatch
