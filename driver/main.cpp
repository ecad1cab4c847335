// fxc's entry point: parse the command line, run the pipeline, map failures to exit codes.
#include "driver/crash_repro.h"
#include "driver/driver.h"
#include "driver/options.h"
#include "frontend/diag.h"
#include "runtime/thread_pool.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

#include <execinfo.h>
#include <unistd.h>

namespace {

bool json_diagnostics = false; // set once, before any handler can run

void write_stderr(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

// A crash (a failed assert, a bad memory access) is an internal compiler error as much as an
// uncaught exception: the same message and exit status 70. Async-signal-safe calls only.
extern "C" void on_crash(int sig) {
  const char* what = sig == SIGABRT   ? "aborted (a failed assertion)"
                     : sig == SIGSEGV ? "segmentation fault"
                     : sig == SIGBUS  ? "bus error"
                     : sig == SIGFPE  ? "arithmetic exception"
                                      : "illegal instruction";
  const char* repro = fxc::write_crash_repro();
  if (json_diagnostics) {
    write_stderr("{\"severity\":\"fatal\",\"file\":\"\",\"node\":\"\",\"op\":\"\",\"message\":\"");
    write_stderr(what);
    write_stderr("\\nplease report this bug with the command line and the input graph\"");
    if (repro) {
      write_stderr(",\"repro\":\"");
      write_stderr(fxc::crash_repro_json_path());
      write_stderr("\"");
    }
    write_stderr("}\n");
  } else {
    write_stderr("fxc: internal compiler error: ");
    write_stderr(what);
    if (repro) {
      write_stderr("\nfxc: note: a reproducer was written to ");
      write_stderr(repro);
    }
    write_stderr("\nplease report this bug with the command line and the input graph\n");
    // The stack, for the report: each frame as the binary and an offset into it
    // (`addr2line -f -e fxc 0x...` of an unstripped build of the same commit names it).
    void* frames[64];
    int n = ::backtrace(frames, 64);
    write_stderr("fxc: stack:\n");
    ::backtrace_symbols_fd(frames, n, 2);
  }
  ::_exit(70);
}

// Sanitizer builds keep the sanitizers' own reports of these signals.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
void install_crash_handlers() {}
#else
void install_crash_handlers() {
  // backtrace() loads libgcc on its first call, which allocates: done here, not in a handler
  // that may run on a corrupt heap.
  void* warm[1];
  (void)::backtrace(warm, 1);
  static char alt_stack[1 << 16]; // a stack overflow must still reach the handler
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int s : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) sigaction(s, &sa, nullptr);
}
#endif

} // namespace

int main(int argc, char** argv) {
  fxc::Options opts;
  if (auto status = fxc::parse_options(argc, argv, &opts)) return *status;
  json_diagnostics = opts.diagnostics == "json";
  fxc::set_default_threads(opts.threads);
  fxc::prepare_crash_repro(argc, argv, opts);
  install_crash_handlers();
  try {
    // Testing only: an internal compiler error on demand, to exercise the reporting above.
    if (const char* ice = std::getenv("FXC_INJECT_ICE")) {
      if (std::strcmp(ice, "abort") == 0) std::abort();
      if (std::strcmp(ice, "exception") == 0)
        throw std::logic_error("injected internal compiler error (FXC_INJECT_ICE=exception)");
    }
    return fxc::run_driver(opts);
  } catch (const fxc::Error& e) {
    fxc::report_error(opts, e);
    return 1;
  } catch (const fxc::UsageError& e) {
    fxc::report_diagnostic(opts, "error", "", e.what());
    return 2;
  } catch (const std::exception& e) {
    const char* repro = fxc::write_crash_repro();
    std::string note = repro && !json_diagnostics
                           ? std::string("\nfxc: note: a reproducer was written to ") + repro
                           : "";
    fxc::report_diagnostic(opts, json_diagnostics ? "fatal" : "internal compiler error", "",
                           e.what() + note +
                               "\nplease report this bug with the command line and the input "
                               "graph (" +
                               opts.input + ")",
                           repro ? repro : "");
    return 70;
  }
}
