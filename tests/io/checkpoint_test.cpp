// Checkpoints: single files, shards through model.safetensors.index.json, and broken indexes.
#include <gtest/gtest.h>

#include "fp4gemm/io/checkpoint.hpp"
#include "io/io_test_support.hpp"

namespace fp4gemm::io {
namespace {

using testing::fails_with_io_error;
using testing::ScratchDirectory;
using testing::write_text;

void write_shard(const std::filesystem::path& path, const std::vector<std::string>& names) {
  SafetensorsWriter writer;
  std::uint8_t value = 1;
  for (const std::string& name : names) {
    const std::vector<std::uint8_t> bytes(4, value++);
    writer.add(name, TensorDType::u8, {4}, bytes);
  }
  writer.write(path.string());
}

const char* kIndex = R"({"metadata": {"total_size": 12},
  "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                 "c": "model-00002-of-00002.safetensors"}})";

TEST(Checkpoint, ShardsThroughTheIndexFromADirectoryOrTheIndexPath) {
  ScratchDirectory scratch;
  write_shard(scratch / "model-00001-of-00002.safetensors", {"a", "b"});
  write_shard(scratch / "model-00002-of-00002.safetensors", {"c"});
  write_text(scratch / "model.safetensors.index.json", kIndex);
  for (const auto& path : {scratch.path(), scratch / "model.safetensors.index.json"}) {
    const Checkpoint checkpoint = Checkpoint::open(path);
    EXPECT_EQ(checkpoint.files().size(), 2u);
    EXPECT_EQ(checkpoint.tensor_names(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(checkpoint.get("c").data[0], 1) << "c is the first tensor of the second shard";
    EXPECT_EQ(checkpoint.get("b").data[0], 2);
    EXPECT_EQ(checkpoint.directory(), scratch.path());
    EXPECT_TRUE(fails_with_io_error([&] { checkpoint.get("d"); }, {"no tensor named 'd'"}));
  }
}

TEST(Checkpoint, DirectoryWithoutIndexUsesItsShards) {
  ScratchDirectory scratch;
  write_shard(scratch / "x.safetensors", {"a"});
  write_shard(scratch / "y.safetensors", {"b"});
  EXPECT_EQ(Checkpoint::open(scratch.path()).tensor_count(), 2u);
  write_shard(scratch / "z.safetensors", {"b"});
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"'b'", "stored in both"}));
}

TEST(Checkpoint, SingleFile) {
  ScratchDirectory scratch;
  write_shard(scratch / "one.safetensors", {"a", "b"});
  const Checkpoint checkpoint = Checkpoint::open(scratch / "one.safetensors");
  EXPECT_EQ(checkpoint.tensor_count(), 2u);
  EXPECT_EQ(checkpoint.directory(), scratch.path());
}

TEST(Checkpoint, BrokenIndexesAreIoErrors) {
  ScratchDirectory scratch;
  write_shard(scratch / "s1.safetensors", {"a"});
  const auto index = scratch / "model.safetensors.index.json";

  write_text(index, R"({"weight_map": {"a": "s1.safetensors", "zz": "s1.safetensors"}})");
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"'zz'", "does not hold it"}));

  write_text(index, R"({"weight_map": {"a": "../s1.safetensors"}})");
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"'a'", "inside the directory"}));

  write_text(index, R"({"weight_map": {"a": "/etc/passwd"}})");
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"inside the directory"}));

  write_text(index, R"({"weight_map": {"a": "missing.safetensors"}})");
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"missing.safetensors"}));

  write_text(index, R"({"weight_map": [1]})");
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"not a safetensors index"}));

  write_text(index, "{not json");
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"not a safetensors index"}));
}

TEST(Checkpoint, MissingPathAndEmptyDirectory) {
  ScratchDirectory scratch;
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch / "nothing"); }, {"does not exist"}));
  EXPECT_TRUE(fails_with_io_error([&] { Checkpoint::open(scratch.path()); }, {"holds no .safetensors file"}));
}

}  // namespace
}  // namespace fp4gemm::io
