// The remote compile cache on Redis (hiredis), key manifests, and --explain-cache.
#include "driver/remote_cache.h"

#include "driver/driver.h"
#include "driver/logging.h"
#include "frontend/diag.h"
#include "frontend/io_util.h"
#include "runtime/artifact.h"
#include "runtime/autotune_cache.h"

#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <pthread.h>
#include <set>
#include <sstream>
#include <sys/time.h>
#include <unistd.h>

namespace fxc {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

constexpr char kValueMagic[4] = {'F', 'X', 'C', 'R'};
constexpr uint32_t kValueVersion = 1;
constexpr size_t kValueHeader = 24; // magic, version, size, XXH3-64
constexpr int kManifestVersion = 1;
/// Weights at least this large are cut out of a published artifact and stored by digest.
constexpr size_t kLargeWeight = size_t(64) << 10;
constexpr uint64_t kDefaultMaxValue = uint64_t(256) << 20;
constexpr int kDefaultTimeoutMs = 2000;

void warn(const std::string& msg) {
  log_message(Component::Cache, Level::Warning, msg);
}
void info(const std::string& msg) {
  log_message(Component::Cache, Level::Info, msg);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", ms);
  return buf;
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char((v >> (8 * i)) & 0xff);
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

/// The value stored for `bytes`: header (magic, version, size, XXH3-64) + bytes.
std::string envelope(std::string_view bytes) {
  std::string out(kValueMagic, sizeof kValueMagic);
  put_le(out, kValueVersion, 4);
  put_le(out, bytes.size(), 8);
  put_le(out, XXH3_64bits(bytes.data(), bytes.size()), 8);
  out.append(bytes);
  return out;
}

/// The bytes of an enveloped value, or "" with *why set when it does not check out.
std::string_view open_envelope(std::string_view v, std::string* why) {
  if (v.size() < kValueHeader) return *why = "shorter than its header", std::string_view();
  if (std::memcmp(v.data(), kValueMagic, sizeof kValueMagic) != 0)
    return *why = "bad magic", std::string_view();
  if (get_le(v.data() + 4, 4) != kValueVersion) return *why = "unknown version", std::string_view();
  uint64_t size = get_le(v.data() + 8, 8);
  if (size != v.size() - kValueHeader)
    return *why = size > v.size() - kValueHeader ? "truncated" : "bytes after the value",
           std::string_view();
  std::string_view bytes = v.substr(kValueHeader);
  if (XXH3_64bits(bytes.data(), bytes.size()) != get_le(v.data() + 16, 8))
    return *why = "checksum mismatch", std::string_view();
  why->clear();
  return bytes;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Percent-decodes `s`; false on a malformed escape.
bool percent_decode(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      *out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return false;
    int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += char(hi * 16 + lo);
    i += 2;
  }
  return true;
}

bool parse_int(std::string_view s, int64_t lo, int64_t hi, int64_t* v) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  *v = std::stoll(std::string(s));
  return *v >= lo && *v <= hi;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// The label of a key field that is a command-line flag.
bool is_flag_component(const std::string& name) {
  static const std::set<std::string> flags = {"backend",      "device",      "mode",
                                              "cuda-arch",    "inject-bug",  "tf32",
                                              "max-autotune", "verify-each", "dtype"};
  return flags.count(name) > 0;
}

// The large weights of an artifact, cut out for storage by digest.
struct SplitArtifact {
  std::string stripped;                                  ///< the artifact, large weights zeroed
  std::vector<std::pair<std::string, uint64_t>> weights; ///< digest and size, in order
  std::vector<std::string> weight_bytes;                 ///< the weights' bytes, in order
};

/// Every distinct storage of a constant of the artifact's plans at least kLargeWeight bytes,
/// in plan and slot order.
std::vector<std::shared_ptr<Storage>> large_weights(const CompiledArtifact& a) {
  std::vector<std::shared_ptr<Storage>> out;
  std::set<const Storage*> seen;
  for (const ArtifactGraph& g : a.graphs) {
    if (g.kind != ArtifactGraph::Kind::Plan) continue;
    for (const auto& [slot, t] : g.plan.constant_slots) {
      const std::shared_ptr<Storage>& s = t.storage();
      if (!s || s->nbytes() < kLargeWeight || !seen.insert(s.get()).second) continue;
      out.push_back(s);
    }
  }
  return out;
}

/// Splits an .fxo; nullopt when it has no large weights (or does not parse): stored whole.
std::optional<SplitArtifact> split_artifact(const std::string& bytes) {
  try {
    CompiledArtifact a = parse_artifact(bytes, "<remote cache>");
    std::vector<std::shared_ptr<Storage>> ws = large_weights(a);
    if (ws.empty()) return std::nullopt;
    SplitArtifact out;
    for (size_t i = 0; i < ws.size(); ++i) {
      const std::shared_ptr<Storage>& s = ws[i];
      std::string b(reinterpret_cast<const char*>(s->data()), s->nbytes());
      out.weights.push_back({content_digest(b), b.size()});
      out.weight_bytes.push_back(std::move(b));
      // Zeros and the weight's number: stripped weights stay distinct, so that the artifact's
      // deduplication by content keeps one range per weight for join_artifact to fill.
      std::memset(s->data(), 0, s->nbytes());
      uint64_t tag = i + 1;
      std::memcpy(s->data(), &tag, std::min(sizeof tag, s->nbytes()));
    }
    out.stripped = serialize_artifact(a);
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The artifact of `stripped` with `weights` put back; "" with *why set when they do not fit.
std::string join_artifact(const std::string& stripped, const std::vector<std::string>& weights,
                          std::string* why) {
  try {
    CompiledArtifact a = parse_artifact(stripped, "<remote cache>");
    std::vector<std::shared_ptr<Storage>> ws = large_weights(a);
    if (ws.size() != weights.size()) return *why = "the weights do not match the artifact", "";
    for (size_t i = 0; i < ws.size(); ++i) {
      if (ws[i]->nbytes() != weights[i].size()) return *why = "a weight's size differs", "";
      std::memcpy(ws[i]->data(), weights[i].data(), weights[i].size());
    }
    return serialize_artifact(a);
  } catch (const std::exception& e) {
    *why = e.what();
    return "";
  }
}

} // namespace

// ---------------------------------------------------------------------------------------------
// URLs

std::optional<RedisUrl> parse_redis_url(std::string_view url, std::string* error) {
  constexpr std::string_view kScheme = "redis://";
  auto bad = [&](const std::string& why) -> std::optional<RedisUrl> {
    *error = "invalid remote cache URL '" + redact_redis_url(url) + "': " + why +
             " (expected redis://[user:password@]host:port[/db])";
    return std::nullopt;
  };
  if (url.substr(0, kScheme.size()) != kScheme) return bad("not a redis:// URL");
  std::string_view rest = url.substr(kScheme.size());
  RedisUrl u;
  std::string_view path;
  size_t at = rest.rfind('@');
  size_t slash = rest.find('/', at == std::string_view::npos ? 0 : at);
  if (slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (at != std::string_view::npos && at < rest.size()) {
    std::string_view cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = cred.find(':');
    std::string_view user =
        colon == std::string_view::npos ? std::string_view() : cred.substr(0, colon);
    std::string_view pw = colon == std::string_view::npos ? cred : cred.substr(colon + 1);
    if (!percent_decode(user, &u.user) || !percent_decode(pw, &u.password))
      return bad("malformed %-escape in the credentials");
  }
  std::string_view port;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("unclosed '[' in the host");
    u.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("expected ':' after the host");
      port = after.substr(1);
      if (port.empty()) return bad("empty port");
    }
  } else {
    size_t colon = rest.rfind(':');
    u.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return bad("empty port");
    }
  }
  if (u.host.empty()) return bad("no host");
  if (u.host.find_first_of(" \t/@") != std::string::npos) return bad("bad host");
  int64_t v = 0;
  if (!port.empty()) {
    if (!parse_int(port, 1, 65535, &v))
      return bad("port '" + std::string(port) + "' is not 1..65535");
    u.port = int(v);
  }
  if (!path.empty()) {
    if (!parse_int(path, 0, 1 << 20, &v))
      return bad("database '" + std::string(path) + "' is not a number");
    u.db = int(v);
  }
  return u;
}

std::string redact_redis_url(std::string_view url) {
  std::string s(url);
  size_t scheme = s.find("://");
  size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  size_t slash = s.find('/', start);
  size_t at = s.rfind('@', slash == std::string::npos ? std::string::npos : slash);
  if (at == std::string::npos || at < start) {
    // No '@' before the path: maybe one after it (a password with '/'), else nothing to hide.
    at = s.rfind('@');
    if (at == std::string::npos || at < start) return s;
  }
  size_t colon = s.find(':', start);
  if (colon == std::string::npos || colon > at) return s.substr(0, start) + "***" + s.substr(at);
  return s.substr(0, colon + 1) + "***" + s.substr(at);
}

std::string remote_cache_url(const Options& o) {
  if (o.no_cache) return "";
  if (o.remote_cache_given) return o.remote_cache;
  return env_or("FXC_REMOTE_CACHE", "");
}

// ---------------------------------------------------------------------------------------------
// Manifests

std::string manifest_json(const std::string& key, const std::vector<KeyComponent>& c,
                          const std::string& extra) {
  json j = extra.empty() ? json::object() : json::parse(extra);
  json comps = json::array();
  for (const KeyComponent& k : c) comps.push_back(json::array({k.name, k.value, k.digest}));
  j["version"] = kManifestVersion;
  j["key"] = key;
  j["components"] = comps;
  return j.dump() + "\n";
}

bool parse_manifest(std::string_view text, std::string* key, std::vector<KeyComponent>* c) {
  if (json_nesting_depth(std::string(text)) > kMaxJsonDepth) return false;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("version") ||
      !j["version"].is_number_integer() || j["version"].get<int>() != kManifestVersion ||
      !j.contains("key") || !j["key"].is_string() || !j.contains("components") ||
      !j["components"].is_array())
    return false;
  *key = j["key"].get<std::string>();
  c->clear();
  for (const json& e : j["components"]) {
    if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_string() ||
        !e[2].is_string())
      return false;
    c->push_back({e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<std::string>()});
  }
  return true;
}

std::string component_label(const KeyComponent& c) {
  if (is_flag_component(c.name)) return "--" + c.name;
  if (c.name == "weights" || c.name == "plugin")
    return c.name + " " + fs::path(c.value).filename().string();
  if (c.name == "fxc-binary") return "fxc build";
  if (c.name == "fxc") return "fxc version";
  return c.name;
}

std::vector<std::string> differing_components(const std::vector<KeyComponent>& want,
                                              const std::vector<KeyComponent>& have) {
  // Match the n-th component of a name with the other side's n-th of that name.
  auto index = [](const std::vector<KeyComponent>& v) {
    std::map<std::pair<std::string, int>, const KeyComponent*> m;
    std::map<std::string, int> seen;
    for (const KeyComponent& k : v) m[{k.name, seen[k.name]++}] = &k;
    return m;
  };
  auto w = index(want), h = index(have);
  std::vector<std::string> out;
  std::set<std::string> named;
  auto add = [&](const KeyComponent& k) {
    std::string label = component_label(k);
    if (named.insert(label).second) out.push_back(label);
  };
  std::map<std::string, int> seen;
  for (const KeyComponent& k : want) {
    auto it = h.find({k.name, seen[k.name]++});
    if (it == h.end() || it->second->digest != k.digest) add(k);
  }
  seen.clear();
  for (const KeyComponent& k : have)
    if (!w.count({k.name, seen[k.name]++})) add(k);
  return out;
}

std::string describe_difference(const std::vector<std::string>& differing) {
  if (differing.empty()) return "all components equal";
  std::string list;
  for (size_t i = 0; i < differing.size(); ++i) {
    if (i) list += i + 1 == differing.size() ? " and " : ", ";
    list += differing[i];
  }
  return "miss: " + list + (differing.size() == 1 ? " differs" : " differ") + "; all else equal";
}

// ---------------------------------------------------------------------------------------------
// The Redis client

struct RemoteCache::Impl {
  redisContext* c = nullptr;
  ~Impl() {
    if (c) redisFree(c);
  }
};

namespace {

/// Blocks SIGPIPE on this thread while it lives and discards one raised meanwhile: a server that
/// goes away in the middle of a write is a failed command (EPIPE), not the death of fxc.
class NoSigpipe {
public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      struct timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

struct Reply {
  redisReply* r = nullptr;
  explicit Reply(void* p) : r(static_cast<redisReply*>(p)) {}
  ~Reply() {
    if (r) freeReplyObject(r);
  }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
  Reply(Reply&& o) noexcept : r(o.r) { o.r = nullptr; }
  Reply& operator=(Reply&& o) noexcept {
    std::swap(r, o.r);
    return *this;
  }
};

} // namespace

RemoteCache::RemoteCache(const std::string& url, int64_t ttl_s) : impl_(std::make_unique<Impl>()) {
  if (url.empty()) return;
  std::string error;
  std::optional<RedisUrl> u = parse_redis_url(url, &error);
  if (!u) throw UsageError(error);
  url_ = *u;
  shown_url_ = redact_redis_url(url);
  if (url_.password.empty()) url_.password = env_or("FXC_REMOTE_CACHE_PASSWORD", "");
  // A secret that cannot be read is the server refusing us, not a usage error: see below.
  std::string secret_error;
  if (url_.password.empty())
    if (std::string file = env_or("FXC_REMOTE_CACHE_PASSWORD_FILE", ""); !file.empty()) {
      std::ifstream in(file);
      if (!in) secret_error = "cannot read FXC_REMOTE_CACHE_PASSWORD_FILE " + file;
      std::getline(in, url_.password);
      if (!url_.password.empty() && url_.password.back() == '\r') url_.password.pop_back();
    }
  prefix_ = env_or("FXC_REMOTE_CACHE_PREFIX", "fxc");
  ttl_s_ = ttl_s;
  std::string mv = env_or("FXC_REMOTE_CACHE_MAX_VALUE", "");
  if (mv.empty()) {
    max_value_ = kDefaultMaxValue;
  } else if (std::optional<uint64_t> n = parse_cache_size(mv)) {
    max_value_ = *n;
  } else {
    throw UsageError("FXC_REMOTE_CACHE_MAX_VALUE: invalid size '" + mv + "': " + kCacheSizeSyntax);
  }
  std::string to = env_or("FXC_REMOTE_CACHE_TIMEOUT", "");
  int64_t t = kDefaultTimeoutMs;
  if (!to.empty() && !parse_int(to, 1, 3600 * 1000, &t))
    throw UsageError("FXC_REMOTE_CACHE_TIMEOUT: expected milliseconds (1..3600000), got '" + to +
                     "'");
  timeout_ms_ = int(t);
  enabled_ = true;
  if (!secret_error.empty()) fail(secret_error);
}

RemoteCache::~RemoteCache() {
  if (enabled_ && (stats_.commands > 0 || failed_)) info(summary());
}

std::string RemoteCache::summary() const {
  auto n = [](uint64_t v, const char* one, const char* many) {
    return std::to_string(v) + " " + (v == 1 ? one : many);
  };
  return "remote " + shown_url_ + ": " + n(stats_.hits, "hit", "hits") + ", " +
         n(stats_.misses, "miss", "misses") + ", " + n(stats_.puts, "put", "puts") + ", " +
         std::to_string(stats_.bytes_read) + " bytes read, " +
         std::to_string(stats_.bytes_written) + " bytes written, " +
         n(stats_.commands, "command", "commands") + ", " + format_ms(stats_.ms) +
         (failed_ ? " (stopped after a failure)" : "");
}

void RemoteCache::fail(const std::string& why) {
  if (failed_) return;
  failed_ = true;
  warn("remote cache " + shown_url_ + ": " + why + "; going on without it");
  impl_.reset();
}

bool RemoteCache::connect() {
  if (!enabled()) return false;
  if (impl_ && impl_->c) return true;
  auto t0 = std::chrono::steady_clock::now();
  struct timeval tv{timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000};
  redisContext* c = redisConnectWithTimeout(url_.host.c_str(), url_.port, tv);
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->c = c;
  if (!c || c->err) {
    fail(std::string("cannot connect: ") + (c ? c->errstr : "out of memory"));
    return false;
  }
  if (redisSetTimeout(c, tv) != REDIS_OK) {
    fail("cannot set a timeout");
    return false;
  }
  auto run = [&](std::vector<std::string> argv, const char* what) {
    std::vector<const char*> p;
    std::vector<size_t> n;
    for (const std::string& a : argv) {
      p.push_back(a.data());
      n.push_back(a.size());
    }
    NoSigpipe guard;
    Reply r(redisCommandArgv(c, int(p.size()), p.data(), n.data()));
    ++stats_.commands;
    if (!r.r) return fail(std::string(what) + ": " + c->errstr), false;
    if (r.r->type == REDIS_REPLY_ERROR)
      return fail(std::string(what) + ": " + std::string(r.r->str, r.r->len)), false;
    return true;
  };
  if (!url_.password.empty()) {
    std::vector<std::string> argv = {"AUTH"};
    if (!url_.user.empty()) argv.push_back(url_.user);
    argv.push_back(url_.password);
    if (!run(argv, "authentication refused")) return false;
  }
  if (url_.db != 0 && !run({"SELECT", std::to_string(url_.db)}, "cannot select the database"))
    return false;
  stats_.ms += ms_since(t0);
  return true;
}

namespace {

/// Runs one command on `c`; null with *why set on an I/O error, a timeout or an error reply.
Reply command(redisContext* c, const std::vector<std::string_view>& argv, std::string* why) {
  std::vector<const char*> p;
  std::vector<size_t> n;
  for (std::string_view a : argv) {
    p.push_back(a.data());
    n.push_back(a.size());
  }
  NoSigpipe guard;
  Reply r(redisCommandArgv(c, int(p.size()), p.data(), n.data()));
  if (!r.r) {
    *why = std::string(argv[0]) + " failed: " +
           (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)
                ? std::string("timed out")
                : std::string(c->errstr));
    return Reply(nullptr);
  }
  if (r.r->type == REDIS_REPLY_ERROR) {
    *why = std::string(argv[0]) + " refused: " + std::string(r.r->str, r.r->len);
    return Reply(nullptr);
  }
  return r;
}

} // namespace

// One command, counted; null after a failure (which is warned about once).
#define FXC_REDIS(ret, reply, ...)                                                                 \
  Reply reply(nullptr);                                                                            \
  {                                                                                                \
    if (!connect()) return ret;                                                                    \
    auto t0_ = std::chrono::steady_clock::now();                                                   \
    std::string why_;                                                                              \
    reply = command(impl_->c, {__VA_ARGS__}, &why_);                                               \
    ++stats_.commands;                                                                             \
    stats_.ms += ms_since(t0_);                                                                    \
    if (!reply.r) {                                                                                \
      fail(why_);                                                                                  \
      return ret;                                                                                  \
    }                                                                                              \
  }

namespace {

/// Reads an enveloped string value; nullopt for nil; *why for a bad one.
std::optional<std::string> string_reply(const Reply& r, std::string* why) {
  if (r.r->type == REDIS_REPLY_NIL) return std::nullopt;
  if (r.r->type != REDIS_REPLY_STRING) return *why = "not a string", std::string();
  return std::string(r.r->str, r.r->len);
}

} // namespace

bool RemoteCache::has(const std::string& key) {
  const std::string mkey = prefix_ + ":m:" + key;
  FXC_REDIS(false, r, "EXISTS", mkey);
  return r.r->type == REDIS_REPLY_INTEGER && r.r->integer == 1;
}

std::optional<std::string> RemoteCache::get(const std::string& key) {
  if (!enabled()) return std::nullopt;
  auto t0 = std::chrono::steady_clock::now();
  uint64_t read0 = stats_.bytes_read;
  const std::string mkey = prefix_ + ":m:" + key;
  std::vector<std::string> blob_keys; // the manifest's, once it is read
  // Deletes `keys` (the manifest of an entry that cannot be served, and any of its blobs), so
  // that this compile publishes the entry again.
  auto drop = [&](std::vector<std::string> keys) {
    if (!connect()) return;
    std::vector<std::string_view> argv = {"DEL"};
    for (const std::string& k : keys) argv.push_back(k);
    std::string ignored;
    Reply r = command(impl_->c, argv, &ignored);
    ++stats_.commands;
  };
  // A value that does not check out: the entry is dropped, and this is a miss.
  auto corrupt = [&](const std::string& rkey,
                     const std::string& why) -> std::optional<std::string> {
    warn("remote cache " + shown_url_ + ": discarding corrupt value " + rkey + " (" + why +
         "); treated as a miss");
    std::vector<std::string> keys = blob_keys;
    keys.push_back(mkey);
    if (std::find(keys.begin(), keys.end(), rkey) == keys.end()) keys.push_back(rkey);
    drop(keys);
    ++stats_.misses;
    return std::nullopt;
  };
  auto fetch = [&](const std::string& rkey, std::string* bytes, std::string* why) -> int {
    // 1: found, 0: absent, -1: failed (warned), -2: corrupt (*why)
    if (!connect()) return -1;
    auto t1 = std::chrono::steady_clock::now();
    std::string err;
    Reply r = command(impl_->c, {"GET", rkey}, &err);
    ++stats_.commands;
    stats_.ms += ms_since(t1);
    if (!r.r) return fail(err), -1;
    std::optional<std::string> v = string_reply(r, why);
    if (!v) return 0;
    if (!why->empty()) return -2;
    stats_.bytes_read += v->size();
    std::string_view b = open_envelope(*v, why);
    if (!why->empty()) return -2;
    *bytes = std::string(b);
    return 1;
  };
  std::string mtext, why;
  int got = fetch(mkey, &mtext, &why);
  if (got < 0) return got == -2 ? corrupt(mkey, why) : std::nullopt;
  if (got == 0) {
    ++stats_.misses;
    info("remote miss " + key + " (" + format_ms(ms_since(t0)) + ")");
    return std::nullopt;
  }
  json m = json::parse(mtext, nullptr, false);
  std::string mk;
  std::vector<KeyComponent> comps;
  if (m.is_discarded() || !parse_manifest(mtext, &mk, &comps) || mk != key ||
      !m.contains("artifact") || !m["artifact"].is_string() || !m.contains("size") ||
      !m["size"].is_number_unsigned() || !m.contains("digest") || !m["digest"].is_string() ||
      !m.contains("weights") || !m["weights"].is_array())
    return corrupt(mkey, "not a manifest of this key");
  const uint64_t size = m["size"].get<uint64_t>();
  if (size > max_value_) {
    ++stats_.misses;
    info("remote entry " + key + " is " + std::to_string(size) + " bytes, over the limit " +
         std::to_string(max_value_) + ": not fetched");
    return std::nullopt;
  }
  std::string artifact;
  const std::string akey = prefix_ + ":b:" + m["artifact"].get<std::string>();
  blob_keys.push_back(akey);
  for (const json& w : m["weights"])
    if (w.is_string()) blob_keys.push_back(prefix_ + ":b:" + w.get<std::string>());
  got = fetch(akey, &artifact, &why);
  if (got == -1) return std::nullopt;
  if (got == -2) return corrupt(akey, why);
  if (got == 0) {
    ++stats_.misses;
    info("remote miss " + key + ": its artifact blob has expired; it is published again");
    drop({mkey});
    return std::nullopt;
  }
  std::vector<std::string> weights;
  for (const json& w : m["weights"]) {
    if (!w.is_string()) return corrupt(mkey, "not a manifest of this key");
    const std::string wkey = prefix_ + ":b:" + w.get<std::string>();
    std::string bytes;
    got = fetch(wkey, &bytes, &why);
    if (got == -1) return std::nullopt;
    if (got == -2) return corrupt(wkey, why);
    if (got == 0) {
      ++stats_.misses;
      info("remote miss " + key + ": a weight blob has expired; it is published again");
      drop({mkey});
      return std::nullopt;
    }
    if (content_digest(bytes) != w.get<std::string>()) return corrupt(wkey, "digest mismatch");
    weights.push_back(std::move(bytes));
  }
  std::string payload = artifact;
  if (!weights.empty()) {
    payload = join_artifact(artifact, weights, &why);
    if (payload.empty()) return corrupt(akey, why);
  }
  if (payload.size() != size || content_digest(payload) != m["digest"].get<std::string>())
    return corrupt(mkey, "the joined artifact is not the one published");
  ++stats_.hits;
  info("remote hit " + key + ": " + std::to_string(stats_.bytes_read - read0) + " bytes in " +
       std::to_string(2 + weights.size()) + " values (" + format_ms(ms_since(t0)) + ")");
  return payload;
}

bool RemoteCache::put(const std::string& key, const std::vector<KeyComponent>& components,
                      const std::string& payload) {
  if (!enabled()) return false;
  auto t0 = std::chrono::steady_clock::now();
  uint64_t written0 = stats_.bytes_written;
  if (payload.size() > max_value_) {
    info("not publishing " + key + ": " + std::to_string(payload.size()) +
         " bytes, over the remote value limit " + std::to_string(max_value_));
    return false;
  }
  const std::string mkey = prefix_ + ":m:" + key;
  // Already published (by another host): nothing to write.
  if (has(key)) {
    info("remote put " + key + ": already there");
    return true;
  } else if (!enabled()) {
    return false;
  }
  std::optional<SplitArtifact> split = split_artifact(payload);
  const std::string& artifact = split ? split->stripped : payload;
  std::vector<std::pair<std::string, const std::string*>> blobs;
  blobs.push_back({content_digest(artifact), &artifact});
  if (split)
    for (size_t i = 0; i < split->weights.size(); ++i)
      blobs.push_back({split->weights[i].first, &split->weight_bytes[i]});
  const std::string ttl = std::to_string(ttl_s_);
  size_t fresh = 0;
  // Blobs first, each once: SET NX, or a new expiry for one that is there already (it must
  // outlive the manifest that refers to it).
  for (const auto& [digest, bytes] : blobs) {
    const std::string bkey = prefix_ + ":b:" + digest;
    const std::string value = envelope(*bytes);
    bool stored = false;
    if (ttl_s_ > 0) {
      FXC_REDIS(false, r, "SET", bkey, value, "EX", ttl, "NX");
      stored = r.r->type == REDIS_REPLY_STATUS;
    } else {
      FXC_REDIS(false, r, "SET", bkey, value, "NX");
      stored = r.r->type == REDIS_REPLY_STATUS;
    }
    if (stored) {
      ++fresh;
      stats_.bytes_written += value.size();
    } else if (ttl_s_ > 0) {
      FXC_REDIS(false, r, "EXPIRE", bkey, ttl);
    }
  }
  json extra = json::object();
  extra["artifact"] = blobs[0].first;
  extra["size"] = uint64_t(payload.size());
  extra["digest"] = content_digest(payload);
  json ws = json::array();
  for (size_t i = 1; i < blobs.size(); ++i) ws.push_back(blobs[i].first);
  extra["weights"] = ws;
  const std::string manifest = envelope(manifest_json(key, components, extra.dump()));
  bool won = false;
  if (ttl_s_ > 0) {
    FXC_REDIS(false, r, "SET", mkey, manifest, "EX", ttl, "NX");
    won = r.r->type == REDIS_REPLY_STATUS;
  } else {
    FXC_REDIS(false, r, "SET", mkey, manifest, "NX");
    won = r.r->type == REDIS_REPLY_STATUS;
  }
  if (won) {
    ++stats_.puts;
    stats_.bytes_written += manifest.size();
  }
  info("remote put " + key + ": " + (won ? "published" : "another host published it first") + ", " +
       std::to_string(stats_.bytes_written - written0) + " bytes in " + std::to_string(fresh) +
       " new of " + std::to_string(blobs.size()) + " blobs (" + format_ms(ms_since(t0)) + ")");
  return true;
}

std::vector<std::pair<std::string, std::vector<KeyComponent>>>
RemoteCache::manifests(size_t limit) {
  std::vector<std::pair<std::string, std::vector<KeyComponent>>> out;
  std::vector<std::string> keys;
  std::string cursor = "0";
  const std::string pattern = prefix_ + ":m:*";
  do {
    FXC_REDIS(out, r, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000");
    if (r.r->type != REDIS_REPLY_ARRAY || r.r->elements != 2) return out;
    cursor = std::string(r.r->element[0]->str, r.r->element[0]->len);
    const redisReply* ks = r.r->element[1];
    for (size_t i = 0; i < ks->elements && keys.size() < limit; ++i)
      keys.emplace_back(ks->element[i]->str, ks->element[i]->len);
  } while (cursor != "0" && keys.size() < limit);
  std::sort(keys.begin(), keys.end());
  for (const std::string& k : keys) {
    FXC_REDIS(out, r, "GET", k);
    std::string why;
    std::optional<std::string> v = string_reply(r, &why);
    if (!v || !why.empty()) continue;
    stats_.bytes_read += v->size();
    std::string_view text = open_envelope(*v, &why);
    std::string key;
    std::vector<KeyComponent> comps;
    if (why.empty() && parse_manifest(text, &key, &comps)) out.push_back({key, std::move(comps)});
  }
  return out;
}

void RemoteCache::pull_autotune(const std::string& dir) {
  if (!enabled() || dir.empty()) return;
  const std::string hkey = prefix_ + ":autotune";
  FXC_REDIS(, r, "HGETALL", hkey);
  if (r.r->type != REDIS_REPLY_ARRAY) return;
  AutotuneCache cache(dir);
  std::string note;
  cache.load(&note);
  size_t added = 0;
  for (size_t i = 0; i + 1 < r.r->elements; i += 2) {
    std::string field(r.r->element[i]->str, r.r->element[i]->len);
    std::string why;
    std::string_view text =
        open_envelope(std::string_view(r.r->element[i + 1]->str, r.r->element[i + 1]->len), &why);
    std::map<std::string, AutotuneEntry> one;
    if (!why.empty() || !AutotuneCache::from_json(std::string(text), &one, &why) ||
        one.size() != 1 || one.begin()->first != field) {
      warn("remote cache " + shown_url_ + ": discarding corrupt tuning entry " + field);
      std::string ignored;
      Reply d = command(impl_->c, {"HDEL", hkey, field}, &ignored);
      continue;
    }
    stats_.bytes_read += r.r->element[i + 1]->len;
    size_t slash = field.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string device = field.substr(0, slash), key = field.substr(slash + 1);
    if (cache.lookup(device, key)) continue;
    cache.insert(device, key, one.begin()->second);
    ++added;
  }
  if (added == 0) return;
  std::string error;
  if (!cache.save(&error)) return warn("cannot save the remote tuning choices: " + error);
  info("remote tuning: " + std::to_string(added) + " choices merged into " + cache.path());
}

void RemoteCache::push_autotune(const std::string& dir) {
  if (!enabled() || dir.empty()) return;
  AutotuneCache cache(dir);
  std::string text, why;
  std::ifstream in(cache.path(), std::ios::binary);
  if (!in) return;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::map<std::string, AutotuneEntry> entries;
  if (!AutotuneCache::from_json(ss.str(), &entries, &why)) return;
  const std::string hkey = prefix_ + ":autotune";
  size_t added = 0;
  for (const auto& [field, e] : entries) {
    const std::string value = envelope(AutotuneCache::to_json({{field, e}}));
    FXC_REDIS(, r, "HSETNX", hkey, field, value);
    if (r.r->type == REDIS_REPLY_INTEGER && r.r->integer == 1) {
      ++added;
      stats_.bytes_written += value.size();
    }
  }
  if (ttl_s_ > 0 && added > 0) {
    FXC_REDIS(, r, "EXPIRE", hkey, std::to_string(ttl_s_));
  }
  if (added) info("remote tuning: " + std::to_string(added) + " choices published");
}

#undef FXC_REDIS

// ---------------------------------------------------------------------------------------------
// The two levels

namespace {

/// `<dir>/<kk>/<key>.manifest`, beside the entry.
std::string local_manifest_path(const CompileCache& c, const std::string& key) {
  std::string e = c.entry_path(key);
  return e.substr(0, e.size() - 6) + ".manifest";
}

void write_local_manifest(const CompileCacheUse& cu) {
  if (!cu.cache.enabled()) return;
  const std::string path = local_manifest_path(cu.cache, cu.key);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << manifest_json(cu.key, cu.components);
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

/// On a local miss: the remote entry, stored locally; nullopt on a remote miss.
std::optional<std::string> remote_fill(CompileCacheUse& cu, const Options& o) {
  if (!cu.remote || !cu.remote->enabled()) return std::nullopt;
  std::optional<std::string> bytes = cu.remote->get(cu.key);
  if (!bytes) {
    if (o.max_autotune) cu.remote->pull_autotune(cache_directory(o));
    return std::nullopt;
  }
  if (cu.cache.enabled() && cu.cache.store(cu.key, *bytes)) write_local_manifest(cu);
  return bytes;
}

} // namespace

bool tiered_write_hit(CompileCacheUse& cu, const Options& o, const std::string& path) {
  if (!cu.lookup) {
    if (cu.remote && o.max_autotune) cu.remote->pull_autotune(cache_directory(o));
    return false;
  }
  auto t0 = std::chrono::steady_clock::now();
  if (cu.cache.enabled() && cu.cache.write_hit(cu.key, path)) {
    info("local hit " + cu.key + " (" + format_ms(ms_since(t0)) + ")");
    return true;
  }
  if (cu.cache.enabled()) info("local miss " + cu.key + " (" + format_ms(ms_since(t0)) + ")");
  std::optional<std::string> bytes = remote_fill(cu, o);
  if (!bytes) return false;
  if (!cu.cache.enabled() || !cu.cache.write_hit(cu.key, path)) {
    OutputFile out(path);
    out.write(*bytes);
    out.commit();
  }
  return true;
}

std::optional<std::string> tiered_lookup(CompileCacheUse& cu, const Options& o) {
  if (!cu.lookup) {
    if (cu.remote && o.max_autotune) cu.remote->pull_autotune(cache_directory(o));
    return std::nullopt;
  }
  auto t0 = std::chrono::steady_clock::now();
  if (cu.cache.enabled()) {
    if (std::optional<std::string> b = cu.cache.lookup(cu.key)) {
      info("local hit " + cu.key + " (" + format_ms(ms_since(t0)) + ")");
      return b;
    }
    info("local miss " + cu.key + " (" + format_ms(ms_since(t0)) + ")");
  }
  return remote_fill(cu, o);
}

void tiered_store(CompileCacheUse& cu, const Options& o, std::string_view bytes) {
  auto t0 = std::chrono::steady_clock::now();
  if (cu.cache.enabled() && cu.cache.store(cu.key, bytes)) {
    write_local_manifest(cu);
    info("local put " + cu.key + ": " + std::to_string(bytes.size()) + " bytes (" +
         format_ms(ms_since(t0)) + ")");
  }
  if (!cu.remote || !cu.remote->enabled() || cu.key.empty()) return;
  cu.remote->put(cu.key, cu.components, std::string(bytes));
  if (o.max_autotune) cu.remote->push_autotune(cache_directory(o));
}

void tiered_store_file(CompileCacheUse& cu, const Options& o, const std::string& path) {
  if (cu.remote && cu.remote->enabled() && !cu.key.empty()) {
    tiered_store(cu, o, ArtifactBytes::map_file(path)->view());
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  if (cu.cache.enabled() && cu.cache.store_file(cu.key, path)) {
    write_local_manifest(cu);
    info("local put " + cu.key + " from " + path + " (" + format_ms(ms_since(t0)) + ")");
  }
}

// ---------------------------------------------------------------------------------------------
// --explain-cache

namespace {

struct Nearest {
  std::string key;
  std::vector<std::string> differing;
  size_t candidates = 0;
};

Nearest nearest(const std::vector<KeyComponent>& want,
                const std::vector<std::pair<std::string, std::vector<KeyComponent>>>& entries) {
  Nearest best;
  best.candidates = entries.size();
  bool found = false;
  for (const auto& [key, comps] : entries) {
    std::vector<std::string> d = differing_components(want, comps);
    if (!found || d.size() < best.differing.size() ||
        (d.size() == best.differing.size() && key < best.key)) {
      best.key = key;
      best.differing = d;
      found = true;
    }
  }
  return best;
}

std::string explain_level(const Nearest& n, const char* what) {
  if (n.candidates == 0) return std::string("miss: no ") + what + " entries to compare with";
  return describe_difference(n.differing) + " (nearest of " + std::to_string(n.candidates) +
         (n.candidates == 1 ? " entry: " : " entries: ") + n.key + ")";
}

std::string shorten(const std::string& s) {
  std::string one = s;
  std::replace(one.begin(), one.end(), '\n', ' ');
  return one.size() <= 72 ? one : one.substr(0, 69) + "...";
}

} // namespace

int explain_cache(const Options& o, const Graph& g,
                  const std::vector<std::string>& external_files) {
  CacheKeyBuilder k = compile_cache_key(o, "fxo", code_target(o), g, external_files);
  const std::string key = k.key();
  const std::vector<KeyComponent>& comps = k.components();
  std::string out = "cache key " + key + "\n";
  size_t width = 0;
  for (const KeyComponent& c : comps) width = std::max(width, component_label(c).size());
  auto row = [&](const std::string& label, const std::string& digest, const std::string& value) {
    std::string l = label;
    l.resize(std::max(width, l.size()) + 2, ' ');
    out += "  " + l + digest + "  " + shorten(value) + "\n";
  };
  for (const KeyComponent& c : comps) row(component_label(c), c.digest, c.value);
  const std::string dir = cache_directory(o);
  if (o.max_autotune) {
    // The choices a tuned compile starts from. Not in the key: a tuned artifact records the
    // choices it made, and the device they were measured on is.
    AutotuneCache tc(dir);
    std::string db = dir.empty() ? "" : tc.path();
    std::string digest = "(none)";
    if (!db.empty() && fs::exists(db)) digest = file_digest(db);
    row("tuning database", digest, (db.empty() ? "no cache directory" : db) + " (not in the key)");
  }
  // Local: the entry, else the manifests beside the other entries.
  CompileCache local(dir);
  if (!local.enabled()) {
    out += "local: off\n";
  } else if (fs::exists(local.entry_path(key))) {
    out += "local " + dir + ": hit\n";
  } else {
    std::vector<std::pair<std::string, std::vector<KeyComponent>>> entries;
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".manifest") files.push_back(it->path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      std::string mk;
      std::vector<KeyComponent> mc;
      // Only entries that are still there (eviction removes both; a crash may leave one).
      std::string entry = f.substr(0, f.size() - 9) + ".entry";
      if (parse_manifest(ss.str(), &mk, &mc) && fs::exists(entry)) entries.push_back({mk, mc});
    }
    out += "local " + dir + ": " + explain_level(nearest(comps, entries), "local") + "\n";
  }
  std::string url = remote_cache_url(o);
  if (url.empty()) {
    out += "remote: off\n";
  } else {
    RemoteCache remote(url, o.remote_cache_ttl);
    bool hit = remote.has(key);
    if (!remote.enabled())
      out += "remote " + remote.shown_url() + ": unavailable\n";
    else if (hit)
      out += "remote " + remote.shown_url() + ": hit\n";
    else {
      auto entries = remote.manifests(10000);
      out += "remote " + remote.shown_url() + ": " +
             (remote.enabled() ? explain_level(nearest(comps, entries), "remote") : "unavailable") +
             "\n";
    }
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

} // namespace fxc
