// The safetensors reader and writer: round trips of every dtype, and every class of bad file
// giving Error(io) that names the file and the tensor.
#include <gtest/gtest.h>

#include <cstring>

#include "fp4gemm/io/safetensors.hpp"
#include "io/io_test_support.hpp"

namespace fp4gemm::io {
namespace {

using testing::fails_with_io_error;
using testing::raw_safetensors;
using testing::ScratchDirectory;
using testing::write_bytes;

std::vector<std::uint8_t> pattern(std::size_t count, int seed) {
  std::vector<std::uint8_t> bytes(count);
  for (std::size_t i = 0; i < count; ++i) bytes[i] = std::uint8_t(i * 31 + seed);
  return bytes;
}

TEST(Safetensors, EveryDTypeRoundTripsThroughWriterAndMappedReader) {
  ScratchDirectory scratch;
  const std::vector<TensorDType> dtypes = {TensorDType::boolean, TensorDType::u8,  TensorDType::i8,      TensorDType::u16,
                                           TensorDType::i16,     TensorDType::u32, TensorDType::i32,     TensorDType::u64,
                                           TensorDType::i64,     TensorDType::f8_e4m3, TensorDType::f8_e5m2, TensorDType::f16,
                                           TensorDType::bf16,    TensorDType::f32, TensorDType::f64};
  SafetensorsWriter writer;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    const std::vector<std::int64_t> shape{2, std::int64_t(i + 1)};
    writer.add(std::string("t.") + to_string(dtypes[i]), dtypes[i], shape, pattern(2 * (i + 1) * element_size(dtypes[i]), int(i)));
  }
  writer.add("scalar", TensorDType::f32, {}, pattern(4, 99));
  writer.add("empty", TensorDType::bf16, {0, 7}, {});
  writer.set_metadata("format", "pt");
  const auto path = scratch / "all.safetensors";
  writer.write(path.string());

  const SafetensorsFile file = SafetensorsFile::open(path.string());
  EXPECT_EQ(file.tensors().size(), dtypes.size() + 2);
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  EXPECT_EQ(file.header().data_offset % 8, 0u) << "the writer pads the header to 8 bytes";
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    const TensorView view = file.get(std::string("t.") + to_string(dtypes[i]));
    EXPECT_EQ(view.dtype(), dtypes[i]);
    EXPECT_EQ(view.shape(), (std::vector<std::int64_t>{2, std::int64_t(i + 1)}));
    const auto expected = pattern(2 * (i + 1) * element_size(dtypes[i]), int(i));
    ASSERT_EQ(view.bytes().size(), expected.size());
    EXPECT_EQ(std::memcmp(view.data, expected.data(), expected.size()), 0) << to_string(dtypes[i]);
  }
  EXPECT_TRUE(file.get("scalar").shape().empty());
  EXPECT_EQ(file.get("scalar").entry->elements(), 1);
  EXPECT_EQ(file.get("empty").bytes().size(), 0u);
  EXPECT_FALSE(file.find("missing").has_value());
  EXPECT_TRUE(fails_with_io_error([&] { file.get("missing"); }, {path.string(), "missing"}));
}

TEST(Safetensors, SerializeMatchesTheWrittenFile) {
  ScratchDirectory scratch;
  SafetensorsWriter writer;
  writer.add("a", TensorDType::u8, {3}, pattern(3, 1));
  const auto path = scratch / "a.safetensors";
  writer.write(path.string());
  const SafetensorsFile file = SafetensorsFile::open(path.string());
  EXPECT_EQ(file.file_size(), writer.serialize().size());
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  SafetensorsWriter writer;
  EXPECT_THROW(writer.add("a", TensorDType::f32, {2, 2}, pattern(15, 0)), Error);
  writer.add("a", TensorDType::f32, {2}, pattern(8, 0));
  EXPECT_THROW(writer.add("a", TensorDType::f32, {2}, pattern(8, 0)), Error);
  EXPECT_THROW(writer.add("__metadata__", TensorDType::u8, {1}, pattern(1, 0)), Error);
  EXPECT_THROW(writer.add("neg", TensorDType::u8, {-1}, {}), Error);
}

TEST(Safetensors, AcceptsGapsAndUnpaddedHeaders) {
  ScratchDirectory scratch;
  const auto path = scratch / "gap.safetensors";
  // 3-byte header padding absent, 4 unused bytes between tensors: unusual but not unsafe.
  write_bytes(path, raw_safetensors(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                    R"("b":{"dtype":"I16","shape":[1],"data_offsets":[6,8]}})", 8));
  const SafetensorsFile file = SafetensorsFile::open(path.string());
  EXPECT_EQ(file.get("b").bytes().size(), 2u);
  EXPECT_EQ(file.get("b").data, file.get("a").data + 6);
}

struct BadFile {
  const char* label;
  std::vector<std::uint8_t> bytes;
  std::vector<std::string> needles;  // besides the file path
};

std::vector<BadFile> bad_files() {
  const std::string one_tensor = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::vector<std::uint8_t> truncated = raw_safetensors(one_tensor, 8);
  truncated.resize(truncated.size() - 3);
  const std::vector<std::uint8_t> deep_json =
      raw_safetensors("{\"w\":" + std::string(100000, '[') + std::string(100000, ']') + "}", 0);
  return {
      {"empty file", {}, {"too short"}},
      {"seven bytes", {1, 2, 3, 4, 5, 6, 7}, {"too short"}},
      {"truncated data", truncated, {"'w'", "past the end of the data section"}},
      {"header length past the end", raw_safetensors(one_tensor, 8, 1000), {"past the end of the file"}},
      {"header length above the bound", raw_safetensors(one_tensor, 8, kMaxHeaderBytes + 1), {"above the limit"}},
      {"header length 2^64-1", raw_safetensors(one_tensor, 8, UINT64_MAX - 1), {"above the limit"}},
      {"not JSON", raw_safetensors("{\"w\": nope}", 0), {"not valid JSON"}},
      {"not an object", raw_safetensors("[1, 2]", 0), {"does not start with '{'"}},
      {"hostile nesting", deep_json, {"nests deeper"}},
      {"unknown dtype", raw_safetensors(R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1), {"'w'", "unknown dtype 'F4'"}},
      {"length != shape x dtype", raw_safetensors(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       {"'w'", "holds 8 bytes", "needs 12"}},
      {"overlapping tensors",
       raw_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       {"'b'", "overlaps tensor 'a'"}},
      {"offset out of range", raw_safetensors(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})", 10), {"'w'", "past the end"}},
      {"end before begin", raw_safetensors(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 4), {"'w'", "end comes before"}},
      {"negative offset", raw_safetensors(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 4), {"'w'", "not a non-negative integer"}},
      {"negative dimension", raw_safetensors(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 4), {"'w'", "shape dimension"}},
      {"fractional dimension", raw_safetensors(R"({"w":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 4), {"'w'"}},
      {"shape overflow", raw_safetensors(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0),
       {"'w'", "overflows"}},
      {"missing offsets", raw_safetensors(R"({"w":{"dtype":"U8","shape":[1]}})", 1), {"'w'", "data_offsets"}},
      {"three offsets", raw_safetensors(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 2), {"'w'", "data_offsets"}},
      {"missing dtype", raw_safetensors(R"({"w":{"shape":[1],"data_offsets":[0,1]}})", 1), {"'w'", "dtype"}},
      {"entry not an object", raw_safetensors(R"({"w":3})", 1), {"'w'"}},
      {"metadata not strings", raw_safetensors(R"({"__metadata__":{"a":1}})", 0), {"metadata entry 'a'"}},
  };
}

TEST(Safetensors, EveryBadFileIsAnIoErrorNamingFileAndTensor) {
  ScratchDirectory scratch;
  int index = 0;
  for (const BadFile& bad : bad_files()) {
    const auto path = scratch / ("bad" + std::to_string(index++) + ".safetensors");
    write_bytes(path, bad.bytes);
    std::vector<std::string> needles = bad.needles;
    needles.push_back(path.string());
    EXPECT_TRUE(fails_with_io_error([&] { SafetensorsFile::open(path.string()); }, needles)) << bad.label;
    // The in-memory parser (the fuzz target) agrees with the mapped reader.
    EXPECT_TRUE(fails_with_io_error([&] { parse_safetensors_header(bad.bytes.data(), bad.bytes.size(), "mem"); }, {"mem"}))
        << bad.label;
  }
}

TEST(Safetensors, MissingFileAndDirectoryAreIoErrors) {
  ScratchDirectory scratch;
  EXPECT_TRUE(fails_with_io_error([&] { SafetensorsFile::open((scratch / "nope.safetensors").string()); }, {"nope.safetensors"}));
  EXPECT_TRUE(fails_with_io_error([&] { SafetensorsFile::open(scratch.path().string()); }, {"not a regular file"}));
}

TEST(Safetensors, WriteToAMissingDirectoryIsAnIoErrorAndLeavesNothing) {
  ScratchDirectory scratch;
  SafetensorsWriter writer;
  writer.add("a", TensorDType::u8, {1}, pattern(1, 0));
  const auto path = scratch / "missing" / "out.safetensors";
  EXPECT_TRUE(fails_with_io_error([&] { writer.write(path.string()); }, {"cannot create"}));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Safetensors, DTypeNamesRoundTrip) {
  for (const char* name : {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F8_E4M3", "F8_E5M2", "F16", "BF16", "F32", "F64"}) {
    const auto dtype = parse_tensor_dtype(name);
    ASSERT_TRUE(dtype.has_value()) << name;
    EXPECT_STREQ(to_string(*dtype), name);
  }
  EXPECT_FALSE(parse_tensor_dtype("f32").has_value()) << "names are case-sensitive, as in the format";
  EXPECT_FALSE(parse_tensor_dtype("F4").has_value());
}

}  // namespace
}  // namespace fp4gemm::io
