// fp4gemm: the command line a deployer uses daily.
#include <cstdio>
#include <exception>
#include <new>

#include "command.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cli {
std::vector<CommandRegistration>& command_registrations() {
  static std::vector<CommandRegistration> registrations;
  return registrations;
}
}  // namespace fp4gemm::cli

int main(int argc, char** argv) {
  CLI::App app{"fp4gemm: NVFP4 matrix multiplication that says which path it took and why"};
  app.require_subcommand(1);
  for (const auto& registration : fp4gemm::cli::command_registrations()) registration(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "fp4gemm: %s (see --help)\n", error.what());
    return error.get_exit_code() == 0 ? 2 : error.get_exit_code();
  } catch (const fp4gemm::Error& error) {
    std::fprintf(stderr, "fp4gemm: error: %s\n", error.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fp4gemm: error: out of host memory (the problem or file is too large for this machine)\n");
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fp4gemm: unexpected error: %s\n", error.what());
    return 1;
  }
  return 0;
}
