// placesim: simulate placed training steps on heterogeneous clusters. See README.md.
#include <cstdio>
#include <exception>
#include <malloc.h>
#include <string_view>

#include "tools/commands.hpp"

int main(int argc, char** argv) {
  using namespace placesim;
  // Keep freed memory in the process instead of returning it to the kernel. glibc maps every
  // block above a (dynamic) threshold afresh and trims the heap top on free; a training step
  // allocates and frees megabyte tensors and gradient buffers every iteration, and on this VM
  // each fresh page costs a fault of ~10 us: 4 MB of gradients took 10 ms to copy into a new
  // vector, and a 2-rank gradient exchange 40-80 ms instead of 4-9 ms (docs/performance.md).
  // Blocks above 32 MiB (glibc's ceiling for this threshold) are still mapped.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // `train` is LibTorch's; everything else starts without loading it (tools/CMakeLists.txt).
  if (argc > 1 && std::string_view(argv[1]) == "train") tools::exec_torch_build();
  CLI::App app{"placesim: predict the step time of a placed training graph on a GPU/CPU cluster"};
  app.name("placesim");  // not argv[0]: error lines and help say "placesim ..."
  app.require_subcommand(1);
  app.set_version_flag("--version", "placesim 0.1.0");
  tools::register_describe(app);
  tools::register_simulate(app);
  tools::register_build_graph(app);
  tools::register_import(app);
  tools::register_export(app);
  tools::register_place(app);
  tools::register_train(app);
  tools::register_calibrate(app);
  tools::register_sweep(app);
  tools::register_collective(app);
  tools::register_completion(app);
  // Last: every subcommand registered above gets --quiet (tools/cli_contract.cpp).
  tools::add_quiet_flags(app);
  try {
    app.parse(argc, argv);
  } catch (...) {
    return tools::report_failure(app, std::current_exception());
  }
  return 0;
}
