// Default and min-cut rematerialization partitioners over the joint forward+backward graph.
#include "passes/partition.h"

#include "frontend/log.h"
#include "frontend/ops.h"
#include "frontend/printer.h"
#include "frontend/schema.h"
#include "passes/aot_ops.h"
#include "passes/decompose.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <deque>
#include <limits>
#include <set>
#include <sstream>

namespace fxc {

namespace {

/// Whether the partitioner may recompute n in the backward: views, and ops declared cheap
/// (pointwise, factories; the Recomputable tag in frontend/ops.def), as PyTorch's partitioner
/// keeps an allowlist. Everything else is never recomputed.
bool recomputable(const Node& n) {
  if (n.schema && n.schema->is_view) return true;
  return target_has_tag(n.target, OpTag::Recomputable);
}

/// Dinic's max-flow on int64 capacities.
class MaxFlow {
public:
  static constexpr int64_t kInf = int64_t(1) << 60;
  explicit MaxFlow(int n) : adj_(size_t(n)), level_(size_t(n)), it_(size_t(n)) {}

  void add_edge(int u, int v, int64_t cap) {
    adj_[size_t(u)].push_back(int(edges_.size()));
    edges_.push_back({v, cap});
    adj_[size_t(v)].push_back(int(edges_.size()));
    edges_.push_back({u, 0});
  }

  int64_t run(int s, int t) {
    int64_t flow = 0;
    while (bfs(s, t)) {
      std::fill(it_.begin(), it_.end(), 0);
      while (int64_t f = dfs(s, t, kInf)) flow += f;
    }
    return flow;
  }

  /// Nodes reachable from s in the residual graph (the source side of a minimum cut).
  std::vector<char> source_side(int s) const {
    std::vector<char> seen(adj_.size(), 0);
    std::deque<int> q{s};
    seen[size_t(s)] = 1;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (int id : adj_[size_t(u)]) {
        const Edge& e = edges_[size_t(id)];
        if (e.cap > 0 && !seen[size_t(e.to)]) {
          seen[size_t(e.to)] = 1;
          q.push_back(e.to);
        }
      }
    }
    return seen;
  }

private:
  struct Edge {
    int to;
    int64_t cap;
  };

  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::deque<int> q{s};
    level_[size_t(s)] = 0;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (int id : adj_[size_t(u)]) {
        const Edge& e = edges_[size_t(id)];
        if (e.cap > 0 && level_[size_t(e.to)] < 0) {
          level_[size_t(e.to)] = level_[size_t(u)] + 1;
          q.push_back(e.to);
        }
      }
    }
    return level_[size_t(t)] >= 0;
  }

  int64_t dfs(int u, int t, int64_t pushed) {
    if (u == t) return pushed;
    for (int& k = it_[size_t(u)]; k < int(adj_[size_t(u)].size()); ++k) {
      int id = adj_[size_t(u)][size_t(k)];
      Edge& e = edges_[size_t(id)];
      if (e.cap <= 0 || level_[size_t(e.to)] != level_[size_t(u)] + 1) continue;
      int64_t f = dfs(e.to, t, std::min(pushed, e.cap));
      if (f == 0) continue;
      e.cap -= f;
      edges_[size_t(id ^ 1)].cap += f;
      return f;
    }
    return 0;
  }

  std::vector<std::vector<int>> adj_;
  std::vector<Edge> edges_;
  std::vector<int> level_, it_;
};

/// Per-value facts about the joint graph that both strategies use.
struct JointInfo {
  std::vector<char> live;        ///< an ancestor of some output
  std::vector<char> tangent_dep; ///< depends on a tangent: must be computed in the backward
  std::vector<char> fw_needed;   ///< an ancestor of a forward output
  std::vector<char> is_primal;
  std::vector<std::vector<int>> users; ///< nodes reading each value
};

/// Marks the values `roots` depend on; stops at values in `stop` (which are marked too).
std::vector<char> ancestors(const Graph& g, const std::vector<ValueId>& roots,
                            const std::vector<char>* stop = nullptr) {
  std::vector<char> mark(g.values.size(), 0);
  std::vector<ValueId> work(roots.begin(), roots.end());
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    if (mark[size_t(v)]) continue;
    mark[size_t(v)] = 1;
    if (stop && (*stop)[size_t(v)]) continue;
    int32_t p = g.values[size_t(v)].producer;
    if (p < 0) continue;
    const Node& n = g.nodes[size_t(p)];
    for (ValueId o : n.outputs) work.push_back(o); // a node computes all of its outputs
    for (ValueId in : n.tensor_inputs()) work.push_back(in);
  }
  return mark;
}

JointInfo analyse(const JointGraph& jg) {
  const Graph& g = jg.graph;
  JointInfo info;
  size_t nv = g.values.size();
  info.live = ancestors(g, g.outputs);
  std::vector<ValueId> fw_outs(g.outputs.begin(), g.outputs.begin() + long(jg.num_fw_outputs));
  info.fw_needed = ancestors(g, fw_outs);
  info.tangent_dep.assign(nv, 0);
  info.is_primal.assign(nv, 0);
  for (size_t k = 0; k < g.inputs.size(); ++k)
    (k < jg.num_primals ? info.is_primal : info.tangent_dep)[size_t(g.inputs[k].value)] = 1;
  info.users.assign(nv, {});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    bool dep = false;
    for (ValueId in : n.tensor_inputs()) {
      dep = dep || info.tangent_dep[size_t(in)];
      std::vector<int>& u = info.users[size_t(in)];
      if (u.empty() || u.back() != int(i)) u.push_back(int(i));
    }
    for (ValueId o : n.outputs) info.tangent_dep[size_t(o)] = dep;
  }
  return info;
}

/// Default partition: save every forward value (or input) that the backward reads.
std::vector<char> default_saved(const JointGraph& jg, const JointInfo& info) {
  const Graph& g = jg.graph;
  std::vector<char> fw_node(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].outputs) fw_node[i] = fw_node[i] || info.fw_needed[size_t(o)];
  std::vector<char> saved(g.values.size(), 0);
  auto forward_value = [&](ValueId v) {
    int32_t p = g.values[size_t(v)].producer;
    return p < 0 ? bool(info.is_primal[size_t(v)]) : bool(fw_node[size_t(p)]);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    bool live = false;
    for (ValueId o : n.outputs) live = live || info.live[size_t(o)];
    if (fw_node[i] || !live) continue;
    for (ValueId in : n.tensor_inputs())
      if (forward_value(in)) saved[size_t(in)] = 1;
  }
  for (size_t k = jg.num_fw_outputs; k < g.outputs.size(); ++k)
    if (forward_value(g.outputs[k])) saved[size_t(g.outputs[k])] = 1;
  return saved;
}

/// Min-cut partition: the cheapest set of values separating the inputs and unrecomputable
/// forward values from everything the backward must compute.
std::vector<char> min_cut_saved(const JointGraph& jg, const JointInfo& info) {
  const Graph& g = jg.graph;
  int nv = int(g.values.size());
  int source = 2 * nv, sink = 2 * nv + 1;
  MaxFlow flow(2 * nv + 2);
  auto in_of = [](ValueId v) { return 2 * int(v); };
  auto out_of = [](ValueId v) { return 2 * int(v) + 1; };

  // Distance (in uses) from each value to the backward: ties in bytes prefer saving values
  // close to the backward, as PyTorch's weighting by dist_from_bw does.
  std::vector<int64_t> dist(size_t(nv), 1 << 20);
  for (ValueId v = 0; v < nv; ++v)
    if (info.tangent_dep[size_t(v)]) dist[size_t(v)] = 0;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    int64_t d = 1 << 20;
    for (ValueId o : n.outputs) d = std::min(d, dist[size_t(o)]);
    for (ValueId in : n.tensor_inputs()) dist[size_t(in)] = std::min(dist[size_t(in)], d + 1);
  }

  for (ValueId v = 0; v < nv; ++v) {
    if (!info.live[size_t(v)]) continue;
    if (info.tangent_dep[size_t(v)]) {
      flow.add_edge(in_of(v), sink, MaxFlow::kInf);
      continue;
    }
    int32_t p = g.values[size_t(v)].producer;
    bool banned = p >= 0 && !recomputable(g.nodes[size_t(p)]);
    if (info.is_primal[size_t(v)] || (banned && info.fw_needed[size_t(v)]))
      flow.add_edge(source, in_of(v), MaxFlow::kInf);
    int64_t weight =
        value_bytes(g.values[size_t(v)].meta) * 1024 + std::min<int64_t>(dist[size_t(v)], 1000);
    flow.add_edge(in_of(v), out_of(v), weight);
    for (int user : info.users[size_t(v)])
      for (ValueId o : g.nodes[size_t(user)].outputs)
        if (info.live[size_t(o)]) flow.add_edge(out_of(v), in_of(o), MaxFlow::kInf);
  }
  // Gradients that do not depend on a tangent must still be available to the backward.
  for (size_t k = jg.num_fw_outputs; k < g.outputs.size(); ++k) {
    ValueId o = g.outputs[k];
    if (!info.tangent_dep[size_t(o)]) flow.add_edge(out_of(o), sink, MaxFlow::kInf);
  }
  flow.run(source, sink);
  std::vector<char> side = flow.source_side(source);
  std::vector<char> saved(size_t(nv), 0);
  for (ValueId v = 0; v < nv; ++v)
    if (info.live[size_t(v)] && !info.tangent_dep[size_t(v)] && side[size_t(in_of(v))] &&
        !side[size_t(out_of(v))])
      saved[size_t(v)] = 1;
  return saved;
}

} // namespace

std::string_view partition_strategy_name(PartitionStrategy s) {
  return s == PartitionStrategy::Default ? "default" : "min-cut rematerialization";
}

namespace {

// --log=aot: the partition's sizes, what it saves and recomputes (INFO: counts and bytes;
// DEBUG: every saved value and recomputed node).
void log_partition(const AotGraphs& r, PartitionStrategy strategy, const Graph& joint) {
  if (!log_enabled(Component::Aot, Level::Info)) return;
  std::string text = std::string(partition_strategy_name(strategy)) + " partition of " +
                     joint.name + "'s joint graph (" + std::to_string(joint.nodes.size()) +
                     " nodes): forward " + std::to_string(r.forward.nodes.size()) +
                     " nodes, backward " + std::to_string(r.backward.nodes.size()) +
                     " nodes; saves " + std::to_string(r.saved.size()) + " tensors (" +
                     std::to_string(r.saved_bytes) + " bytes), recomputes " +
                     std::to_string(r.recomputed.size()) + " nodes in the backward";
  if (strategy != PartitionStrategy::Default)
    text += "; the default partition saves " + std::to_string(r.default_saved_values) +
            " tensors (" + std::to_string(r.default_saved_bytes) + " bytes)";
  log_message(Component::Aot, Level::Info, text);
  if (!log_enabled(Component::Aot, Level::Debug)) return;
  std::string detail;
  for (const SavedValue& s : r.saved)
    detail += "saved " + s.name + ": " + format_meta(s.meta) + ", " + std::to_string(s.bytes) +
              " bytes\n";
  for (size_t k = 0; k < r.recomputed.size(); ++k)
    detail += "recomputed " + r.recomputed[k] + " (" + r.recomputed_targets[k] + ")\n";
  if (!detail.empty()) {
    detail.pop_back();
    log_message(Component::Aot, Level::Debug, detail);
  }
}

} // namespace

AotGraphs partition_joint(const JointGraph& jg, PartitionStrategy strategy) {
  const Graph& j = jg.graph;
  JointInfo info = analyse(jg);
  std::vector<char> saved =
      strategy == PartitionStrategy::Default ? default_saved(jg, info) : min_cut_saved(jg, info);
  AotGraphs r;
  r.num_user_outputs = jg.num_fw_outputs;
  r.grad_names = jg.grad_names;
  r.grad_input_index = jg.grad_input_index;
  r.tangent_output_index = jg.tangent_output_index;
  // What the default partitioner saves, for comparison in the log.
  std::vector<char> baseline =
      strategy == PartitionStrategy::Default ? saved : default_saved(jg, info);
  for (ValueId v = 0; v < ValueId(j.values.size()); ++v)
    if (baseline[size_t(v)]) {
      ++r.default_saved_values;
      r.default_saved_bytes += value_bytes(j.values[size_t(v)].meta);
    }
  std::vector<ValueId> saved_ids;
  for (ValueId v = 0; v < ValueId(j.values.size()); ++v)
    if (saved[size_t(v)]) {
      saved_ids.push_back(v);
      const Value& val = j.values[size_t(v)];
      r.saved.push_back({val.name, val.meta, value_bytes(val.meta)});
      r.saved_bytes += value_bytes(val.meta);
    }

  // Forward: everything the user outputs and the saved values need.
  std::vector<ValueId> fw_roots(j.outputs.begin(), j.outputs.begin() + long(jg.num_fw_outputs));
  fw_roots.insert(fw_roots.end(), saved_ids.begin(), saved_ids.end());
  std::vector<char> in_fw = ancestors(j, fw_roots);
  std::vector<bool> keep(j.inputs.size(), false);
  for (size_t k = 0; k < jg.num_primals; ++k) keep[k] = true;
  NameCache fnames(r.forward);
  ValueMap fmap = copy_inputs(j, r.forward, keep, &fnames);
  std::vector<char> fw_node(j.nodes.size(), 0);
  for (size_t i = 0; i < j.nodes.size(); ++i) {
    const Node& n = j.nodes[i];
    bool any = false;
    for (ValueId o : n.outputs) any = any || in_fw[size_t(o)];
    if (!any) continue;
    fw_node[i] = 1;
    copy_node(j, n, r.forward, fmap, &fnames);
  }
  for (ValueId v : fw_roots) {
    assert(fmap[size_t(v)] != kNoValue && "forward output not computed by the forward graph");
    r.forward.outputs.push_back(fmap[size_t(v)]);
  }

  // Backward: from the gradients back to the saved values and tangents.
  r.backward.source = j.source;
  r.backward.name = j.name;
  NameCache bnames(r.backward);
  ValueMap bmap(j.values.size(), kNoValue);
  std::vector<char> stop(j.values.size(), 0);
  auto add_input = [&](ValueId v) {
    const Value& val = j.values[size_t(v)];
    ValueId nv = r.backward.add_value(bnames.take(val.name), val.meta);
    r.backward.inputs.push_back({nv, InputKind::UserInput, r.backward.values[nv].name, true});
    bmap[size_t(v)] = nv;
    stop[size_t(v)] = 1;
  };
  for (ValueId v : saved_ids) add_input(v);
  for (size_t k = jg.num_primals; k < j.inputs.size(); ++k) add_input(j.inputs[k].value);
  std::vector<ValueId> grads(j.outputs.begin() + long(jg.num_fw_outputs), j.outputs.end());
  std::vector<char> in_bw = ancestors(j, grads, &stop);
  for (size_t i = 0; i < j.nodes.size(); ++i) {
    const Node& n = j.nodes[i];
    bool any = false;
    for (ValueId o : n.outputs) any = any || (in_bw[size_t(o)] && !stop[size_t(o)]);
    if (!any) continue;
    for ([[maybe_unused]] ValueId in : n.tensor_inputs())
      assert(bmap[size_t(in)] != kNoValue && "backward reads a value that was neither saved "
                                             "nor computed in the backward");
    copy_node(j, n, r.backward, bmap, &bnames);
    if (!fw_node[i]) continue;
    r.recomputed.push_back(n.name);
    r.recomputed_targets.push_back(n.target);
  }
  for (ValueId v : grads) {
    assert(bmap[size_t(v)] != kNoValue && "gradient not computed by the backward graph");
    r.backward.outputs.push_back(bmap[size_t(v)]);
  }

  log_partition(r, strategy, j);
  std::ostringstream log;
  log << "===== joint graph =====\n" << print_readable(j);
  log << "\n===== partition (" << partition_strategy_name(strategy) << ") =====\n";
  log << "forward: " << r.forward.nodes.size() << " nodes, backward: " << r.backward.nodes.size()
      << " nodes\n";
  for (const SavedValue& s : r.saved)
    log << "saved " << s.name << ": " << format_meta(s.meta) << " " << s.bytes << " bytes\n";
  for (size_t k = 0; k < r.recomputed.size(); ++k)
    log << "recomputed " << r.recomputed[k] << " (" << r.recomputed_targets[k] << ")\n";
  log << "total saved: " << r.saved.size() << " values, " << r.saved_bytes << " bytes\n";
  log << "default partitioner saves: " << r.default_saved_values << " values, "
      << r.default_saved_bytes << " bytes\n";
  log << "\n===== forward graph =====\n" << print_readable(r.forward);
  log << "\n===== backward graph =====\n" << print_readable(r.backward);
  r.log = log.str();
  return r;
}

AotGraphs aot_autograd(const Graph& forward, PartitionStrategy strategy, bool decompose_graphs) {
  if (!decompose_graphs) return partition_joint(build_joint_graph(forward), strategy);
  // Inductor sees only core ops: the forward before differentiating, and the backward's ops
  // (the joint graph) before partitioning.
  JointGraph jg = build_joint_graph(decompose(forward));
  jg.graph = decompose(jg.graph);
  return partition_joint(jg, strategy);
}

} // namespace fxc
