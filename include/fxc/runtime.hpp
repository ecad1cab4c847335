// fxc runtime, C++: header-only RAII classes over the C API of fxc/runtime.h (link libfxcrt.so).
//
//     fxc::rt::Model m = fxc::rt::Model::load_file("model.fxo");   // throws fxc::rt::Error
//     std::vector<std::vector<std::byte>> out = m.run({x.data()});  // one buffer per output
//     m.swap_weights_file("finetuned.safetensors");                 // no recompile
//
// A Model owns its fxc_model and frees it; it can be moved, not copied. run() may be called from
// many threads at once (see fxc/runtime.h). Every failed call throws fxc::rt::Error with the C
// API's status and message.
#ifndef FXC_RUNTIME_HPP
#define FXC_RUNTIME_HPP

#include "fxc/runtime.h"

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxc::rt {

/// A failed call: its status (FXC_ERROR_GUARD, ...) and fxc_last_error()'s message.
class Error : public std::runtime_error {
public:
  Error(fxc_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  fxc_status status() const { return status_; }

private:
  fxc_status status_;
};

/// Throws Error for any status but FXC_OK.
inline void check(fxc_status s) {
  if (s != FXC_OK) throw Error(s, fxc_last_error());
}

/// One input, output or weight, with its sizes copied.
struct TensorInfo {
  std::string name;
  int32_t dtype = 0; ///< an fxc_dtype
  std::vector<int64_t> sizes;
  size_t nbytes = 0;
};

class Model {
public:
  /// `model`: which model of an artifact of several (`fxc --link`); "" loads the first.
  static Model load_file(const std::string& path, const std::string& model = {}) {
    fxc_model* m = nullptr;
    check(fxc_model_load_file_named(path.c_str(), model.c_str(), &m));
    return Model(m);
  }
  /// `data` is copied: the caller may free it after the call.
  static Model load_memory(const void* data, size_t size, const std::string& name = "<memory>",
                           const std::string& model = {}) {
    fxc_model* m = nullptr;
    check(fxc_model_load_memory_named(data, size, name.c_str(), model.c_str(), &m));
    return Model(m);
  }

  /// With options (model name, CUDA device, CPU threads): see fxc_load_options.
  static Model load_file(const std::string& path, const fxc_load_options& options) {
    fxc_model* m = nullptr;
    check(fxc_model_load_file_ex(path.c_str(), &options, &m));
    return Model(m);
  }
  static Model load_memory(const void* data, size_t size, const std::string& name,
                           const fxc_load_options& options) {
    fxc_model* m = nullptr;
    check(fxc_model_load_memory_ex(data, size, name.c_str(), &options, &m));
    return Model(m);
  }

  /// The CUDA device a CUDA artifact runs on; -1 for a CPU artifact.
  int cuda_device() const { return fxc_model_cuda_device(get()); }

  /// This model's name, and the names of every model of its artifact, in order.
  std::string name() const { return fxc_model_name(get()); }
  std::vector<std::string> artifact_models() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < fxc_artifact_num_models(get()); ++i)
      out.emplace_back(fxc_artifact_model_name(get(), i));
    return out;
  }

  size_t num_inputs() const { return fxc_model_num_inputs(get()); }
  size_t num_outputs() const { return fxc_model_num_outputs(get()); }
  size_t num_weights() const { return fxc_model_num_weights(get()); }
  TensorInfo input(size_t i) const { return info(fxc_model_input_info, i); }
  TensorInfo output(size_t i) const { return info(fxc_model_output_info, i); }
  TensorInfo weight(size_t i) const { return info(fxc_model_weight_info, i); }

  /// Runs with the caller's buffers (one per input and per output, as input()/output() say).
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
    if (inputs.size() != num_inputs() || outputs.size() != num_outputs())
      throw Error(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: expected " +
                                                  std::to_string(num_inputs()) + " inputs and " +
                                                  std::to_string(num_outputs()) + " outputs");
    check(fxc_model_run(get(), inputs.data(), outputs.data()));
  }
  /// Runs and returns each output's bytes in a new buffer.
  std::vector<std::vector<std::byte>> run(const std::vector<const void*>& inputs) {
    std::vector<std::vector<std::byte>> out(num_outputs());
    std::vector<void*> ptrs;
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].resize(output(i).nbytes);
      ptrs.push_back(out[i].data());
    }
    run(inputs, ptrs);
    return out;
  }

  /// A CUDA inference artifact run on device buffers, ordered on the caller's stream (a
  /// cudaStream_t / CUstream; nullptr: the legacy default stream); see fxc_model_run_cuda.
  void run_cuda(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                void* stream) {
    if (inputs.size() != num_inputs() || outputs.size() != num_outputs())
      throw Error(FXC_ERROR_INVALID_ARGUMENT, "fxc: error: expected " +
                                                  std::to_string(num_inputs()) + " inputs and " +
                                                  std::to_string(num_outputs()) + " outputs");
    check(fxc_model_run_cuda(get(), inputs.data(), outputs.data(), stream));
  }

  /// Replaces weights by name (copied); see fxc_model_swap_weights.
  void swap_weights(const std::vector<fxc_weight>& weights) {
    check(fxc_model_swap_weights(get(), weights.data(), weights.size()));
  }
  /// Replaces the weights a .safetensors file holds; see fxc_model_swap_weights_file.
  void swap_weights_file(const std::string& path) {
    check(fxc_model_swap_weights_file(get(), path.c_str()));
  }

  fxc_model* get() const { return m_.get(); }

private:
  struct Free {
    void operator()(fxc_model* m) const { fxc_model_free(m); }
  };
  explicit Model(fxc_model* m) : m_(m) {}

  template <class F> TensorInfo info(F f, size_t i) const {
    fxc_tensor_info t{};
    check(f(get(), i, &t));
    return TensorInfo{t.name, t.dtype, std::vector<int64_t>(t.sizes, t.sizes + t.rank), t.nbytes};
  }

  std::unique_ptr<fxc_model, Free> m_;
};

} // namespace fxc::rt

#endif // FXC_RUNTIME_HPP
