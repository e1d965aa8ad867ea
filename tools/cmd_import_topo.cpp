// TEMPORARY: filled in by the owner of this subcommand.
#include "tools/commands.hpp"
namespace placesim::tools {
void register_import_topo(CLI::App& /*import_cmd*/) {}
}  // namespace placesim::tools
