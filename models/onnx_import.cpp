#include "models/onnx_import.hpp"

#include "sim/error.hpp"

namespace placesim::models {
sim::Graph import_onnx(const std::string& path, const OnnxImportOptions&) {
  throw sim::InputError(path, "", "ONNX import (not built yet)");
}
}  // namespace placesim::models
