// Fusion scheduler: greedy, byte-scored grouping of loop-IR buffers into kernels.
#include "passes/fuse.h"

#include <algorithm>
#include <cassert>
#include <set>

namespace fxc {

std::string_view member_role_name(MemberRole r) {
  switch (r) {
  case MemberRole::Inner:
    return "inner";
  case MemberRole::Outer:
    return "outer";
  case MemberRole::Reduce:
    return "reduce";
  }
  return "?";
}

std::map<int, IndexExpr> member_subst(const Buffer& b, MemberRole role, int64_t xnumel,
                                      int64_t rnumel) {
  IndexExpr x = IndexExpr::var(kXVar, xnumel), r = IndexExpr::var(kRVar, rnumel);
  std::map<int, IndexExpr> s;
  IndexExpr lin = role == MemberRole::Inner ? x * rnumel + r : x;
  auto idx = unravel_index(lin, b.sizes);
  for (size_t i = 0; i < idx.size(); ++i) s[int(i)] = idx[i];
  if (role == MemberRole::Reduce) {
    auto ridx = unravel_index(r, b.rsizes);
    for (size_t j = 0; j < ridx.size(); ++j) s[kRVarBase + int(j)] = ridx[j];
  }
  return s;
}

namespace {

// At most this many buffers in one kernel, as Inductor's config.max_fusion_size: horizontal
// fusion of many small siblings (the per-channel slices of a grouped convolution's backward in
// an EfficientNet-B0 train graph: 2304 buffers) otherwise builds kernels of 60k LLVM
// instructions on which the NVPTX back end runs for minutes.
constexpr size_t kMaxFusionSize = 64;

struct Group {
  bool is_extern = false;
  int extern_buffer = -1;
  int64_t x = 1, r = 1;
  bool has_reduction = false;
  std::vector<KernelMember> members;
};

class Fuser {
public:
  Fuser(const LoopProgram& p, const FuseOptions& o) : p_(p), opts_(o) {
    group_of_.assign(p.buffers.size(), -1);
    reads_.resize(p.buffers.size());
    for (size_t b = 0; b < p.buffers.size(); ++b) reads_[b] = p.reads(int(b));
  }

  Schedule run();

private:
  /// The role of b and the kernel shape if b joins g; false when the shapes do not fit (with
  /// the reason in *why when it is given).
  bool fit(const Group& g, const Buffer& b, MemberRole* role, int64_t* x, int64_t* r,
           std::string* why = nullptr) const {
    // The reasons are only spelled out when asked for: fit() runs for every (buffer, group).
    auto no = [&](auto reason) {
      if (why) *why = reason();
      return false;
    };
    int64_t n = b.numel();
    auto space = [&] { return "x < " + std::to_string(g.x) + ", r < " + std::to_string(g.r); };
    // Empty buffers (or empty reductions) stay alone: their kernels do no work.
    if (n == 0 || (b.kind == Buffer::Kind::Reduction && b.rnumel() == 0))
      return no([] { return std::string("it is empty (an empty kernel stays alone)"); });
    if (g.x * g.r == 0)
      return no([] { return std::string("the group is empty (an empty kernel stays alone)"); });
    if (b.kind == Buffer::Kind::Reduction) {
      *role = MemberRole::Reduce;
      auto mine = [&] { return std::to_string(n) + " rows of " + std::to_string(b.rnumel()); };
      if (g.has_reduction) {
        *x = g.x, *r = g.r;
        if (n == g.x && b.rnumel() == g.r) return true;
        return no([&] {
          return "its reduction (" + mine() + ") differs from the group's (" + space() + ")";
        });
      }
      *x = n, *r = b.rnumel();
      if (n * b.rnumel() == g.x * g.r) return true;
      return no([&] {
        return "its reduction (" + mine() + ") does not cover the group's iteration space (" +
               space() + ")";
      });
    }
    *x = g.x, *r = g.r;
    if (n == g.x * g.r) {
      *role = MemberRole::Inner;
      return true;
    }
    *role = MemberRole::Outer;
    if (g.has_reduction && n == g.x) return true;
    return no([&] {
      return "its " + std::to_string(n) + " elements match neither the group's iteration space (" +
             space() + ")" + (g.has_reduction ? " nor its " + std::to_string(g.x) + " rows" : "");
    });
  }
  /// Why buffer b, which starts a new group, did not join group gi (the group scheduled just
  /// before it): the first of the fuser's conditions it fails.
  std::string why_not_fused(int gi, const Buffer& b) const {
    const Group& g = groups_[gi];
    if (!opts_.enable) return "fusion is disabled";
    if (g.is_extern)
      return "the group is an extern call (" + p_.buffers[g.extern_buffer].call.op +
             "), and extern calls never fuse";
    if (g.members.size() >= kMaxFusionSize)
      return "the group holds " + std::to_string(kMaxFusionSize) +
             " buffers, the most one kernel takes";
    // (No producer of b runs after the last group, so run()'s bound `lo` never excludes it.)
    MemberRole role;
    int64_t x, r;
    std::string why;
    if (!fit(g, b, &role, &x, &r, &why)) return why;
    if (!deps_ok(gi, b, role, x, r))
      return "it reads a member of the group at another row than its own (a kernel computes "
             "its rows independently)";
    return "nothing to share: it reads no buffer of the group and no input the group reads";
  }
  /// "buf4 (relu_1)": a buffer and the graph nodes it computes.
  std::string label(int b) const {
    const Buffer& buf = p_.buffers[b];
    std::string s = buf.name;
    for (size_t i = 0; i < buf.origins.size(); ++i)
      s += (i ? ", " : " (") + buf.origins[i] + (i + 1 == buf.origins.size() ? ")" : "");
    return s;
  }
  MemberRole role_in(const Group& g, int b) const {
    for (auto& m : g.members)
      if (m.buffer == b) return m.role;
    assert(false && "buffer is not a member of the group");
    return MemberRole::Inner;
  }
  /// Every read of an in-kernel buffer stays in the reading row.
  bool deps_ok(int gi, const Buffer& b, MemberRole role, int64_t x, int64_t r) const {
    const Group& g = groups_[gi];
    auto s = member_subst(b, role, x, r);
    IndexExpr xv = IndexExpr::var(kXVar, x);
    bool ok = true;
    for_each_load(b.body, [&](const VExpr& l) {
      if (!ok || group_of_[l.buffer] != gi) return;
      IndexExpr ix = l.index.substitute(s);
      MemberRole pr = role_in(g, l.buffer);
      if (pr == MemberRole::Inner)
        ok = ix.floordiv(r) == xv;
      else
        ok = ix == xv;
    });
    return ok;
  }
  int64_t bytes_saved(int gi, int b) const {
    int64_t saved = 0;
    for (int q : reads_[b]) {
      if (group_of_[q] == gi) {
        saved += p_.buffers[q].nbytes();
        continue;
      }
      for (auto& m : groups_[gi].members)
        if (std::binary_search(reads_[m.buffer].begin(), reads_[m.buffer].end(), q)) {
          saved += p_.buffers[q].nbytes();
          break;
        }
    }
    return saved;
  }
  int producer_group(int q) const {
    const Buffer& b = p_.buffers[q];
    if (b.kind == Buffer::Kind::Input) return -1;
    if (b.kind == Buffer::Kind::ExternOutput) return group_of_[b.extern_owner];
    return group_of_[q];
  }
  void finish(Schedule& s);

  const LoopProgram& p_;
  FuseOptions opts_;
  std::vector<int> group_of_;
  std::vector<std::vector<int>> reads_;
  std::vector<Group> groups_;
};

Schedule Fuser::run() {
  Schedule s;
  // Dead code: buffers no output depends on are not scheduled (an extern call stays when any
  // of its outputs is needed).
  std::vector<bool> live(p_.buffers.size(), false);
  for (auto& o : p_.outputs) live[o.buffer] = true;
  for (int b = int(p_.buffers.size()) - 1; b >= 0; --b)
    if (live[b])
      for (int q : reads_[b]) live[q] = true;
  for (int b = 0; b < int(p_.buffers.size()); ++b) {
    const Buffer& buf = p_.buffers[b];
    if (buf.kind == Buffer::Kind::Input) continue;
    bool owner_live = buf.kind == Buffer::Kind::ExternOutput && live[buf.extern_owner];
    if (!live[b] && !owner_live) {
      s.log += "dead: " + buf.name + " (no output depends on it)\n";
      continue;
    }
    if (buf.kind == Buffer::Kind::ExternOutput) {
      group_of_[b] = group_of_[buf.extern_owner];
      continue;
    }
    if (buf.kind == Buffer::Kind::Extern) {
      Group g;
      g.is_extern = true;
      g.extern_buffer = b;
      groups_.push_back(g);
      group_of_[b] = int(groups_.size()) - 1;
      continue;
    }
    int lo = -1;
    for (int q : reads_[b]) lo = std::max(lo, producer_group(q));
    int best = -1;
    int64_t best_score = 0;
    MemberRole best_role = MemberRole::Inner;
    int64_t bx = 0, br = 0;
    for (int gi = int(groups_.size()) - 1; opts_.enable && gi >= std::max(lo, 0); --gi) {
      const Group& g = groups_[gi];
      if (g.is_extern || g.members.size() >= kMaxFusionSize) continue;
      MemberRole role;
      int64_t x, r;
      if (!fit(g, buf, &role, &x, &r) || !deps_ok(gi, buf, role, x, r)) continue;
      int64_t score = bytes_saved(gi, b);
      if (score > best_score) {
        best = gi, best_score = score, best_role = role, bx = x, br = r;
      }
    }
    if (best >= 0) {
      Group& g = groups_[best];
      g.x = bx, g.r = br;
      g.has_reduction = g.has_reduction || best_role == MemberRole::Reduce;
      g.members.push_back({b, best_role, true});
      group_of_[b] = best;
      s.log += "fuse " + buf.name + " (" + std::string(member_role_name(best_role)) +
               ") into group " + std::to_string(best) + " [" +
               p_.buffers[g.members[0].buffer].name + "]: saves " + std::to_string(best_score) +
               " bytes\n";
      continue;
    }
    Group g;
    if (buf.kind == Buffer::Kind::Reduction) {
      g.x = buf.numel(), g.r = buf.rnumel(), g.has_reduction = true;
      g.members.push_back({b, MemberRole::Reduce, true});
    } else {
      int64_t last = buf.sizes.empty() ? 1 : buf.sizes.back();
      g.r = last == 0 ? 1 : last;
      g.x = last == 0 ? 0 : buf.numel() / last;
      g.members.push_back({b, MemberRole::Inner, true});
    }
    std::string why;
    if (!groups_.empty()) {
      int prev = int(groups_.size()) - 1;
      const Group& pg = groups_[prev];
      why = label(b) + " not fused with group " + std::to_string(prev) + " [" +
            label(pg.is_extern ? pg.extern_buffer : pg.members[0].buffer) +
            "]: " + why_not_fused(prev, buf);
      s.unfused.push_back(why);
    }
    groups_.push_back(g);
    group_of_[b] = int(groups_.size()) - 1;
    s.log += "new group " + std::to_string(group_of_[b]) + " for " + buf.name +
             (why.empty() ? "" : ": " + why) + "\n";
  }
  finish(s);
  return s;
}

void Fuser::finish(Schedule& s) {
  // Which buffers are needed outside their group.
  std::vector<bool> outside(p_.buffers.size(), false);
  for (auto& o : p_.outputs) outside[o.buffer] = true;
  for (int b = 0; b < int(p_.buffers.size()); ++b)
    for (int q : reads_[b])
      if (group_of_[q] != group_of_[b] || p_.buffers[b].kind == Buffer::Kind::Extern)
        outside[q] = true;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    if (g.is_extern) {
      s.items.push_back({false, g.extern_buffer});
      continue;
    }
    // A pointwise-only kernel with few long rows is split into more, shorter rows (a power of
    // two that divides its size), so rows spread over threads or blocks.
    // Only without reads between members: those were checked against the original rows.
    bool reads_member = false;
    for (auto& m : g.members)
      for (int q : reads_[m.buffer]) reads_member = reads_member || group_of_[q] == int(gi);
    if (!g.has_reduction && !reads_member && g.x < 256 && g.x * g.r >= 65536) {
      // Prefer a divisor of the row, so that an index of the old row ((2048x + r) // 12544:
      // a batch norm's channel) stays a function of x alone and the r loop vectorizes.
      int64_t n = g.x * g.r, r = 2048;
      while (r >= 256 && g.r % r != 0) --r;
      if (r < 256)
        for (r = 2048; r >= 16 && n % r != 0;) r /= 2;
      if (r >= 16 && r < g.r) {
        s.log += "split group " + std::to_string(gi) + ": x < " + std::to_string(n / r) + ", r < " +
                 std::to_string(r) + "\n";
        g.x = n / r;
        g.r = r;
      }
    }
    Kernel k;
    k.xnumel = g.x;
    k.rnumel = g.r;
    std::vector<std::string> ops;
    std::set<int> ins;
    for (auto& m : g.members) {
      m.store = m.role == MemberRole::Inner || outside[m.buffer];
      const Buffer& b = p_.buffers[m.buffer];
      for (const std::string& op : b.origin_ops)
        if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
      for (int q : reads_[m.buffer])
        if (group_of_[q] != int(gi) || role_in(g, q) == MemberRole::Inner) ins.insert(q);
      if (m.store) k.outputs.push_back(m.buffer);
    }
    for (int q : ins)
      if (group_of_[q] != int(gi)) k.inputs.push_back(q);
    // Stages: a new loop when a member reads a per-row value or another row position produced
    // in the current loop; per-row members gather in scalar stages between loops.
    std::map<int, int> stage_of;
    for (int mi = 0; mi < int(g.members.size()); ++mi) {
      const KernelMember& m = g.members[mi];
      bool loop = m.role != MemberRole::Outer;
      bool join = !k.stages.empty() && k.stages.back().loop == loop;
      if (join && loop) {
        int cur = int(k.stages.size()) - 1;
        const Buffer& b = p_.buffers[m.buffer];
        auto sub = member_subst(b, m.role, g.x, g.r);
        IndexExpr same = IndexExpr::var(kXVar, g.x) * g.r + IndexExpr::var(kRVar, g.r);
        for_each_load(b.body, [&](const VExpr& l) {
          auto it = stage_of.find(l.buffer);
          if (it == stage_of.end() || it->second != cur) return;
          MemberRole pr = role_in(g, l.buffer);
          if (pr != MemberRole::Inner || l.index.substitute(sub) != same) join = false;
        });
      }
      if (!join) k.stages.push_back({loop, {}});
      k.stages.back().members.push_back(mi);
      stage_of[m.buffer] = int(k.stages.size()) - 1;
    }
    k.members = g.members;
    std::string base;
    int count = 0;
    for (auto& o : ops) {
      if (count++ == 6) break;
      base += "_" + o;
    }
    base = "fused" + (base.empty() ? std::string("_kernel") : base);
    k.name = base + "_" + std::to_string(s.kernels.size());
    s.items.push_back({true, int(s.kernels.size())});
    s.kernels.push_back(std::move(k));
  }
  for (auto& k : s.kernels) {
    s.log += "kernel " + k.name + ": " + std::to_string(k.members.size()) + " members, x < " +
             std::to_string(k.xnumel) + ", r < " + std::to_string(k.rnumel) + "\n";
  }
}

} // namespace

Schedule fuse(const LoopProgram& p, const FuseOptions& opts) {
  Fuser f(p, opts);
  return f.run();
}

std::string print_schedule(const LoopProgram& p, const Schedule& s) {
  std::string out;
  for (auto& item : s.items) {
    if (!item.is_kernel) {
      const Buffer& b = p.buffers[item.index];
      out += "extern " + b.name + " = " + b.call.op + extern_kind_suffix(b.call) + "(";
      for (size_t i = 0; i < b.call.operands.size(); ++i)
        out += (i ? ", " : "") + p.buffers[b.call.operands[i].buffer].name;
      out += ")\n";
      continue;
    }
    const Kernel& k = s.kernels[item.index];
    out += "kernel " + k.name + ": x < " + std::to_string(k.xnumel) + ", r < " +
           std::to_string(k.rnumel) + "\n";
    for (size_t si = 0; si < k.stages.size(); ++si) {
      const KernelStage& st = k.stages[si];
      out += "  stage " + std::to_string(si) + (st.loop ? " (loop over r)" : " (per x)") + "\n";
      for (int mi : st.members) {
        const KernelMember& m = k.members[mi];
        const Buffer& b = p.buffers[m.buffer];
        out += "    " + b.name + " (" + std::string(member_role_name(m.role)) +
               (m.store ? ", stored" : ", register") + ")";
        if (m.role == MemberRole::Reduce) out += " reduce " + std::string(reduce_op_name(b.reduce));
        out += "\n";
        auto sub = member_subst(b, m.role, k.xnumel, k.rnumel);
        std::string res;
        out += print_body(substitute(b.body, sub), p, "      ", &res);
        if (m.store)
          out +=
              "      store(" + b.name + ", " +
              (m.role == MemberRole::Inner
                   ? (IndexExpr::var(kXVar, k.xnumel) * k.rnumel + IndexExpr::var(kRVar, k.rnumel))
                         .str()
                   : IndexExpr::var(kXVar, k.xnumel).str()) +
              ", " + res + ")\n";
      }
    }
  }
  return out;
}

} // namespace fxc
