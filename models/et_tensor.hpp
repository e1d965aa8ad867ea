// Tensors as PyTorch Execution Traces write them, shared by the Chakra importer
// (models/chakra.cpp, which reads them from IOInfo's Python literals) and the PyTorch ET importer
// (calibration/pytorch_et.cpp, which reads them from the observer's JSON):
//
//   EtTensor t{.id = 5, .storage = 6, .offset = 0, .numel = 288, .itemsize = 4, .device = "cpu"};
//   std::vector<std::int64_t> shape = {16, 18};
//   std::optional<std::int64_t> b = et_tensor_bytes(t, &shape);   // 16 x 18 x 4 = 1152
//
// A tensor is the tuple [tensor id, storage id, offset, elements, element bytes, device] (torch
// 1.13's ExecutionGraphObserver and torch 2.x's ExecutionTraceObserver alike); an undefined
// tensor (an absent optional argument) has storage id 0 and element size 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace placesim::models {

struct EtTensor {
  std::int64_t id = 0;
  std::int64_t storage = 0;
  std::int64_t offset = 0;
  std::int64_t numel = 0;     ///< elements of the storage view the observer saw
  std::int64_t itemsize = 0;  ///< bytes per element
  std::string device;         ///< "cpu", "cuda:0", "" for an undefined tensor
  [[nodiscard]] bool defined() const { return itemsize > 0 && !device.empty(); }
};

/// Largest tensor a trace may describe: 1 PiB (2^50 bytes), the graph format's limit.
inline constexpr std::int64_t kMaxEtTensorBytes = std::int64_t{1} << 50;

/// Elements of `shape`; nullopt for a negative dimension or a count above 2^50.
std::optional<std::int64_t> shape_elements(const std::vector<std::int64_t>& shape);

/// Bytes of `t`: the elements of `shape` when it is given and valid (the tensor as the op saw it),
/// else the tuple's own element count, times the element size. nullopt when that is negative or
/// above kMaxEtTensorBytes.
std::optional<std::int64_t> et_tensor_bytes(const EtTensor& t,
                                            const std::vector<std::int64_t>* shape);

}  // namespace placesim::models
