// The driver's side of .fxo artifacts: building one from a compilation, and running one.
#pragma once

#include "driver/bench.h"
#include "driver/options.h"
#include "driver/pipeline.h"
#include "frontend/storage.h"
#include "runtime/artifact.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace fxc {

/// The artifact of a compilation whose pipeline has run: inductor graphs as host plans (CPU
/// object code or PTX), earlier backends' graphs for the reference interpreter; input guards
/// from the (possibly re-specialized) source graph. Deterministic.
CompiledArtifact make_artifact(const Compilation& c);

/// Materializes every weight of `g` (made by its init rule, read or checked lazily) on a thread
/// of its own while this lives, so that the writer of an artifact finds them made while the
/// stages compiled (both cores busy). Stops early and joins on destruction.
class WeightPrefetch {
public:
  explicit WeightPrefetch(const Graph& g);
  ~WeightPrefetch();
  WeightPrefetch(const WeightPrefetch&) = delete;
  WeightPrefetch& operator=(const WeightPrefetch&) = delete;

private:
  std::vector<std::shared_ptr<Storage>> storages_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// True when `path` names an .fxo artifact: by its extension, or by its magic number.
bool is_artifact_file(const std::string& path);

/// `fxc [--run|--bench] model.fxo`: loads the artifact, checks its guards on the inputs
/// (--inputs or seeded random), runs it, and writes/compares/prints the results like a
/// compiled graph (--outputs, --expect, --bench; `benched`, when given, receives --bench's
/// result for --trace). Returns the exit status; throws fxc::Error.
int run_artifact(const Options& o, BenchResult* benched = nullptr);

/// `fxc --link -o out.fxo a.fxo [NAME=]b.fxo ...`: one artifact holding every model of the
/// given ones, each under its name (its graph's stem, or NAME), chosen with --model (the
/// first by default) or fxc_model_load_file_named. Weights are stored once across models.
/// Returns the exit status; throws fxc::Error naming the file for a graph, a missing file or
/// two models of one name.
int link_artifacts(const Options& o);

} // namespace fxc
