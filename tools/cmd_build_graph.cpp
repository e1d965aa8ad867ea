// TEMPORARY: filled in by the owner of this subcommand.
#include "tools/commands.hpp"
namespace placesim::tools {
void register_build_graph(CLI::App& /*app*/) {}
}  // namespace placesim::tools
