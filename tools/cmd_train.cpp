// TEMPORARY: filled in by the owner of this subcommand.
#include "tools/commands.hpp"
namespace placesim::tools {
void register_train(CLI::App& /*app*/) {}
}  // namespace placesim::tools
