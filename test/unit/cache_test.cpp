// Unit tests for the compile cache (driver/cache.h) and depfiles (driver/depfile.h).
#include "driver/cache.h"
#include "driver/depfile.h"
#include "frontend/diag.h"
#include "frontend/io_util.h"
#include "runtime/cuda_driver.h"

#include "test_files.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>

using namespace fxc;
namespace fs = std::filesystem;

namespace {

/// A scratch directory of this suite (testing::TempDir).
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("fxc-cache-test-") {}
};
using testing::read_all;
using testing::write_all;

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

/// Replaces the file at `path` by a new one holding `bytes`, as a tool that writes a new file
/// does: an output the cache linked to its entry is unlinked, not written through.
void replace_file(const fs::path& path, const std::string& bytes) {
  fs::remove(path);
  write_all(path, bytes);
}

/// Writes `bytes` into the file at `path` in place, read-only or not (as root can): what a tool
/// that opens an existing file for writing does to every link of it.
void overwrite_in_place(const fs::path& path, const std::string& bytes) {
  fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  write_all(path, bytes);
}

/// The check file beside the entry of `key`.
fs::path check_path(const CompileCache& cache, const std::string& key) {
  std::string e = cache.entry_path(key);
  return e.substr(0, e.size() - 6) + ".check";
}

/// A key made of one repeated hex digit.
std::string key_of(char c) {
  return std::string(32, c);
}

/// Sets the modification time of `p` to `seconds` after the epoch (as if last used then).
void set_mtime(const std::string& p, long seconds) {
  struct timespec ts[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), ts, 0) == 0);
}

long mtime_of(const std::string& p) {
  struct stat st{};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return long(st.st_mtim.tv_sec);
}

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

TEST_CASE("cache: a CUDA --max-autotune compile's key names the GPU that timed it") {
  Graph g;
  g.name = "m";
  Options o;
  o.input = std::string(FXC_FIXTURES_DIR) + "/mlp.pt2";
  o.device = DeviceKind::Cuda;
  std::string plain = compile_cache_key(o, "fxo", "sm_90", g, {}).description();
  CHECK(plain.find("autotune-device=") == std::string::npos);
  o.max_autotune = true;
  std::string tuned = compile_cache_key(o, "fxo", "sm_90", g, {}).description();
  CHECK(tuned.find("max-autotune=1\n") != std::string::npos);
  // Without a device here: the reason, and the compile itself fails with it.
  std::string why = cuda::Context::unavailable_reason();
  std::string want = why.empty() ? cuda::Context::get().info().name : "unavailable: " + why;
  CHECK(tuned.find("autotune-device=" + want) != std::string::npos);
  o.device = DeviceKind::Cpu;
  CHECK(compile_cache_key(o, "fxo", "x86", g, {}).description().find("autotune-device=") ==
        std::string::npos);
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

TEST_CASE("cache: a file's digest is remembered under its identity, not when it is new") {
  TempDir t;
  const std::string f = (t.path / "g.pt2").string(), memo = (t.path / "digests").string();
  write_all(t.path / "g.pt2", some_bytes(1 << 16, 2));
  const std::string real = file_digest(f);
  // Written just now: hashed, nothing remembered (a write in the same tick would not show).
  CHECK(file_digest(f, memo) == real);
  CHECK_FALSE(fs::exists(memo));
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  CHECK(file_digest(f, memo) == real);
  std::vector<std::string> memos = files_under(memo);
  REQUIRE(memos.size() == 1);
  // The memo is what answers now: replace its digest and the answer follows it.
  const fs::path m = fs::path(memo) / memos[0];
  std::string text = read_all(m);
  REQUIRE(text.size() > 33);
  std::string fake(32, 'e');
  write_all(m, text.substr(0, text.size() - 33) + fake + "\n");
  CHECK(file_digest(f, memo) == fake);
  // A memo that does not parse is ignored and rewritten.
  write_all(m, "fxc-digest 1\ngarbage\n");
  CHECK(file_digest(f, memo) == real);
  CHECK(read_all(m) == text);
  // Any change of the file changes its identity: the old memo no longer applies.
  write_all(t.path / "g.pt2", some_bytes(1 << 16, 3));
  CHECK(file_digest(f, memo) == file_digest(f));
  CHECK(file_digest(f, memo) != real);
}

TEST_CASE("cache: a stored payload comes back, with nothing but the entry and stats left") {
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
  CHECK(files_under(t.path / "c") ==
        std::vector<std::string>{"01/" + kKey + ".check", "01/" + kKey + ".entry", "stats"});
  CHECK(cache.entry_path(kKey) == (t.path / "c" / "01" / (kKey + ".entry")).string());
}

TEST_CASE("cache: an entry is the payload as is, read-only, and a check file beside it") {
  TempDir t;
  CompileCache cache(t.path.string());
  std::string payload = some_bytes(100000, 3);
  REQUIRE(cache.store(kKey, payload));
  CHECK(read_all(cache.entry_path(kKey)) == payload);
  CHECK((fs::status(cache.entry_path(kKey)).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));
  std::string check = read_all(check_path(cache, kKey));
  CHECK(check.rfind("fxc-cache-entry 3\nkey " + kKey + "\nsize 100000\nxxh3 ", 0) == 0);
  CHECK(check.find("\nverified ") != std::string::npos);
}

TEST_CASE("cache: store_file stores a file's bytes as store would, without reading them whole") {
  TempDir t;
  CompileCache cache((t.path / "c").string());
  for (size_t n : {size_t(0), size_t(5), size_t(3 << 20) + 17}) {
    std::string payload = some_bytes(n, unsigned(n) + 7);
    std::string file = (t.path / "out.fxo").string();
    replace_file(file, payload);
    REQUIRE(cache.store_file(kKey, file));
    // One file system: the output itself became the entry (a hard link), read-only.
    CHECK(fs::equivalent(file, cache.entry_path(kKey)));
    CHECK((fs::status(file).permissions() & fs::perms::owner_write) == fs::perms::none);
    std::string from_file = read_all(cache.entry_path(kKey));
    std::string check_from_file = read_all(check_path(cache, kKey));
    REQUIRE(cache.store(kKey, payload));
    CHECK(read_all(cache.entry_path(kKey)) == from_file);
    std::string check = read_all(check_path(cache, kKey)); // same size, same checksum
    CHECK(check.substr(0, check.find("verified")) ==
          check_from_file.substr(0, check_from_file.find("verified")));
    replace_file(file, payload);
    REQUIRE(cache.store_file(kKey, file));
    auto got = cache.lookup(kKey); // the checksum verifies
    REQUIRE(got);
    CHECK(*got == payload);
  }
  CHECK_FALSE(cache.store_file(kKey, (t.path / "missing.fxo").string()));
  CHECK_FALSE(CompileCache("").store_file(kKey, (t.path / "out.fxo").string()));
}

TEST_CASE("cache: write_hit links the payload over any file; a miss leaves it alone") {
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
    REQUIRE(cache.write_hit(kKey, out.string())); // a new file: a link to the entry
    CHECK(read_all(out) == payload);
    CHECK(fs::equivalent(out, cache.entry_path(kKey)));
    REQUIRE(cache.write_hit(kKey, out.string())); // the entry already: left as it is
    CHECK(fs::equivalent(out, cache.entry_path(kKey)));
    replace_file(out, std::string(n + 5000, 'x')); // another file: replaced
    REQUIRE(cache.write_hit(kKey, out.string()));
    CHECK(read_all(out) == payload);
    CHECK(fs::equivalent(out, cache.entry_path(kKey)));
  }
  replace_file(out, "before");
  CHECK_FALSE(cache.write_hit("ffffffffffffffffffffffffffffffff", out.string()));
  CHECK(read_all(out) == "before");
  // An output that cannot be written is an error naming it.
  const std::string bad = (t.path / "no-such-dir" / "out.fxo").string();
  CHECK_THROWS_WITH_AS(cache.write_hit(kKey, bad), doctest::Contains("no-such-dir"), Error);
  // A symbolic link is written through, not replaced.
  const fs::path target = t.path / "target.fxo";
  replace_file(target, "old");
  fs::remove(out);
  fs::create_symlink(target, out);
  REQUIRE(cache.write_hit(kKey, out.string()));
  CHECK(fs::is_symlink(out));
  CHECK(read_all(target) == read_all(cache.entry_path(kKey)));
  CHECK_FALSE(fs::equivalent(target, cache.entry_path(kKey)));
}

TEST_CASE("cache: an output written in place changes its entry, which the next hit discards") {
  TempDir t;
  CompileCache cache((t.path / "c").string());
  const std::string payload = some_bytes(300000, 5);
  REQUIRE(cache.store(kKey, payload));
  const fs::path out = t.path / "out.fxo";
  REQUIRE(cache.write_hit(kKey, out.string()));
  REQUIRE(cache.write_hit(kKey, out.string())); // verified without hashing: unchanged
  // A byte changed through the output's link, its modification time put back: the change time
  // still shows it, so the next hit hashes the entry and finds it corrupt.
  struct stat before{};
  REQUIRE(::stat(out.c_str(), &before) == 0);
  std::string bad = payload;
  bad[1000] ^= 1;
  overwrite_in_place(out, bad);
  timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, out.c_str(), times, 0) == 0);
  CHECK_FALSE(cache.write_hit(kKey, (t.path / "other.fxo").string()));
  CHECK_FALSE(fs::exists(cache.entry_path(kKey)));
  CHECK_FALSE(fs::exists(check_path(cache, kKey)));
  CHECK_FALSE(fs::exists(t.path / "other.fxo"));
}

TEST_CASE("cache: a corrupt entry is a miss and is removed") {
  TempDir t;
  CompileCache cache(t.path.string());
  std::string payload = some_bytes(200000, 7);
  REQUIRE(cache.store(kKey, payload));
  const fs::path entry = cache.entry_path(kKey);
  const fs::path check = check_path(cache, kKey);
  const std::string good = read_all(entry);
  const std::string good_check = read_all(check);

  const fs::path out = t.path / "out.fxo";
  // `damage` breaks the entry; lookup and write_hit each find it, remove it and miss.
  auto corrupt = [&](const std::function<void()>& damage) {
    damage();
    CHECK_FALSE(cache.lookup(kKey));
    CHECK_FALSE(fs::exists(entry));
    CHECK_FALSE(fs::exists(check));
    REQUIRE(cache.store(kKey, payload));
    damage();
    replace_file(out, "before");
    CHECK_FALSE(cache.write_hit(kKey, out.string())); // and leaves its output alone
    CHECK_FALSE(fs::exists(entry));
    CHECK(read_all(out) == "before");
    REQUIRE(cache.store(kKey, payload)); // rebuilt
    CHECK(cache.lookup(kKey) == payload);
  };
  auto payload_is = [&](const std::string& bad) {
    return [&, bad] { overwrite_in_place(entry, bad); };
  };
  auto check_is = [&](const std::string& bad) { return [&, bad] { write_all(check, bad); }; };
  auto check_with = [&](const std::string& from, const std::string& to) {
    std::string bad = good_check;
    size_t at = bad.find(from);
    REQUIRE(at != std::string::npos);
    bad.replace(at, from.size(), to);
    return check_is(bad);
  };
  SUBCASE("empty payload") {
    corrupt(payload_is(""));
  }
  SUBCASE("truncated payload") {
    corrupt(payload_is(good.substr(0, good.size() / 2)));
  }
  SUBCASE("trailing bytes") {
    corrupt(payload_is(good + "x"));
  }
  SUBCASE("flipped byte in the payload") {
    std::string bad = good;
    bad[good.size() / 2] ^= 0x5a;
    corrupt(payload_is(bad));
  }
  SUBCASE("empty check file") {
    corrupt(check_is(""));
  }
  SUBCASE("bad magic") {
    corrupt(check_with("fxc-cache-entry 3", "fxc-cache-entry 2"));
  }
  SUBCASE("wrong checksum") {
    std::string sum = good_check.substr(good_check.find("xxh3 ") + 5, 16);
    std::string other = sum;
    other[0] = other[0] == '0' ? '1' : '0';
    corrupt(check_with("xxh3 " + sum, "xxh3 " + other));
  }
  SUBCASE("wrong payload size") {
    corrupt(check_with("size 200000", "size 200001"));
  }
  SUBCASE("huge payload size is not trusted") {
    corrupt(check_with("size 200000", "size 18446744073709551615"));
  }
  SUBCASE("a field missing") {
    corrupt(check_with("size 200000\n", ""));
  }
  SUBCASE("another key's check file") {
    const std::string other = "ffffffffffffffffffffffffffffffff";
    REQUIRE(cache.store(other, "other"));
    corrupt(check_is(read_all(check_path(cache, other))));
  }
  SUBCASE("no check file: a miss that leaves the entry to the next store") {
    fs::remove(check);
    CHECK_FALSE(cache.lookup(kKey));
    CHECK_FALSE(cache.write_hit(kKey, out.string()));
    REQUIRE(cache.store(kKey, payload));
    CHECK(cache.lookup(kKey) == payload);
  }
}

TEST_CASE("cache: sizes are bytes with an optional K, M, G or T suffix") {
  CHECK(parse_cache_size("0") == uint64_t(0));
  CHECK(parse_cache_size("123") == uint64_t(123));
  CHECK(parse_cache_size("1K") == uint64_t(1024));
  CHECK(parse_cache_size("500M") == uint64_t(500) << 20);
  CHECK(parse_cache_size("500m") == uint64_t(500) << 20);
  CHECK(parse_cache_size("5G") == uint64_t(5) << 30);
  CHECK(parse_cache_size("2t") == uint64_t(2) << 40);
  CHECK(parse_cache_size("18446744073709551615") == UINT64_MAX);
  CHECK(parse_cache_size("16777215T") == uint64_t(16777215) << 40);
  for (const char* bad : {"", "M", "-1", "+1", "1.5G", "5GB", "5Gi", " 5", "5 ", "0x10", "5X",
                          "18446744073709551616", "16777216T", "99999999999999999999K", "1e9"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cache_size(bad));
  }
}

TEST_CASE("cache: the size limit is --cache-max-size, FXC_CACHE_MAX_SIZE, then 5 GiB") {
  const char* saved = std::getenv("FXC_CACHE_MAX_SIZE");
  std::optional<std::string> keep = saved ? std::optional<std::string>(saved) : std::nullopt;
  unsetenv("FXC_CACHE_MAX_SIZE");
  Options o;
  CHECK(cache_max_size(o) == uint64_t(5) << 30);
  setenv("FXC_CACHE_MAX_SIZE", "", 1); // empty: unset
  CHECK(cache_max_size(o) == uint64_t(5) << 30);
  setenv("FXC_CACHE_MAX_SIZE", "2M", 1);
  CHECK(cache_max_size(o) == uint64_t(2) << 20);
  o.cache_max_size = "0";
  CHECK(cache_max_size(o) == 0);
  o.cache_max_size = "lots";
  CHECK_THROWS_WITH_AS(cache_max_size(o),
                       doctest::Contains("--cache-max-size: error: invalid size 'lots'"), Error);
  o.cache_max_size.clear();
  setenv("FXC_CACHE_MAX_SIZE", "5GB", 1);
  CHECK_THROWS_WITH_AS(cache_max_size(o),
                       doctest::Contains("FXC_CACHE_MAX_SIZE: error: invalid size '5GB'"), Error);
  if (keep)
    setenv("FXC_CACHE_MAX_SIZE", keep->c_str(), 1);
  else
    unsetenv("FXC_CACHE_MAX_SIZE");
}

TEST_CASE("cache: stats count each entry once, and are rebuilt when missing or damaged") {
  TempDir t;
  CompileCache cache(t.path.string(), 0); // unlimited
  CHECK_FALSE(cache.usage());
  const uint64_t entry = 1000;
  for (char c : {'a', 'b', 'c'}) REQUIRE(cache.store(key_of(c), some_bytes(1000, unsigned(c))));
  REQUIRE(cache.usage());
  CHECK(cache.usage()->entries == 3);
  CHECK(cache.usage()->bytes == 3 * entry);
  REQUIRE(cache.store(key_of('a'), some_bytes(3000, 1))); // replaces an entry
  CHECK(cache.usage()->entries == 3);
  CHECK(cache.usage()->bytes == 2 * entry + 3000);
  for (const std::string& damage :
       {std::string(), std::string("fxc-cache-stats 1\nentries x\n"), std::string("garbage")}) {
    write_all(t.path / "stats", damage);
    CHECK_FALSE(cache.usage());
    REQUIRE(cache.store(key_of('d'), some_bytes(1000, 4))); // a scan counts them again
    REQUIRE(cache.usage());
    CHECK(cache.usage()->entries == 4);
    CHECK(cache.usage()->bytes == 3 * entry + 3000);
  }
  fs::remove(t.path / "stats");
  REQUIRE(cache.store(key_of('d'), some_bytes(1000, 4)));
  CHECK(cache.usage()->entries == 4);
}

TEST_CASE("cache: a store over the limit evicts the least recently used entries to 90%") {
  TempDir t;
  const uint64_t entry = 10000;
  // Room for three entries and a half: a fourth brings it over, and one eviction gets it under
  // 90% of the limit.
  CompileCache cache(t.path.string(), entry * 7 / 2);
  std::map<char, std::string> payload;
  for (char c : {'a', 'b', 'c'}) {
    payload[c] = some_bytes(10000, unsigned(c));
    REQUIRE(cache.store(key_of(c), payload[c]));
  }
  // Stored (or last used) in the order c, a, b; then a hit on c makes it the most recent.
  set_mtime(cache.entry_path(key_of('c')), 1000);
  set_mtime(cache.entry_path(key_of('a')), 2000);
  set_mtime(cache.entry_path(key_of('b')), 3000);
  CHECK(cache.lookup(key_of('c')) == payload['c']);
  CHECK(mtime_of(cache.entry_path(key_of('c'))) > 3000);
  // Files that are not entries are neither counted nor evicted, however old.
  write_all(t.path / "autotune.json", "{}");
  fs::create_directories(t.path / "ab");
  write_all(t.path / "ab" / "notes.txt", "x");
  set_mtime((t.path / "autotune.json").string(), 1);
  set_mtime((t.path / "ab" / "notes.txt").string(), 1);
  payload['d'] = some_bytes(10000, 'd');
  REQUIRE(cache.store(key_of('d'), payload['d']));
  CHECK_FALSE(fs::exists(cache.entry_path(key_of('a')))); // the least recently used
  CHECK(cache.lookup(key_of('b')) == payload['b']);
  CHECK(cache.lookup(key_of('c')) == payload['c']);
  CHECK(cache.lookup(key_of('d')) == payload['d']);
  CHECK(cache.usage()->entries == 3);
  CHECK(cache.usage()->bytes == 3 * entry);
  CHECK(fs::exists(t.path / "autotune.json"));
  CHECK(fs::exists(t.path / "ab" / "notes.txt"));
  // write_hit marks its entry used too: b is hit last, so c goes next.
  set_mtime(cache.entry_path(key_of('b')), 1000);
  set_mtime(cache.entry_path(key_of('c')), 2000);
  set_mtime(cache.entry_path(key_of('d')), 3000);
  REQUIRE(cache.write_hit(key_of('b'), (t.path / "out").string()));
  REQUIRE(cache.store(key_of('e'), some_bytes(10000, 'e')));
  CHECK_FALSE(fs::exists(cache.entry_path(key_of('c'))));
  for (char c : {'b', 'd', 'e'}) CHECK(fs::exists(cache.entry_path(key_of(c))));
  // Equal times: the key decides, so the order does not depend on the directory's.
  for (char c : {'b', 'd', 'e'}) set_mtime(cache.entry_path(key_of(c)), 5000);
  REQUIRE(cache.store(key_of('f'), some_bytes(10000, 'f')));
  CHECK_FALSE(fs::exists(cache.entry_path(key_of('b'))));
  for (char c : {'d', 'e', 'f'}) CHECK(fs::exists(cache.entry_path(key_of(c))));
}

TEST_CASE("cache: the entry just stored is kept even when it alone is over the limit") {
  TempDir t;
  CompileCache cache(t.path.string(), 10000);
  REQUIRE(cache.store(key_of('a'), some_bytes(1000, 1)));
  REQUIRE(cache.store(key_of('b'), some_bytes(1000, 2)));
  std::string big = some_bytes(20000, 3);
  REQUIRE(cache.store(key_of('c'), big));
  CHECK_FALSE(fs::exists(cache.entry_path(key_of('a'))));
  CHECK_FALSE(fs::exists(cache.entry_path(key_of('b'))));
  CHECK(cache.lookup(key_of('c')) == big);
  CHECK(cache.usage()->entries == 1);
  CHECK(cache.usage()->bytes == 20000);
}

TEST_CASE("cache: an entry removed or replaced while a hit copies it gives whole bytes or a miss") {
  TempDir t;
  CompileCache cache(t.path.string(), 0);
  const std::string payload = some_bytes(1 << 20, 9);
  REQUIRE(cache.store(kKey, payload));
  std::atomic<bool> stop{false};
  std::thread evictor([&] {
    while (!stop) {
      ::unlink(cache.entry_path(kKey).c_str());
      cache.store(kKey, payload);
    }
  });
  const fs::path out = t.path / "out.fxo";
  int hits = 0, misses = 0;
  for (int i = 0; i < 200; ++i) {
    replace_file(out, "before");
    if (cache.write_hit(kKey, out.string())) {
      ++hits;
      CHECK(read_all(out) == payload);
    } else {
      ++misses;
      CHECK(read_all(out) == "before");
    }
  }
  stop = true;
  evictor.join();
  CHECK(hits + misses == 200);
  MESSAGE("hits " << hits << ", misses " << misses);
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

/// Writes `bytes` through an OutputFile that must write in place (not through a temporary).
static void write_output_through(const std::string& path, const std::string& bytes) {
  OutputFile out(path);
  CHECK_FALSE(out.regular());
  out.write(bytes);
  out.commit();
}

TEST_CASE("output files: renamed over the path when whole; an unfinished one leaves the old") {
  TempDir t;
  const fs::path p = t.path / "out.fxo";
  write_all(p, "old bytes");
  {
    OutputFile out(p.string());
    CHECK(out.regular());
    out.write("new");
    CHECK(read_all(p) == "old bytes"); // nothing visible before commit()
    CHECK(files_under(t.path).size() == 2);
  } // no commit(): an error or a killed run
  CHECK(read_all(p) == "old bytes");
  CHECK(files_under(t.path) == std::vector<std::string>{"out.fxo"});
  {
    OutputFile out(p.string());
    out.write("new bytes");
    out.commit();
  }
  CHECK(read_all(p) == "new bytes");
  CHECK(files_under(t.path) == std::vector<std::string>{"out.fxo"});
  // A cache hit copies into the temporary too: the previous output stays until it is whole.
  CompileCache cache((t.path / "c").string());
  REQUIRE(cache.store(kKey, "payload"));
  REQUIRE(cache.write_hit(kKey, p.string()));
  CHECK(read_all(p) == "payload");
  CHECK(std::count_if(fs::directory_iterator(t.path), fs::directory_iterator(),
                      [](const fs::directory_entry& d) {
                        return d.path().filename().string().find(".tmp-") != std::string::npos;
                      }) == 0);
  // An output that is the entry already (a hard link) is left as it is, with a new modification
  // time; another file of the same size with other bytes is replaced.
  struct stat before{}, after{};
  REQUIRE(::stat(p.c_str(), &before) == 0);
  fs::last_write_time(p, fs::last_write_time(p) - std::chrono::hours(1));
  auto old_time = fs::last_write_time(p);
  REQUIRE(cache.write_hit(kKey, p.string()));
  REQUIRE(::stat(p.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(fs::last_write_time(p) > old_time);
  CHECK(read_all(p) == "payload");
  replace_file(p, "PAYLOAD");
  REQUIRE(cache.write_hit(kKey, p.string()));
  CHECK(read_all(p) == "payload");
  // Not a regular file (a device): written in place.
  {
    OutputFile null("/dev/null");
    CHECK_FALSE(null.regular());
    null.write("discarded");
    null.commit();
  }
  CHECK(fs::is_character_file("/dev/null"));
  // A symbolic link is written through (and stays a link).
  const fs::path target = t.path / "target.fxo", link = t.path / "link.fxo";
  write_all(target, "a longer old content");
  fs::create_symlink(target, link);
  write_output_through(link.string(), "linked");
  CHECK(fs::is_symlink(link));
  CHECK(read_all(target) == "linked");
  CHECK_THROWS_WITH_AS(OutputFile((t.path / "no" / "x.fxo").string()),
                       doctest::Contains("x.fxo: error: cannot write output file: No such file"),
                       Error);
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
