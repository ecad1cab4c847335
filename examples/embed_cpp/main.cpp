// embed_cpp: runs an .fxo from many threads at once through include/fxc/runtime.hpp, and swaps
// its weights while they run.
//
// usage: embed_cpp model.fxo THREADS RUNS [weights.safetensors]
//
// Loads the artifact from memory (the file's bytes are freed right after the load), computes a
// reference result on fixed inputs, then runs THREADS threads of RUNS runs each and compares
// every result with the reference byte for byte. With a .safetensors file, the threads keep
// running while the main thread swaps the weights in: every result must then be the old
// reference or the new one (a run sees one set of weights, never a mix), and runs started
// after the swap the new one. Prints "ok: ..." and exits 0, or prints what differed and exits 1.
#include <fxc/runtime.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Bytes = std::vector<std::vector<std::byte>>;

std::vector<char> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(std::string("cannot read ") + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: embed_cpp model.fxo THREADS RUNS [weights.safetensors]\n");
    return 2;
  }
  try {
    const int threads = std::atoi(argv[2]), runs = std::atoi(argv[3]);
    fxc::rt::Model model = [&] {
      std::vector<char> bytes = read_file(argv[1]);
      return fxc::rt::Model::load_memory(bytes.data(), bytes.size(), argv[1]);
    }();
    // Fixed inputs: byte k of every input is k * 37 % 251, small enough for any dtype's values
    // to stay finite (floats from these bytes are tiny or ordinary numbers).
    std::vector<std::vector<std::byte>> inputs(model.num_inputs());
    std::vector<const void*> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      fxc::rt::TensorInfo t = model.input(i);
      inputs[i].resize(t.nbytes);
      for (size_t k = 0; k < t.nbytes; ++k) inputs[i][k] = std::byte((k * 37 % 251) & 0x3f);
      in.push_back(inputs[i].data());
    }
    const Bytes ref = model.run(in);

    std::atomic<int> wrong{0}, old_seen{0}, new_seen{0};
    std::atomic<bool> swapped{false};
    std::mutex mu;
    std::vector<Bytes> others; // results that are not the first reference: judged at the end
    auto worker = [&] {
      for (int r = 0; r < runs; ++r) {
        const bool after = swapped.load(); // the swap had returned before this run started
        Bytes out = model.run(in);
        if (out == ref) {
          if (after)
            ++wrong; // old weights in a run started after the swap
          else
            ++old_seen;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        others.push_back(std::move(out));
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    Bytes ref_new;
    std::string swap_error;
    if (argc > 4) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      try {
        model.swap_weights_file(argv[4]);
        swapped = true;
        ref_new = model.run(in);
      } catch (const fxc::rt::Error& e) {
        swap_error = e.what();
      }
      if (swap_error.empty() && ref_new == ref) {
        std::fprintf(stderr, "embed_cpp: the swapped weights give the same results\n");
        ++wrong;
      }
    }
    for (std::thread& t : pool) t.join();
    if (!swap_error.empty()) {
      std::fprintf(stderr, "embed_cpp: %s\n", swap_error.c_str());
      return 1;
    }
    for (const Bytes& o : others) {
      if (argc > 4 && o == ref_new)
        ++new_seen;
      else
        ++wrong; // neither weights' result: a race, or a mix of old and new weights
    }
    if (wrong) {
      std::printf("FAIL: %d of %d runs differed from the reference\n", wrong.load(),
                  threads * runs);
      return 1;
    }
    std::printf("ok: %d threads x %d runs, results equal to the reference (%d old weights, %d "
                "new)\n",
                threads, runs, old_seen.load(), new_seen.load());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed_cpp: %s\n", e.what());
    return 1;
  }
}
