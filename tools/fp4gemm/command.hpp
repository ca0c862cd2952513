#pragma once
// Each CLI subcommand lives in its own file and registers itself here, so adding a command
// touches no other file.
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace fp4gemm::cli {

// Adds a subcommand to `app`; the callback it installs runs the command and may throw.
using CommandRegistration = std::function<void(CLI::App& app)>;

std::vector<CommandRegistration>& command_registrations();

struct RegisterCommand {
  explicit RegisterCommand(CommandRegistration registration) {
    command_registrations().push_back(std::move(registration));
  }
};

}  // namespace fp4gemm::cli
