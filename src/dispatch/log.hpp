#pragma once
// Where the runner's warnings go, and the "say it once" memory that keeps a failing backend from
// flooding a serving log with one line per call.
#include <mutex>
#include <set>
#include <string>

#include "fp4gemm/dispatch/log_sink.hpp"

namespace fp4gemm::dispatch {

// Writes "fp4gemm: warning: <message>" to stderr.
LogSink stderr_sink();

// Remembers which keys were already reported; thread-safe.
class OnceLog {
 public:
  // Sends `message` to `sink` unless `key` was reported before; returns whether it was sent.
  bool report(const std::string& key, LogLevel level, const std::string& message, const LogSink& sink);
  bool seen(const std::string& key) const;

 private:
  mutable std::mutex mutex_;
  std::set<std::string> reported_;
};

// One process-wide OnceLog, for warnings about the process's configuration (environment
// variables) that do not change from one Runner to the next.
OnceLog& process_once_log();

}  // namespace fp4gemm::dispatch
