// Graph importers: torch.export .pt2 archives and fxc's own .fxg / .fxg.zst files.
#pragma once

#include "frontend/graph.h"

#include <string>
#include <vector>

namespace fxc {

/// Reads a torch.export.save archive: */models/model.json, weights under */data/weights/
/// (model_weights_config.json), constants under */data/constants/. Weights are loaded lazily
/// (Storage::lazy) straight from the archive. Every value keeps the metadata recorded in the
/// archive's tensor_values. Throws fxc::Error naming the file and, where there is one, the node.
Graph import_pt2(const std::string& path);

/// Reads an .fxg (JSON) or .fxg.zst file; output metadata is inferred by propagate_shapes().
/// When `external_files` is given it receives the files besides `path` the import read (the
/// .safetensors weights files the graph names), as resolved paths in first-use order.
Graph import_fxg(const std::string& path, std::vector<std::string>* external_files = nullptr);

/// Dispatches on the file's contents (zip magic, zstd magic, '{'). `external_files` as for
/// import_fxg (a .pt2 archive holds its weights, so it has none): the dependencies of a compile.
Graph import_graph(const std::string& path, std::vector<std::string>* external_files = nullptr);

} // namespace fxc
