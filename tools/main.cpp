// placesim: simulate placed training steps on heterogeneous clusters. See README.md.
#include <cstdio>
#include <exception>
#include <iostream>

#include "sim/error.hpp"
#include "tools/commands.hpp"

int main(int argc, char** argv) {
  using namespace placesim;
  CLI::App app{"placesim: predict the step time of a placed training graph on a GPU/CPU cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "placesim 0.1.0");
  tools::register_describe(app);
  tools::register_simulate(app);
  tools::register_build_graph(app);
  tools::register_import(app);
  tools::register_place(app);
  tools::register_train(app);
  tools::register_calibrate(app);
  tools::register_sweep(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const sim::InputError& e) {
    std::cerr << "placesim: " << e.what() << "\n";
    return 2;
  } catch (const tools::CliExit& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::cerr << "placesim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
