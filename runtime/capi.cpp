// The C API of include/fxc/runtime.h: loading an .fxo and running it with the caller's buffers.
#include "fxc/runtime.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/io_util.h"
#include "frontend/safetensors.h"
#include "runtime/artifact.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct fxc_model {
  std::unique_ptr<fxc::LoadedModel> model;
  std::string source; ///< the file (or name) it was loaded from, for messages
  std::vector<std::string> input_names, output_names;
  std::vector<fxc::TensorMeta> inputs, outputs; ///< contiguous metas of the buffers
  std::vector<std::string> weight_names;        ///< swappable weights, sorted
  std::vector<fxc::TensorMeta> weights;
  std::vector<std::string> models_in_file; ///< every model of the artifact, in order
};

namespace {

thread_local std::string last_error;

fxc_status fail(fxc_status s, const std::string& message) {
  last_error = message;
  return s;
}

// Runs `f`, turning exceptions into `status` and the message.
template <class F> fxc_status guarded(fxc_status status, F f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(status, "fxc: error: out of memory");
  } catch (const std::exception& e) {
    return fail(status, e.what());
  }
}

size_t nbytes(const fxc::TensorMeta& m) {
  return size_t(m.numel()) * fxc::dtype_size(m.dtype);
}

fxc_status load(std::shared_ptr<const fxc::ArtifactBytes> bytes, const std::string& name,
                const fxc_load_options& options, fxc_model** out) {
  const char* model_name = options.model_name;
  *out = nullptr;
  fxc::CompiledArtifact a;
  fxc_status s = guarded(FXC_ERROR_BAD_ARTIFACT, [&] {
    try {
      a = fxc::parse_artifact(std::move(bytes), name, model_name ? model_name : "");
    } catch (const fxc::NoSuchModel& e) {
      return fail(FXC_ERROR_INVALID_ARGUMENT, e.what());
    }
    return FXC_OK;
  });
  if (s != FXC_OK) return s;
  auto m = std::make_unique<fxc_model>();
  s = guarded(FXC_ERROR_LOAD, [&] {
    m->model = fxc::LoadedModel::load(std::move(a), name, options.num_threads, options.cuda_device);
    return FXC_OK;
  });
  if (s != FXC_OK) return s;
  for (const fxc::InputGuard& g : m->model->artifact().inputs) {
    m->input_names.push_back(g.name);
    m->inputs.push_back(g.meta);
  }
  m->source = name;
  m->models_in_file = m->model->artifact().models_in_file;
  m->output_names = m->model->artifact().outputs;
  m->outputs = m->model->output_metas();
  for (auto& [wname, meta] : m->model->swappable_weights()) {
    m->weight_names.push_back(wname);
    m->weights.push_back(meta);
  }
  *out = m.release();
  return FXC_OK;
}

fxc_status info(const std::vector<std::string>& names, const std::vector<fxc::TensorMeta>& metas,
                size_t index, fxc_tensor_info* out) {
  if (!out) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `info` is NULL");
  if (index >= metas.size())
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: index " + std::to_string(index) +
                                                " out of range (" + std::to_string(metas.size()) +
                                                ")");
  out->name = names[index].c_str();
  out->dtype = fxc::to_plugin_dtype(metas[index].dtype);
  out->rank = int32_t(metas[index].sizes.size());
  out->sizes = metas[index].sizes.data();
  out->nbytes = nbytes(metas[index]);
  return FXC_OK;
}

fxc_status run(fxc_model* m, const void* const* inputs, const int32_t* dtypes, const int32_t* ranks,
               const int64_t* const* sizes, void* const* outputs) {
  if (!m) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` is NULL");
  if ((!inputs && !m->inputs.empty()) || (!outputs && !m->outputs.empty()))
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `inputs` or `outputs` is NULL");
  const std::string& source = m->source;
  std::vector<fxc::TensorMeta> metas; // the caller's view of each input, checked
  for (size_t i = 0; i < m->inputs.size(); ++i) {
    fxc::TensorMeta meta = m->inputs[i];
    if (dtypes) {
      fxc::DType t;
      if (!fxc::from_plugin_dtype(dtypes[i], &t))
        return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: input " + std::to_string(i) +
                                                    ": unknown dtype code " +
                                                    std::to_string(dtypes[i]));
      if (ranks[i] < 0 || ranks[i] > 64 || (ranks[i] > 0 && !sizes[i]))
        return fail(FXC_ERROR_INVALID_ARGUMENT,
                    "fxc: error: input " + std::to_string(i) + ": bad rank or sizes");
      meta.dtype = t;
      meta.sizes.assign(sizes[i], sizes[i] + ranks[i]);
      for (int64_t s : meta.sizes)
        if (s < 0)
          return fail(FXC_ERROR_INVALID_ARGUMENT,
                      "fxc: error: input " + std::to_string(i) + ": negative size");
      meta.strides = fxc::contiguous_strides(meta.sizes);
      // A dynamic artifact's sizes are checked against its symbols' ranges (check_guards).
      std::string f = m->model->artifact().symbolic
                          ? std::string()
                          : fxc::check_input_guard(i, m->model->artifact().inputs[i], meta);
      if (!f.empty()) return fail(FXC_ERROR_GUARD, fxc::Error(source, f).what());
    }
    metas.push_back(meta);
  }
  // A dynamic artifact: the sizes pass its ranges before a byte is copied; the outputs' sizes.
  std::vector<fxc::TensorMeta> out_metas = m->outputs;
  if (m->model->artifact().symbolic) {
    fxc_status s = guarded(FXC_ERROR_GUARD, [&] {
      out_metas = m->model->output_metas_for(metas);
      return FXC_OK;
    });
    if (s != FXC_OK) return s;
  }
  std::vector<fxc::Tensor> ins;
  for (size_t i = 0; i < metas.size(); ++i) {
    const fxc::TensorMeta& meta = metas[i];
    if (!inputs[i] && nbytes(meta) > 0)
      return fail(FXC_ERROR_INVALID_ARGUMENT,
                  "fxc: error: input " + std::to_string(i) + " is NULL");
    fxc::Tensor t = fxc::Tensor::empty(meta.dtype, meta.sizes);
    if (nbytes(meta) > 0) std::memcpy(t.raw_data(), inputs[i], nbytes(meta));
    ins.push_back(t);
  }
  if (std::string f = m->model->check_guards(ins); !f.empty())
    return fail(FXC_ERROR_GUARD, fxc::Error(source, f).what());
  return guarded(FXC_ERROR_RUN, [&] {
    fxc::NamedResults rs = m->model->run(ins);
    if (rs.size() != m->outputs.size())
      throw fxc::Error(source, "the run returned " + std::to_string(rs.size()) + " results, not " +
                                   std::to_string(m->outputs.size()));
    for (size_t i = 0; i < rs.size(); ++i) {
      const fxc::TensorMeta& want = out_metas[i];
      fxc::Tensor r = rs[i].second;
      if (r.sizes() != want.sizes)
        throw fxc::Error(source, rs[i].first + " is " + fxc::format_meta(r.meta()) + ", not " +
                                     fxc::format_meta(want));
      r = r.dtype() == want.dtype ? r.contiguous() : r.to(want.dtype);
      if (nbytes(want) == 0) continue;
      if (!outputs[i]) throw fxc::Error(source, "output " + std::to_string(i) + " is NULL");
      std::memcpy(outputs[i], r.raw_data(), nbytes(want));
    }
    return FXC_OK;
  });
}

} // namespace

extern "C" {

const char* fxc_last_error(void) {
  return last_error.c_str();
}

const char* fxc_status_name(fxc_status s) {
  switch (s) {
  case FXC_OK:
    return "FXC_OK";
  case FXC_ERROR_INVALID_ARGUMENT:
    return "FXC_ERROR_INVALID_ARGUMENT";
  case FXC_ERROR_IO:
    return "FXC_ERROR_IO";
  case FXC_ERROR_BAD_ARTIFACT:
    return "FXC_ERROR_BAD_ARTIFACT";
  case FXC_ERROR_LOAD:
    return "FXC_ERROR_LOAD";
  case FXC_ERROR_GUARD:
    return "FXC_ERROR_GUARD";
  case FXC_ERROR_RUN:
    return "FXC_ERROR_RUN";
  case FXC_ERROR_WEIGHTS:
    return "FXC_ERROR_WEIGHTS";
  }
  return "?";
}

const char* fxc_dtype_name(int32_t code) {
  fxc::DType t;
  if (!fxc::from_plugin_dtype(code, &t)) return "?";
  return fxc::dtype_name(t).data(); // dtype names are NUL-terminated literals
}

fxc_load_options fxc_load_options_default(void) {
  fxc_load_options o;
  o.model_name = nullptr;
  o.cuda_device = -1;
  o.num_threads = 0;
  return o;
}

fxc_status fxc_model_load_file(const char* path, fxc_model** out) {
  return fxc_model_load_file_ex(path, nullptr, out);
}

fxc_status fxc_model_load_file_named(const char* path, const char* model_name, fxc_model** out) {
  fxc_load_options o = fxc_load_options_default();
  o.model_name = model_name;
  return fxc_model_load_file_ex(path, &o, out);
}

fxc_status fxc_model_load_file_ex(const char* path, const fxc_load_options* options,
                                  fxc_model** out) {
  fxc_load_options o = options ? *options : fxc_load_options_default();
  if (o.num_threads < 0 || o.cuda_device < -1)
    return fail(FXC_ERROR_INVALID_ARGUMENT,
                "fxc: error: options: num_threads must be >= 0 and cuda_device >= -1");
  if (!path) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `path` is NULL");
  if (!out) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `out` is NULL");
  *out = nullptr;
  std::shared_ptr<const fxc::ArtifactBytes> bytes;
  fxc_status s = guarded(FXC_ERROR_IO, [&] {
    bytes = fxc::ArtifactBytes::map_file(path);
    return FXC_OK;
  });
  if (s != FXC_OK) return s;
  return load(std::move(bytes), path, o, out);
}

fxc_status fxc_model_load_memory(const void* data, size_t size, const char* name, fxc_model** out) {
  return fxc_model_load_memory_ex(data, size, name, nullptr, out);
}

fxc_status fxc_model_load_memory_named(const void* data, size_t size, const char* name,
                                       const char* model_name, fxc_model** out) {
  fxc_load_options o = fxc_load_options_default();
  o.model_name = model_name;
  return fxc_model_load_memory_ex(data, size, name, &o, out);
}

fxc_status fxc_model_load_memory_ex(const void* data, size_t size, const char* name,
                                    const fxc_load_options* options, fxc_model** out) {
  fxc_load_options o = options ? *options : fxc_load_options_default();
  if (o.num_threads < 0 || o.cuda_device < -1)
    return fail(FXC_ERROR_INVALID_ARGUMENT,
                "fxc: error: options: num_threads must be >= 0 and cuda_device >= -1");
  if (!data && size > 0) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `data` is NULL");
  if (!out) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `out` is NULL");
  *out = nullptr;
  std::shared_ptr<const fxc::ArtifactBytes> bytes;
  fxc_status s = guarded(FXC_ERROR_IO, [&] {
    bytes = fxc::ArtifactBytes::copy(std::string_view(static_cast<const char*>(data), size));
    return FXC_OK;
  });
  if (s != FXC_OK) return s;
  return load(std::move(bytes), name ? name : "<memory>", o, out);
}

int32_t fxc_model_cuda_device(const fxc_model* model) {
  return model ? model->model->cuda_device() : -1;
}

fxc_status fxc_model_run_cuda(fxc_model* model, const void* const* inputs, void* const* outputs,
                              void* stream) {
  if (!model) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` is NULL");
  if ((!inputs && !model->inputs.empty()) || (!outputs && !model->outputs.empty()))
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `inputs` or `outputs` is NULL");
  const fxc::CompiledArtifact& a = model->model->artifact();
  if (a.device != "cuda" || a.mode == "train")
    return fail(FXC_ERROR_INVALID_ARGUMENT,
                model->source + ": error: fxc_model_run_cuda needs a CUDA inference artifact " +
                    "(this one is " + a.device + ", " + a.mode + "): use fxc_model_run");
  std::vector<uint64_t> ins, outs;
  for (size_t i = 0; i < model->inputs.size(); ++i)
    ins.push_back(uint64_t(reinterpret_cast<uintptr_t>(inputs[i])));
  for (size_t i = 0; i < model->outputs.size(); ++i)
    outs.push_back(uint64_t(reinterpret_cast<uintptr_t>(outputs[i])));
  return guarded(FXC_ERROR_RUN, [&] {
    model->model->run_device(ins, outs, stream);
    return FXC_OK;
  });
}

const char* fxc_model_name(const fxc_model* model) {
  return model ? model->model->artifact().name.c_str() : nullptr;
}

size_t fxc_artifact_num_models(const fxc_model* model) {
  return model ? model->models_in_file.size() : 0;
}

const char* fxc_artifact_model_name(const fxc_model* model, size_t index) {
  if (!model || index >= model->models_in_file.size()) return nullptr;
  return model->models_in_file[index].c_str();
}

void fxc_model_free(fxc_model* model) {
  delete model;
}

size_t fxc_model_num_inputs(const fxc_model* model) {
  return model ? model->inputs.size() : 0;
}

size_t fxc_model_num_outputs(const fxc_model* model) {
  return model ? model->outputs.size() : 0;
}

fxc_status fxc_model_input_info(const fxc_model* model, size_t index, fxc_tensor_info* out) {
  if (!model) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` is NULL");
  return info(model->input_names, model->inputs, index, out);
}

fxc_status fxc_model_output_info(const fxc_model* model, size_t index, fxc_tensor_info* out) {
  if (!model) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` is NULL");
  return info(model->output_names, model->outputs, index, out);
}

fxc_status fxc_model_run(fxc_model* model, const void* const* inputs, void* const* outputs) {
  return run(model, inputs, nullptr, nullptr, nullptr, outputs);
}

fxc_status fxc_model_run_checked(fxc_model* model, const void* const* inputs, const int32_t* dtypes,
                                 const int32_t* ranks, const int64_t* const* sizes,
                                 void* const* outputs) {
  if (!dtypes || !ranks || !sizes)
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `dtypes`, `ranks` or `sizes` is NULL");
  return run(model, inputs, dtypes, ranks, sizes, outputs);
}

fxc_status fxc_model_dim_range(const fxc_model* model, size_t index, int32_t dim, int64_t* min,
                               int64_t* max) {
  if (!model || !min || !max)
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model`, `min` or `max` is NULL");
  if (index >= model->inputs.size() || dim < 0 || size_t(dim) >= model->inputs[index].sizes.size())
    return fail(FXC_ERROR_INVALID_ARGUMENT,
                "fxc: error: no input " + std::to_string(index) + " dim " + std::to_string(dim));
  *min = *max = model->inputs[index].sizes[size_t(dim)];
  const fxc::CompiledArtifact& a = model->model->artifact();
  if (!a.symbolic) return FXC_OK;
  size_t k = 0;
  for (const fxc::GraphInput& in : a.symbolic->inputs) {
    if (in.kind != fxc::InputKind::UserInput) continue;
    if (k++ != index) continue;
    const fxc::TensorMeta& meta = a.symbolic->values[size_t(in.value)].meta;
    if (size_t(dim) >= meta.sym_sizes.size() || !meta.sym_sizes[size_t(dim)].is_symbol()) break;
    for (const fxc::SymbolRange& r : a.symbolic->symbols)
      if (r.name == meta.sym_sizes[size_t(dim)].name) {
        *min = r.min;
        *max = r.max;
      }
  }
  return FXC_OK;
}

fxc_status fxc_model_output_shape(const fxc_model* model, const int32_t* ranks,
                                  const int64_t* const* sizes, size_t index, int32_t* rank,
                                  int64_t* out_sizes, int32_t capacity) {
  if (!model || !ranks || !sizes || !rank || (!out_sizes && capacity > 0))
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: a pointer argument is NULL");
  if (index >= model->outputs.size())
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: no output " + std::to_string(index));
  std::vector<fxc::TensorMeta> ins;
  for (size_t i = 0; i < model->inputs.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] > 64 || (ranks[i] > 0 && !sizes[i]))
      return fail(FXC_ERROR_INVALID_ARGUMENT,
                  "fxc: error: input " + std::to_string(i) + ": bad rank or sizes");
    fxc::TensorMeta t = model->inputs[i];
    t.sizes.assign(sizes[i], sizes[i] + ranks[i]);
    t.strides = fxc::contiguous_strides(t.sizes);
    ins.push_back(t);
  }
  std::vector<fxc::TensorMeta> outs;
  fxc_status s = guarded(FXC_ERROR_GUARD, [&] {
    outs = model->model->output_metas_for(ins);
    return FXC_OK;
  });
  if (s != FXC_OK) return s;
  const fxc::TensorMeta& o = outs.at(index);
  *rank = int32_t(o.sizes.size());
  if (*rank > capacity)
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: output " + std::to_string(index) +
                                                " has rank " + std::to_string(*rank) +
                                                ", more than `capacity`");
  std::copy(o.sizes.begin(), o.sizes.end(), out_sizes);
  return FXC_OK;
}

size_t fxc_model_num_weights(const fxc_model* model) {
  return model ? model->weights.size() : 0;
}

fxc_status fxc_model_weight_info(const fxc_model* model, size_t index, fxc_tensor_info* out) {
  if (!model) return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` is NULL");
  return info(model->weight_names, model->weights, index, out);
}

fxc_status fxc_model_swap_weights(fxc_model* model, const fxc_weight* weights, size_t count) {
  if (!model || (!weights && count > 0))
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` or `weights` is NULL");
  std::vector<std::pair<std::string, fxc::Tensor>> ts;
  for (size_t i = 0; i < count; ++i) {
    const fxc_weight& w = weights[i];
    std::string which = "fxc: error: weight " + std::to_string(i);
    fxc::DType t;
    if (!w.name) return fail(FXC_ERROR_INVALID_ARGUMENT, which + ": `name` is NULL");
    if (!fxc::from_plugin_dtype(w.dtype, &t))
      return fail(FXC_ERROR_INVALID_ARGUMENT,
                  which + " '" + w.name + "': unknown dtype code " + std::to_string(w.dtype));
    if (w.rank < 0 || w.rank > 64 || (w.rank > 0 && !w.sizes))
      return fail(FXC_ERROR_INVALID_ARGUMENT, which + " '" + w.name + "': bad rank or sizes");
    std::vector<int64_t> sizes(w.sizes, w.sizes + w.rank);
    for (int64_t d : sizes)
      if (d < 0)
        return fail(FXC_ERROR_INVALID_ARGUMENT, which + " '" + w.name + "': negative size");
    // Checked against the artifact before a byte is copied.
    fxc::TensorMeta want;
    for (size_t k = 0; k < model->weight_names.size(); ++k)
      if (model->weight_names[k] == w.name) want = model->weights[k];
    if (want.dtype == t && want.sizes == sizes) {
      fxc_status s = guarded(FXC_ERROR_RUN, [&] {
        fxc::Tensor x = fxc::Tensor::empty(t, sizes);
        size_t n = size_t(x.numel()) * fxc::dtype_size(t);
        if (n > 0 && !w.data)
          throw std::invalid_argument(which + " '" + w.name + "': `data` is NULL");
        if (n > 0) std::memcpy(x.raw_data(), w.data, n);
        ts.emplace_back(w.name, x);
        return FXC_OK;
      });
      if (s != FXC_OK) return s;
      continue;
    }
    // Not a match: the model's own message (unknown name, or the dtype and sizes it expects).
    fxc::TensorMeta got;
    got.dtype = t;
    got.sizes = sizes;
    got.strides = fxc::contiguous_strides(sizes);
    ts.emplace_back(w.name, fxc::Tensor(std::make_shared<fxc::Storage>(0), got));
  }
  return guarded(FXC_ERROR_WEIGHTS, [&] {
    model->model->swap_weights(ts);
    return FXC_OK;
  });
}

fxc_status fxc_model_swap_weights_file(fxc_model* model, const char* path) {
  if (!model || !path)
    return fail(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: `model` or `path` is NULL");
  std::map<std::string, fxc::WeightData> file;
  fxc_status s = guarded(FXC_ERROR_IO, [&] {
    file = fxc::read_safetensors(path);
    return FXC_OK;
  });
  if (s != FXC_OK) return s;
  return guarded(FXC_ERROR_WEIGHTS, [&] {
    std::vector<std::pair<std::string, fxc::Tensor>> ts;
    for (auto& [name, w] : file) ts.emplace_back(name, fxc::Tensor(w.storage, w.meta));
    model->model->swap_weights(ts, path);
    return FXC_OK;
  });
}

} // extern "C"
