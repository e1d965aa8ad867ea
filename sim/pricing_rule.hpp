// The name of the cost-model rule that priced an op, as `simulate --pricing` and the Chrome
// trace's "priced by" write it: to_string(Estimate::source), except that an exact entry keyed by
// the op name alone (a signature without input shapes, from a profile recorded without shapes)
// is "exact-name": calibrate keeps such an entry only where the name's calls agreed
// (calibration::name_entry_consistent; docs/cost-model.md, "Look-up order").
#pragma once

#include <string>

#include "sim/cost_model.hpp"
#include "sim/graph.hpp"

namespace placesim::sim {

std::string pricing_rule(const KernelCostModel::Estimate& e, const Op& op);

}  // namespace placesim::sim
