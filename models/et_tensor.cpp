#include "models/et_tensor.hpp"

namespace placesim::models {

std::optional<std::int64_t> shape_elements(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxEtTensorBytes / d)) return std::nullopt;
    n *= d;
  }
  return n;
}

std::optional<std::int64_t> et_tensor_bytes(const EtTensor& t,
                                            const std::vector<std::int64_t>* shape) {
  std::int64_t numel = t.numel;
  if (shape)
    if (const auto n = shape_elements(*shape)) numel = *n;
  const std::int64_t eb = t.itemsize;
  if (numel < 0 || eb < 0 || (eb > 0 && numel > kMaxEtTensorBytes / eb)) return std::nullopt;
  return numel * eb;
}

}  // namespace placesim::models
