// Prints the metadata fxc infers for op cases read as JSON lines (driven by meta_oracle.py).
#include "frontend/builder.h"
#include "frontend/diag.h"
#include <iostream>
#include <nlohmann/json.hpp>
using namespace fxc;
using json = nlohmann::json;
Arg to_arg(const json& a, const std::map<std::string, ValueId>& ids) {
  std::string k = a[0];
  const json& v = a[1];
  if (k == "t") return Arg::of_tensor(ids.at(v.get<std::string>()));
  if (k == "ts") {
    std::vector<ValueId> x;
    for (auto& e : v) x.push_back(e.is_null() ? kNoValue : ids.at(e.get<std::string>()));
    return Arg::of_tensors(x);
  }
  if (k == "i") return Arg::of_int(v);
  if (k == "f") return Arg::of_float(v);
  if (k == "b") return Arg::of_bool(v);
  if (k == "is") return Arg::of_ints(v.get<std::vector<int64_t>>());
  if (k == "s") return Arg::of_string(v);
  if (k == "dt") return Arg::of_dtype(*parse_dtype(v.get<std::string>()));
  if (k == "mf") return Arg::of_memory_format(MemoryFormat(v.get<int>()));
  if (k == "none") return Arg::none();
  throw std::runtime_error("bad arg " + k);
}
int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    json c = json::parse(line), out;
    out["id"] = c["id"];
    try {
      Graph g;
      std::map<std::string, ValueId> ids;
      for (auto& in : c["inputs"]) {
        TensorMeta m;
        m.dtype = *parse_dtype(in["dtype"].get<std::string>());
        m.sizes = in["sizes"].get<std::vector<int64_t>>();
        m.strides = in["strides"].get<std::vector<int64_t>>();
        m.storage_offset = in["offset"];
        ids[in["name"]] = g.add_value(in["name"], m);
      }
      std::vector<CallArg> call;
      for (auto& a : c["call"]) call.push_back({a[0].get<std::string>(), to_arg(a[1], ids)});
      auto outs = add_node(g, c["target"].get<std::string>(), call);
      for (ValueId v : outs) {
        auto& m = g.values[v].meta;
        out["outs"].push_back({{"dtype", std::string(dtype_name(m.dtype))},
                               {"sizes", m.sizes},
                               {"strides", m.strides},
                               {"offset", m.storage_offset}});
      }
    } catch (const Error& e) {
      out["error"] = e.message();
    }
    std::cout << out.dump() << "\n";
  }
}
