// The remote compile cache: a second level on Redis (hiredis) shared by a fleet, and the key
// manifests that --explain-cache compares.
//
// `--remote-cache=redis://[user:password@]host:port[/db]` (or $FXC_REMOTE_CACHE) puts a Redis
// server behind the local cache (driver/cache.h): a local miss looks the key up remotely, and a
// remote hit is stored locally; a compile is stored locally and published. Everything lives under
// the key prefix ($FXC_REMOTE_CACHE_PREFIX, default "fxc"):
//   <p>:m:<key>      the entry's manifest: the key's components and the blobs of its payload
//   <p>:b:<digest>   a blob, by the XXH3-128 digest of its bytes: the artifact with its large
//                    weights cut out, and each large weight once (entries share equal weights)
//   <p>:autotune     a hash of --max-autotune choices, "<device>/<kernel key>" -> entry
// Every value is enveloped: magic "FXCR", version, size, XXH3-64 of the bytes; a value that does
// not check out is deleted, warned about and treated as a miss. Publication writes the blobs
// first and then the manifest with SET NX: one writer wins, and a reader that finds a manifest
// finds whole blobs. Values expire after --remote-cache-ttl seconds (default 7 days; 0: never);
// values over $FXC_REMOTE_CACHE_MAX_VALUE (default 256M) are neither published nor read.
// Connecting and every command time out ($FXC_REMOTE_CACHE_TIMEOUT, milliseconds, default 2000).
// A server that is down, slow, full or refuses the password costs one warning; the process then
// stops using it and the compile goes on locally: a remote cache never changes an exit status.
// The password comes from the URL, $FXC_REMOTE_CACHE_PASSWORD or the file named by
// $FXC_REMOTE_CACHE_PASSWORD_FILE, and is printed as "***". Covered by test/remote_cache.sh and
// test/unit/remote_cache_test.cpp.
#pragma once

#include "driver/cache.h"
#include "driver/options.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// A parsed redis:// URL.
struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;     ///< "" : the default user
  std::string password; ///< "" : none in the URL
};

/// Parses `redis://[user:password@]host[:port][/db]` (user and password may be percent-encoded;
/// an IPv6 host is bracketed). nullopt with *error set when `url` is anything else.
std::optional<RedisUrl> parse_redis_url(std::string_view url, std::string* error);

/// `url` with its password replaced by "***", for messages.
std::string redact_redis_url(std::string_view url);

/// The URL `o` selects: --remote-cache, else $FXC_REMOTE_CACHE; "" when none (or --no-cache).
std::string remote_cache_url(const Options& o);

/// The default --remote-cache-ttl: 7 days.
constexpr int64_t kDefaultRemoteTtl = 7 * 24 * 3600;

/// A manifest's text: {"version":1,"key":...,"components":[[name,value,digest],...], ...}.
/// `extra` (a JSON object's text, or "") adds fields (the remote blob list).
std::string manifest_json(const std::string& key, const std::vector<KeyComponent>& c,
                          const std::string& extra = "");
/// Parses a manifest; false when it is not one.
bool parse_manifest(std::string_view text, std::string* key, std::vector<KeyComponent>* c);

/// How a component is named to people: "--allow-tf32" for a flag, "graph", "weights w.bin".
std::string component_label(const KeyComponent& c);

/// The labels of the components that differ between `want` and `have` (matched by name and
/// occurrence), in `want`'s order, then those only `have` has.
std::vector<std::string> differing_components(const std::vector<KeyComponent>& want,
                                              const std::vector<KeyComponent>& have);

/// "miss: --allow-tf32 differs; all else equal" (or "... and graph differ; ...", or "all equal").
std::string describe_difference(const std::vector<std::string>& differing);

/// The remote level of one process: connects on first use, and after the first failure (one
/// warning) does nothing more. Counts what it does for --log=cache.
class RemoteCache {
public:
  /// Disabled when `url` is "". Throws UsageError for a malformed URL or environment value.
  RemoteCache(const std::string& url, int64_t ttl_s);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  bool enabled() const { return enabled_ && !failed_; }
  const std::string& shown_url() const { return shown_url_; }

  /// The payload stored under `key`, or nullopt (a miss, a bad value, or a failed server).
  std::optional<std::string> get(const std::string& key);
  /// Publishes `payload` with its manifest; false when it was not (already there counts as
  /// published).
  bool put(const std::string& key, const std::vector<KeyComponent>& components,
           const std::string& payload);
  /// The manifests of up to `limit` remote entries (for --explain-cache).
  std::vector<std::pair<std::string, std::vector<KeyComponent>>> manifests(size_t limit);
  /// Whether a manifest of `key` exists.
  bool has(const std::string& key);

  /// Merges the remote --max-autotune choices into the autotune cache of `dir`.
  void pull_autotune(const std::string& dir);
  /// Publishes the entries of `dir`'s autotune cache that the server lacks.
  void push_autotune(const std::string& dir);

  /// "remote: 1 hit, 0 misses, ..." for --log=cache.
  std::string summary() const;

  struct Stats {
    uint64_t hits = 0, misses = 0, puts = 0, bytes_read = 0, bytes_written = 0, commands = 0;
    double ms = 0;
  };
  const Stats& stats() const { return stats_; }

private:
  struct Impl;
  bool connect();
  void fail(const std::string& why);
  bool enabled_ = false, failed_ = false;
  std::string shown_url_, prefix_;
  int64_t ttl_s_ = kDefaultRemoteTtl;
  uint64_t max_value_ = 0;
  int timeout_ms_ = 2000;
  RedisUrl url_;
  std::unique_ptr<Impl> impl_;
  Stats stats_;
};

/// The compile cache use of `cu` as two levels: on a local miss the remote level; a remote hit
/// is stored locally. write_hit writes the payload to `path` as CompileCache::write_hit does.
/// On a miss with --max-autotune, the remote tuning choices are merged into the local ones.
bool tiered_write_hit(CompileCacheUse& cu, const Options& o, const std::string& path);
std::optional<std::string> tiered_lookup(CompileCacheUse& cu, const Options& o);
/// Stores locally and publishes remotely (and the --max-autotune choices).
void tiered_store(CompileCacheUse& cu, const Options& o, std::string_view bytes);
/// tiered_store() of the artifact the file `path` holds: the local cache copies the file (no
/// read into memory); a remote cache gets its mapping.
void tiered_store_file(CompileCacheUse& cu, const Options& o, const std::string& path);

/// --explain-cache: prints the key's components and, on a miss, how the nearest local and remote
/// entries differ. Returns the exit status (0).
int explain_cache(const Options& o, const Graph& g, const std::vector<std::string>& external_files);

} // namespace fxc
