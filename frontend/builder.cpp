// Building graphs in code: binds arguments, infers metadata and names new nodes uniquely.
#include "frontend/builder.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/meta.h"

#include <cassert>
#include <cstring>
#include <memory>

namespace fxc {

namespace {

// The suffix n when `name` is `hint_<n>` (n >= 1, no leading zeros), else 0.
int64_t suffix_of(std::string_view name, std::string_view hint) {
  if (name.size() < hint.size() + 2 || name.compare(0, hint.size(), hint) != 0 ||
      name[hint.size()] != '_')
    return 0;
  std::string_view digits = name.substr(hint.size() + 1);
  if (digits.size() > 18 || digits[0] == '0') return 0;
  int64_t n = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return 0;
    n = n * 10 + (ch - '0');
  }
  return n;
}

// "aten.addmm.default" -> "addmm"
std::string base_name(std::string_view target) {
  size_t a = target.find('.');
  size_t b = target.find('.', a + 1);
  if (a == std::string_view::npos) return std::string(target);
  return std::string(
      target.substr(a + 1, b == std::string_view::npos ? std::string_view::npos : b - a - 1));
}

} // namespace

NameCache::NameCache(const Graph& g) {
  used_.reserve(g.values.size() + g.nodes.size());
  for (const Value& v : g.values) used_.insert(v.name);
  for (const Node& n : g.nodes) used_.insert(n.name);
}

std::string NameCache::peek(std::string_view hint) {
  std::string h(hint);
  if (!used_.count(h)) return h;
  int64_t& n = next_[h]; // every suffix below n is taken
  if (n < 1) n = 1;
  for (;; ++n) {
    std::string cand = h + "_" + std::to_string(n);
    if (!used_.count(cand)) return cand;
  }
}

std::string NameCache::take(std::string_view hint) {
  std::string name = peek(hint);
  used_.insert(name);
  return name;
}

namespace {

bool name_used(const Graph& g, const std::string& name) {
  for (const Value& v : g.values)
    if (v.name.size() == name.size() && v.name == name) return true;
  for (const Node& n : g.nodes)
    if (n.name.size() == name.size() && n.name == name) return true;
  return false;
}

// The per-thread NameCache for the graph add_node last extended without one of its own. It
// catches up with values and nodes appended since; its proposals are checked against the graph,
// and a stale cache (another graph at the same address, names changed in place) is rebuilt.
struct ImplicitNames {
  const Graph* graph = nullptr;
  size_t values = 0, nodes = 0;
  std::unique_ptr<NameCache> names;

  void rebuild(const Graph& g) {
    graph = &g;
    names = std::make_unique<NameCache>(g);
    values = g.values.size();
    nodes = g.nodes.size();
  }
  std::string fresh(const Graph& g, std::string_view hint) {
    if (graph != &g || g.values.size() < values || g.nodes.size() < nodes) rebuild(g);
    for (; values < g.values.size(); ++values) names->add(g.values[values].name);
    for (; nodes < g.nodes.size(); ++nodes) names->add(g.nodes[nodes].name);
    std::string name = names->peek(hint);
    if (!name_used(g, name)) return name;
    rebuild(g);
    return names->peek(hint);
  }
};

std::string fresh_name(const Graph& g, std::string_view hint, NameCache* names) {
  if (names) return names->take(hint);
  thread_local ImplicitNames implicit;
  return implicit.fresh(g, hint);
}

} // namespace

std::string unique_name(const Graph& g, std::string_view hint) {
  // One pass: is `hint` taken, and which suffixes are? The smallest free suffix is at most the
  // number of names carrying one, plus one.
  bool taken = false;
  std::vector<bool> used_suffix;
  auto see = [&](const std::string& name) {
    if (name.size() < hint.size() || std::memcmp(name.data(), hint.data(), hint.size()) != 0)
      return;
    if (name.size() == hint.size()) {
      taken = true;
      return;
    }
    int64_t s = suffix_of(name, hint);
    if (s <= 0 || s > int64_t(g.values.size() + g.nodes.size()) + 1) return;
    if (used_suffix.size() <= size_t(s)) used_suffix.resize(size_t(s) + 1, false);
    used_suffix[size_t(s)] = true;
  };
  for (const Value& v : g.values) see(v.name);
  for (const Node& n : g.nodes) see(n.name);
  if (!taken) return std::string(hint);
  size_t s = 1;
  while (s < used_suffix.size() && used_suffix[s]) ++s;
  return std::string(hint) + "_" + std::to_string(s);
}

std::vector<ValueId> add_node(Graph& g, std::string_view target, std::vector<CallArg> call,
                              std::string_view name_hint, NameCache* names) {
  const std::string t = normalize_target(target);
  const std::string hint = name_hint.empty() ? base_name(t) : std::string(name_hint);
  Node n;
  n.target = t;
  n.schema = find_schema(t);
  if (!n.schema) throw Error(g.source, unknown_op_message(t), hint, t);
  std::string err;
  if (!bind_args(*n.schema, call, &n.args, &n.given, &err)) throw Error(g.source, err, hint, t);
  for (ValueId v : n.tensor_inputs())
    if (v < 0 || size_t(v) >= g.values.size())
      throw Error(g.source, "argument refers to unknown value #" + std::to_string(v), hint, t);
  // The name is recorded in `names` only once the node is built, so failures leave no trace.
  n.name = names ? names->peek(hint) : fresh_name(g, hint, nullptr);
  MetaFn fn = find_meta(t);
  if (!fn) throw Error(g.source, "no meta function for this op", n.name, t);
  std::vector<TensorMeta> metas = fn(g, n);
  if (names) names->add(n.name);
  const auto& rets = n.schema->returns;
  const bool list_return = rets.size() == 1 && rets[0].is_list;
  assert((list_return || metas.size() == rets.size()) && "meta function disagrees with the schema");
  const int32_t index = int32_t(g.nodes.size());
  for (size_t i = 0; i < metas.size(); ++i) {
    // A single output takes the node's name; several are "getitem", "getitem_1", ... as in FX.
    std::string vname =
        metas.size() == 1 && !list_return ? n.name : fresh_name(g, "getitem", names);
    ValueId v = g.add_value(std::move(vname), std::move(metas[i]));
    g.values[size_t(v)].producer = index;
    g.values[size_t(v)].output_index = int32_t(i);
    n.outputs.push_back(v);
  }
  std::vector<ValueId> outs = n.outputs;
  g.nodes.push_back(std::move(n));
  return outs;
}

ValueId add_node1(Graph& g, std::string_view target, std::vector<CallArg> call,
                  std::string_view name_hint, NameCache* names) {
  std::vector<ValueId> outs = add_node(g, target, std::move(call), name_hint, names);
  assert(outs.size() == 1 && "add_node1 used for an op without exactly one output");
  return outs[0];
}

} // namespace fxc
