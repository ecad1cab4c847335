// Unit tests for the autotune cache (runtime/autotune_cache.h): keys, write, read, corruption.
#include "runtime/autotune_cache.h"

#include "test_files.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace fxc;
namespace fs = std::filesystem;

namespace {

/// A scratch directory of this suite (testing::TempDir).
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("fxc-autotune-test-") {}
};
using testing::read_all;

AutotuneEntry entry(const std::string& kernel, const std::string& choice) {
  AutotuneEntry e;
  e.kernel = kernel;
  e.choice = choice;
  e.candidates = {{"grain=1", 0.5}, {choice, 0.25}};
  return e;
}

} // namespace

TEST_CASE("autotune cache: kernel keys depend on the code and the problem") {
  std::string k = AutotuneCache::kernel_key("define void @k()", "xnumel=8");
  CHECK(k.size() == 16);
  CHECK(k == AutotuneCache::kernel_key("define void @k()", "xnumel=8"));
  CHECK(k != AutotuneCache::kernel_key("define void @k() ", "xnumel=8"));
  CHECK(k != AutotuneCache::kernel_key("define void @k()", "xnumel=9"));
  // The code's length is hashed first: moving bytes between code and problem changes the key.
  CHECK(AutotuneCache::kernel_key("ab", "c") != AutotuneCache::kernel_key("a", "bc"));
}

TEST_CASE("autotune cache: store, reload, look up per device; deterministic text") {
  TempDir d;
  std::string dir = (d.path / "sub").string(); // created by save
  AutotuneCache c(dir);
  std::string note;
  c.load(&note);
  CHECK(note.empty());
  CHECK(c.size() == 0);
  CHECK(c.lookup("cpu a", "k1") == nullptr);
  c.insert("cpu b", "k2", entry("fused_1", "grain=8"));
  c.insert("cpu a", "k1", entry("fused_0", "grain=16"));
  std::string err;
  REQUIRE(c.save(&err));
  std::string text = read_all(c.path());
  CHECK(text.find("\"cpu a/k1\"") < text.find("\"cpu b/k2\"")); // sorted keys

  AutotuneCache r(dir);
  r.load(&note);
  CHECK(note.empty());
  REQUIRE(r.size() == 2);
  const AutotuneEntry* e = r.lookup("cpu a", "k1");
  REQUIRE(e != nullptr);
  CHECK(e->kernel == "fused_0");
  CHECK(e->choice == "grain=16");
  REQUIRE(e->candidates.size() == 2);
  CHECK(e->candidates[1].first == "grain=16");
  CHECK(e->candidates[1].second == 0.25);
  CHECK(r.lookup("cpu b", "k1") == nullptr); // another device's entry is not a hit

  // Saving merges what another compile wrote meanwhile, and the same entries give the same text.
  AutotuneCache other(dir);
  other.insert("cpu c", "k3", entry("fused_2", "grain=1"));
  REQUIRE(other.save(&err));
  AutotuneCache all(dir);
  all.load(&note);
  CHECK(all.size() == 3);
  std::map<std::string, AutotuneEntry> m;
  REQUIRE(AutotuneCache::from_json(read_all(all.path()), &m, &err));
  CHECK(AutotuneCache::to_json(m) == read_all(all.path()));
}

TEST_CASE("autotune cache: a corrupt file is discarded and says why") {
  TempDir d;
  AutotuneCache c(d.path.string());
  for (const char* bad : {"{\"version\": 1, \"entries\": {\"x\": 5", "[]", "{\"version\": 2}",
                          "{\"version\": 1, \"entries\": {\"x\": {\"kernel\": \"k\"}}}",
                          "{\"version\": 1, \"entries\": {\"x\": {\"kernel\": \"k\", \"choice\": "
                          "\"grain=1\", \"candidates\": [[1, 2]]}}}"}) {
    CAPTURE(bad);
    std::ofstream(c.path()) << bad;
    std::string note;
    c.load(&note);
    CHECK(note.find("discarded corrupt " + c.path()) == 0);
    CHECK(c.size() == 0);
    CHECK_FALSE(fs::exists(c.path()));
  }
}

TEST_CASE("autotune cache: disabled with no directory") {
  AutotuneCache c("");
  CHECK_FALSE(c.enabled());
  std::string note, err;
  c.load(&note);
  CHECK(note.empty());
  c.insert("cpu", "k", entry("k", "grain=1"));
  CHECK(c.save(&err));
}
