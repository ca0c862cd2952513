// Replays the fuzz seed corpus through the header parser in the normal build, so the seeds stay
// meaningful: every valid_* seed parses, every bad_* seed is rejected with Error(io).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {
namespace {

// NOTE: __FILE__ is absolute in CMake builds, so the corpus is found without configuration.
const std::filesystem::path kCorpus = std::filesystem::path(__FILE__).parent_path().parent_path() / "fuzz" / "corpus";

TEST(FuzzSeedCorpus, ValidSeedsParseAndBadSeedsAreIoErrors) {
  ASSERT_TRUE(std::filesystem::is_directory(kCorpus)) << kCorpus;
  int valid = 0, bad = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string name = entry.path().filename().string();
    if (name.rfind("valid_", 0) == 0) {
      ++valid;
      EXPECT_NO_THROW(parse_safetensors_header(bytes.data(), bytes.size(), name)) << name;
    } else if (name.rfind("bad_", 0) == 0) {
      ++bad;
      try {
        parse_safetensors_header(bytes.data(), bytes.size(), name);
        ADD_FAILURE() << name << " was accepted";
      } catch (const Error& error) {
        EXPECT_EQ(error.code(), ErrorCode::io) << name;
        EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
      }
    }
  }
  EXPECT_GE(valid, 15);
  EXPECT_GE(bad, 7);
}

}  // namespace
}  // namespace fp4gemm::io
