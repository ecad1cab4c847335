// Unit tests for the compile cache (driver/cache.h) and depfiles (driver/depfile.h).
#include "driver/cache.h"
#include "driver/depfile.h"
#include "frontend/diag.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

using namespace fxc;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the system temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("fxc-cache-test-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), std::streamsize(s.size()));
}

/// Every regular file under `dir`, relative.
std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string some_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = char(rng() % 7); // compressible, not trivially so
  return s;
}

const std::string kKey = "0123456789abcdef0123456789abcdef";

} // namespace

TEST_CASE("cache: keys are 32 hex digits and depend on every field and its boundaries") {
  std::string k = CacheKeyBuilder().add("backend", "inductor").add("device", "cpu").key();
  CHECK(k.size() == 32);
  CHECK(k.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(k == CacheKeyBuilder().add("backend", "inductor").add("device", "cpu").key());
  CHECK(k != CacheKeyBuilder().add("backend", "inductor").add("device", "cuda").key());
  CHECK(k != CacheKeyBuilder().add("device", "cpu").add("backend", "inductor").key());
  CHECK(CacheKeyBuilder().add("ab", "c").key() != CacheKeyBuilder().add("a", "bc").key());
  CHECK(CacheKeyBuilder().add("a", "").add("b", "").key() != CacheKeyBuilder().add("a", "b").key());
  CacheKeyBuilder b;
  b.add("mode", "train");
  CHECK(b.description().find("mode=train\n") != std::string::npos);
}

TEST_CASE("cache: file digests are content digests and name the file they cannot read") {
  TempDir t;
  std::string bytes = some_bytes(3 << 20, 1); // more than one read chunk
  write_all(t.path / "w.bin", bytes);
  CHECK(file_digest((t.path / "w.bin").string()) == content_digest(bytes));
  CHECK(content_digest("a") != content_digest("b"));
  std::string missing = (t.path / "nope.bin").string();
  CHECK_THROWS_WITH_AS(file_digest(missing), doctest::Contains("nope.bin: error: cannot read"),
                       Error);
  write_all(t.path / "x", "1");
  CHECK(CacheKeyBuilder().add_file("graph", (t.path / "x").string()).key() ==
        CacheKeyBuilder().add("graph", content_digest("1")).key());
}

TEST_CASE("cache: a stored payload comes back, with nothing but the entry left behind") {
  TempDir t;
  CompileCache cache((t.path / "c").string());
  CHECK(cache.enabled());
  CHECK_FALSE(cache.lookup(kKey)); // the directory does not exist yet
  for (size_t n : {size_t(0), size_t(1), size_t(100000), size_t(3 << 20)}) {
    std::string payload = some_bytes(n, unsigned(n));
    REQUIRE(cache.store(kKey, payload));
    auto got = cache.lookup(kKey);
    REQUIRE(got);
    CHECK(*got == payload);
  }
  CHECK(files_under(t.path / "c") == std::vector<std::string>{"01/" + kKey + ".entry"});
  CHECK(cache.entry_path(kKey) == (t.path / "c" / "01" / (kKey + ".entry")).string());
}

TEST_CASE("cache: an entry is a 4096-byte header and the payload as is") {
  TempDir t;
  CompileCache cache(t.path.string());
  std::string payload = some_bytes(100000, 3);
  REQUIRE(cache.store(kKey, payload));
  std::string entry = read_all(cache.entry_path(kKey));
  REQUIRE(entry.size() == 4096 + payload.size());
  CHECK(entry.substr(0, 8) == "FXCCACHE");
  CHECK(entry.substr(16, 32) == kKey);
  CHECK(entry.substr(4096) == payload);
}

TEST_CASE("cache: write_hit writes the payload over any file; a miss leaves it alone") {
  TempDir t;
  CompileCache cache((t.path / "c").string());
  const fs::path out = t.path / "out.fxo";
  CHECK_FALSE(cache.write_hit(kKey, out.string())); // no entry: not created
  CHECK_FALSE(fs::exists(out));
  for (size_t n : {size_t(0), size_t(1), size_t(100000), size_t(3 << 20)}) {
    CAPTURE(n);
    std::string payload = some_bytes(n, unsigned(n) + 1);
    REQUIRE(cache.store(kKey, payload));
    fs::remove(out);
    REQUIRE(cache.write_hit(kKey, out.string())); // a new file
    CHECK(read_all(out) == payload);
    write_all(out, std::string(n + 5000, 'x')); // a longer file: cut to the payload
    REQUIRE(cache.write_hit(kKey, out.string()));
    CHECK(read_all(out) == payload);
    write_all(out, std::string(n / 2, 'y')); // a shorter one
    REQUIRE(cache.write_hit(kKey, out.string()));
    CHECK(read_all(out) == payload);
  }
  write_all(out, "before");
  CHECK_FALSE(cache.write_hit("ffffffffffffffffffffffffffffffff", out.string()));
  CHECK(read_all(out) == "before");
  // An output that cannot be written is an error naming it.
  const std::string bad = (t.path / "no-such-dir" / "out.fxo").string();
  CHECK_THROWS_WITH_AS(cache.write_hit(kKey, bad), doctest::Contains("no-such-dir"), Error);
}

TEST_CASE("cache: a corrupt entry is a miss and is removed") {
  TempDir t;
  CompileCache cache(t.path.string());
  std::string payload = some_bytes(200000, 7);
  REQUIRE(cache.store(kKey, payload));
  const fs::path entry = cache.entry_path(kKey);
  const std::string good = read_all(entry);
  REQUIRE(good.size() > 64);

  const fs::path out = t.path / "out.fxo";
  auto corrupt_with = [&](const std::string& bad) {
    write_all(entry, bad);
    CHECK_FALSE(cache.lookup(kKey));
    CHECK_FALSE(fs::exists(entry));
    // write_hit checks the same and leaves its output alone.
    write_all(entry, bad);
    write_all(out, "before");
    CHECK_FALSE(cache.write_hit(kKey, out.string()));
    CHECK_FALSE(fs::exists(entry));
    CHECK(read_all(out) == "before");
    REQUIRE(cache.store(kKey, payload)); // rebuilt
    CHECK(cache.lookup(kKey) == payload);
  };
  SUBCASE("empty") {
    corrupt_with("");
  }
  SUBCASE("header only") {
    corrupt_with(good.substr(0, 64));
  }
  SUBCASE("truncated frame") {
    corrupt_with(good.substr(0, good.size() / 2));
  }
  SUBCASE("trailing bytes") {
    corrupt_with(good + "x");
  }
  SUBCASE("bad magic") {
    std::string bad = good;
    bad[0] = 'G';
    corrupt_with(bad);
  }
  SUBCASE("flipped byte in the frame") {
    std::string bad = good;
    bad[good.size() / 2] ^= 0x5a;
    corrupt_with(bad);
  }
  SUBCASE("wrong checksum") {
    std::string bad = good;
    bad[56] ^= 1;
    corrupt_with(bad);
  }
  SUBCASE("wrong payload size") {
    std::string bad = good;
    bad[48] ^= 1;
    corrupt_with(bad);
  }
  SUBCASE("huge payload size is not trusted") {
    std::string bad = good;
    for (int i = 48; i < 56; ++i) bad[i] = char(0xff);
    corrupt_with(bad);
  }
  SUBCASE("another key's entry") {
    const std::string other = "ffffffffffffffffffffffffffffffff";
    REQUIRE(cache.store(other, "other"));
    corrupt_with(read_all(cache.entry_path(other)));
  }
}

TEST_CASE("cache: a disabled cache misses and stores nothing") {
  CompileCache cache("");
  CHECK_FALSE(cache.enabled());
  CHECK_FALSE(cache.store(kKey, "x"));
  CHECK_FALSE(cache.lookup(kKey));
}

TEST_CASE("cache: an unwritable directory is not an error") {
  TempDir t;
  write_all(t.path / "file", "not a directory");
  CompileCache cache((t.path / "file" / "cache").string());
  CHECK_FALSE(cache.store(kKey, "x"));
  CHECK_FALSE(cache.lookup(kKey));
}

TEST_CASE("cache: the directory is --no-cache, --cache-dir, FXC_CACHE_DIR, XDG, HOME in turn") {
  auto saved = [](const char* n) -> std::optional<std::string> {
    const char* v = std::getenv(n);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto fxc_dir = saved("FXC_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  setenv("FXC_CACHE_DIR", "/env/fxc", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  Options o;
  o.cache_dir = "/flag";
  CHECK(cache_directory(o) == "/flag");
  o.no_cache = true;
  CHECK(cache_directory(o) == "");
  o = Options();
  CHECK(cache_directory(o) == "/env/fxc");
  unsetenv("FXC_CACHE_DIR");
  CHECK(cache_directory(o) == "/xdg/fxc");
  setenv("XDG_CACHE_HOME", "relative", 1); // invalid per the XDG spec
  CHECK(cache_directory(o) == "/home/u/.cache/fxc");
  unsetenv("XDG_CACHE_HOME");
  CHECK(cache_directory(o) == "/home/u/.cache/fxc");
  unsetenv("HOME");
  CHECK(cache_directory(o) == "");
  auto restore = [](const char* n, const std::optional<std::string>& v) {
    if (v)
      setenv(n, v->c_str(), 1);
    else
      unsetenv(n);
  };
  restore("FXC_CACHE_DIR", fxc_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST_CASE("depfile: Make escaping of blanks, '#', '$' and backslashes before blanks") {
  CHECK(make_escape("a/b.pt2") == "a/b.pt2");
  CHECK(make_escape("my model.pt2") == "my\\ model.pt2");
  CHECK(make_escape("a\tb") == "a\\\tb");
  CHECK(make_escape("w#1.safetensors") == "w\\#1.safetensors");
  CHECK(make_escape("$HOME/x") == "$$HOME/x");
  CHECK(make_escape("a\\ b") == "a\\\\\\ b");
  CHECK(make_escape("a\\b") == "a\\b");
}

TEST_CASE("depfile: one rule, one dependency per line, duplicates dropped, order kept") {
  CHECK(depfile_text("out/m.fxo", {"m.fxg", "w b.safetensors", "m.fxg"}) ==
        "out/m.fxo: \\\n  m.fxg \\\n  w\\ b.safetensors\n");
  CHECK(depfile_text("m.fxo", {}) == "m.fxo:\n");
  CHECK(default_depfile_path("m.fxo") == "m.d");
  CHECK(default_depfile_path("out/x.y/m.ll") == "out/x.y/m.d");
  CHECK(default_depfile_path("noext") == "noext.d");
}

TEST_CASE("depfile: written whole, and a failure names the file") {
  TempDir t;
  std::string p = (t.path / "m.d").string();
  write_depfile(p, "m.fxo: \\\n  m.fxg\n");
  CHECK(read_all(p) == "m.fxo: \\\n  m.fxg\n");
  CHECK(files_under(t.path) == std::vector<std::string>{"m.d"});
  CHECK_THROWS_WITH_AS(write_depfile((t.path / "no" / "m.d").string(), "x"),
                       doctest::Contains("m.d: error: cannot write the dependency file"), Error);
}
