// Graph importers: torch.export .pt2 archives and fxc's own .fxg / .fxg.zst files.
#pragma once

#include "frontend/graph.h"

#include <string>

namespace fxc {

/// Reads a torch.export.save archive: */models/model.json, weights under */data/weights/
/// (model_weights_config.json), constants under */data/constants/. Weights are loaded lazily
/// (Storage::lazy) straight from the archive. Every value keeps the metadata recorded in the
/// archive's tensor_values. Throws fxc::Error naming the file and, where there is one, the node.
Graph import_pt2(const std::string& path);

/// Reads an .fxg (JSON) or .fxg.zst file; output metadata is inferred by propagate_shapes().
Graph import_fxg(const std::string& path);

/// Dispatches on the file's contents (zip magic, zstd magic, '{').
Graph import_graph(const std::string& path);

} // namespace fxc
