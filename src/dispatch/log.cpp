#include "dispatch/log.hpp"

#include <cstdio>

namespace fp4gemm::dispatch {

LogSink stderr_sink() {
  return [](LogLevel level, const std::string& message) {
    std::fprintf(stderr, "fp4gemm: %s: %s\n", level == LogLevel::warning ? "warning" : "info", message.c_str());
  };
}

bool OnceLog::report(const std::string& key, LogLevel level, const std::string& message, const LogSink& sink) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reported_.insert(key).second) return false;
  }
  // Outside the lock: a sink may be slow or log from another thread.
  if (sink) sink(level, message);
  return true;
}

bool OnceLog::seen(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reported_.count(key) != 0;
}

OnceLog& process_once_log() {
  static OnceLog log;
  return log;
}

}  // namespace fp4gemm::dispatch
