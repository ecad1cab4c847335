// Unit tests for the safetensors reader and writer.
#include "frontend/diag.h"
#include "frontend/safetensors.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace fxc;
namespace fs = std::filesystem;

namespace {

fs::path temp_file(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("fxc_st_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A file with the given header text (length-prefixed) followed by `data`.
std::string raw_file(const std::string& name, const std::string& header, const std::string& data) {
  std::string bytes;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes += char((n >> (8 * i)) & 0xff);
  bytes += header + data;
  fs::path p = temp_file(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string error_of(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TensorMeta meta(DType t, std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = t;
  m.sizes = sizes;
  m.strides = contiguous_strides(sizes);
  return m;
}

} // namespace

TEST_CASE("safetensors: write then read gives the same tensors, sorted and aligned") {
  std::vector<float> a = {1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
  std::vector<int64_t> b = {1, -2, 1LL << 40, 4};
  uint16_t c = 0x3f80; // bf16 1.0
  std::string path = temp_file("rt.safetensors").string();
  // Given out of order: the file is sorted by name.
  write_safetensors(
      path, {{"zeta", meta(DType::F32, {2, 3}), reinterpret_cast<const std::byte*>(a.data())},
             {"alpha", meta(DType::I64, {4}), reinterpret_cast<const std::byte*>(b.data())},
             {"mid", meta(DType::BF16, {}), reinterpret_cast<const std::byte*>(&c)},
             {"empty", meta(DType::Bool, {0, 3}), nullptr}});
  std::string bytes = slurp(path);
  uint64_t hlen = 0;
  std::memcpy(&hlen, bytes.data(), 8);
  CHECK((8 + hlen) % 8 == 0);
  std::string header = bytes.substr(8, hlen);
  CHECK(header.find("\"alpha\"") < header.find("\"mid\""));
  CHECK(header.find("\"mid\"") < header.find("\"zeta\""));
  CHECK(header.find("\"data_offsets\":[0,32]") != std::string::npos); // alpha first

  auto t = read_safetensors(path);
  REQUIRE(t.size() == 4);
  CHECK(format_meta(t.at("zeta").meta) == "f32[2, 3]");
  CHECK(format_meta(t.at("alpha").meta) == "i64[4]");
  CHECK(format_meta(t.at("mid").meta) == "bf16[]");
  CHECK(format_meta(t.at("empty").meta) == "b8[0, 3]");
  CHECK(t.at("zeta").meta.strides == std::vector<int64_t>{3, 1});
  CHECK_FALSE(t.at("zeta").storage->loaded());
  CHECK(std::memcmp(t.at("zeta").storage->data(), a.data(), 24) == 0);
  CHECK(std::memcmp(t.at("alpha").storage->data(), b.data(), 32) == 0);
  CHECK(std::memcmp(t.at("mid").storage->data(), &c, 2) == 0);
  CHECK(t.at("empty").storage->nbytes() == 0);

  // Deterministic: the same entries in another order give the same bytes.
  std::string path2 = temp_file("rt2.safetensors").string();
  write_safetensors(
      path2, {{"empty", meta(DType::Bool, {0, 3}), nullptr},
              {"mid", meta(DType::BF16, {}), reinterpret_cast<const std::byte*>(&c)},
              {"alpha", meta(DType::I64, {4}), reinterpret_cast<const std::byte*>(b.data())},
              {"zeta", meta(DType::F32, {2, 3}), reinterpret_cast<const std::byte*>(a.data())}});
  CHECK(slurp(path2) == bytes);
}

TEST_CASE("safetensors: reads the fixtures' inputs and skips __metadata__") {
  auto t = read_safetensors(std::string(FXC_FIXTURES_DIR) + "/mlp.io.safetensors");
  REQUIRE(t.count("input_0"));
  REQUIRE(t.count("output_0"));
  CHECK(format_meta(t.at("input_0").meta) == "f32[64, 256]");
  const float* x = reinterpret_cast<const float*>(t.at("input_0").storage->data());
  CHECK(std::isfinite(x[0]));
  CHECK(x[0] != x[1]);
  std::string p = raw_file(
      "meta.safetensors",
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      "xy");
  auto m = read_safetensors(p);
  REQUIRE(m.size() == 1);
  CHECK(reinterpret_cast<const char*>(m.at("a").storage->data())[1] == 'y');
}

TEST_CASE("safetensors: malformed files are diagnosed") {
  auto check = [](const std::string& name, const std::string& header, const std::string& data,
                  const std::string& want) {
    std::string p = raw_file(name, header, data);
    CAPTURE(name);
    CHECK(error_of(p) == p + ": error: " + want);
  };
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":)";
  check("json.safetensors", "{not json", "", "malformed safetensors header: not valid JSON");
  check("array.safetensors", "[1,2]", "", "malformed safetensors header: not a JSON object");
  check("dtype.safetensors", R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})",
        std::string(8, '\0'), "tensor 'a': unknown dtype 'C64'");
  check("count.safetensors", "{" + a + "[0,4]}}", std::string(4, '\0'),
        "tensor 'a': f32[2] needs 8 bytes but data_offsets span 4");
  check("outside.safetensors", "{" + a + "[8,16]}}", std::string(8, '\0'),
        "tensor 'a': data_offsets [8, 16] lie outside the 8-byte data section");
  check("reversed.safetensors", "{" + a + "[8,0]}}", std::string(8, '\0'),
        "tensor 'a': data_offsets are reversed");
  check("negative.safetensors", "{" + a + "[-8,0]}}", "",
        "tensor 'a': data_offsets must be non-negative integers");
  check("shape.safetensors", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "",
        "tensor 'a': shape entries must be non-negative integers");
  check("overflow.safetensors",
        R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "",
        "tensor 'a': size of shape f32[4294967296, 4294967296] overflows");
  check("overlap.safetensors",
        "{" + a + R"([0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
        std::string(12, '\0'), "tensor 'b': data_offsets overlap the previous tensor");
  check("gap.safetensors", "{" + a + "[4,12]}}", std::string(12, '\0'),
        "tensor 'a': data_offsets leave a gap after the previous tensor");
  check("tail.safetensors", "{" + a + "[0,8]}}", std::string(12, '\0'),
        "data section has 4 bytes no tensor uses");
  check("missing.safetensors", R"({"a":{"dtype":"F32","shape":[2]}})", "",
        "tensor 'a': missing 'data_offsets' [begin, end]");

  // Header length beyond the file, and files shorter than the length field.
  fs::path p = temp_file("len.safetensors");
  std::ofstream(p, std::ios::binary) << std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10);
  CHECK(error_of(p.string()) ==
        p.string() + ": error: safetensors header length 255 exceeds the file size 10");
  std::ofstream(p, std::ios::binary) << "abc";
  CHECK(error_of(p.string()) ==
        p.string() + ": error: not a safetensors file: shorter than its 8-byte header length");
}

TEST_CASE("safetensors: the writer refuses duplicate and reserved names") {
  float x = 1;
  std::string p = temp_file("dup.safetensors").string();
  auto err = [&](std::vector<SafetensorsEntry> e) {
    try {
      write_safetensors(p, e);
    } catch (const Error& ex) {
      return std::string(ex.what());
    }
    return std::string("(no error)");
  };
  const auto* d = reinterpret_cast<const std::byte*>(&x);
  CHECK(err({{"a", meta(DType::F32, {1}), d}, {"a", meta(DType::F32, {1}), d}}) ==
        p + ": error: tensor 'a' written twice");
  CHECK(err({{"__metadata__", meta(DType::F32, {1}), d}}) ==
        p + ": error: tensor name '__metadata__' is reserved");
  fs::remove_all(temp_file("").parent_path());
}
