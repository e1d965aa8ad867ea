// Checkpoints are verified before use (policy/checkpoint_file.hpp): the envelope's size and
// checksum, then every field LibTorch hands back. A truncated, damaged, foreign or crafted
// checkpoint is an InputError naming the file, never a crash or a wrong "best".
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <unistd.h>

#include "policy/checkpoint_file.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

#ifdef PLACESIM_WITH_TORCH
#include <torch/torch.h>

#include "policy/rl.hpp"
#endif

namespace placesim::policy {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sim::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointFile, RoundTripsAndRejectsDamage) {
  const std::string payload = std::string("PK\x03\x04", 4) + std::string(1000, 'x');
  const std::string file = wrap_checkpoint(payload);
  EXPECT_EQ(unwrap_checkpoint(file, "c.pt"), payload);
  // Truncated by one byte, one byte flipped, appended to, a bare archive, a newer version.
  EXPECT_NE(error_of([&] {
              unwrap_checkpoint(file.substr(0, file.size() - 1), "c.pt");
            }).find("truncated"),
            std::string::npos);
  std::string flipped = file;
  flipped[flipped.size() - 10] ^= 1;
  EXPECT_NE(error_of([&] { unwrap_checkpoint(flipped, "c.pt"); }).find("checksum"),
            std::string::npos);
  EXPECT_NE(error_of([&] { unwrap_checkpoint(file + "x", "c.pt"); }).find("appended"),
            std::string::npos);
  EXPECT_NE(error_of([&] { unwrap_checkpoint(payload, "c.pt"); }).find("bare LibTorch archive"),
            std::string::npos);
  std::string v3 = file;
  v3.replace(v3.find(" 2 "), 3, " 3 ");
  EXPECT_NE(error_of([&] { unwrap_checkpoint(v3, "c.pt"); }).find("version 3"), std::string::npos);
  for (std::size_t n : {0, 5, 20, 60}) {
    const std::string msg = error_of([&] { unwrap_checkpoint(file.substr(0, n), "c.pt"); });
    EXPECT_EQ(msg.rfind("c.pt", 0), 0u) << n;
  }
}

#ifdef PLACESIM_WITH_TORCH

PolicyProblem problem(int groups, int devices) {
  PolicyProblem p;
  p.num_devices = devices;
  for (int i = 0; i < groups; ++i) p.features.push_back({static_cast<float>(i % 2), 0.5f});
  return p;
}

RewardFn reward() {
  return [](const std::vector<DevicesOfGroups>& ps) {
    std::vector<Evaluation> out;
    for (const auto& p : ps) {
      double t = 1.0;
      for (auto d : p) t += d;
      out.push_back({.step_time_s = t});
    }
    return out;
  };
}

RlOptions opts() {
  return RlOptions{.hidden = 8, .samples = 4, .seed = 3, .learning_rate = 1e-2};
}

// Rewrites one entry of a checkpoint's archive and wraps it again with a valid checksum: a
// crafted file, which only the field checks can refuse.
void craft(const std::string& path, const std::string& key, const torch::Tensor& value) {
  torch::serialize::InputArchive in;
  std::istringstream is(unwrap_checkpoint(sim::read_text_file(path), path));
  in.load_from(is);
  torch::serialize::OutputArchive out;
  for (const std::string& k : in.keys()) {
    if (k == key) continue;
    c10::IValue v;
    if (in.try_read(k, v)) {
      out.write(k, v);
      continue;
    }
    torch::serialize::InputArchive sub;
    in.read(k, sub);
    // Sub-archives (model, optim) are copied through their tensors.
    torch::serialize::OutputArchive copy;
    for (const std::string& sk : sub.keys()) {
      torch::Tensor t;
      if (sub.try_read(sk, t)) copy.write(sk, t);
    }
    out.write(k, copy);
  }
  out.write(key, value);
  std::ostringstream os;
  out.save_to(os);
  sim::write_file_atomic(path, wrap_checkpoint(os.str()));
}

class CraftedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("placesim_ckpt_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    path = (dir / "checkpoint.pt").string();
    Trainer t(problem(6, 3), opts(), reward(), 1.0);
    for (int i = 0; i < 3; ++i) t.step();
    t.save(path);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string load_error() {
    Trainer t(problem(6, 3), opts(), reward(), 1.0);
    return error_of([&] { t.load(path); });
  }
  std::filesystem::path dir;
  std::string path;
};

TEST_F(CraftedCheckpoint, IntactOneLoads) {
  EXPECT_EQ(load_error(), "");
}

TEST_F(CraftedCheckpoint, TruncatedIsAnInputError) {
  const std::string bytes = sim::read_text_file(path);
  for (const double frac : {0.1, 0.5, 0.9, 0.999}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << bytes.substr(0, static_cast<std::size_t>(bytes.size() * frac));
    EXPECT_NE(load_error().find(path), std::string::npos) << frac;
  }
}

TEST_F(CraftedCheckpoint, ShortShapeIsAnInputError) {
  craft(path, "shape", torch::tensor({6}, torch::kLong));
  EXPECT_NE(load_error().find("shape: expected a tensor Long [4]"), std::string::npos)
      << load_error();
}

TEST_F(CraftedCheckpoint, BestOutOfRangeNegativeOrShortIsAnInputError) {
  craft(path, "best", torch::tensor({0, 1, 2, 3, 0, 1}, torch::kLong));
  EXPECT_NE(load_error().find("best: expected device indices from 0 to 2"), std::string::npos)
      << load_error();
  craft(path, "best", torch::tensor({0, -1, 2, 0, 0, 1}, torch::kLong));
  EXPECT_NE(load_error().find("best: expected device indices"), std::string::npos) << load_error();
  craft(path, "best", torch::tensor({0, 1}, torch::kLong));
  EXPECT_NE(load_error().find("best: expected a tensor Long [6]"), std::string::npos)
      << load_error();
  craft(path, "best", torch::tensor({0, 1, 0, 1, 0, 1, 2, 2}, torch::kLong));
  EXPECT_NE(load_error().find("best: expected a tensor Long [6]"), std::string::npos)
      << load_error();
}

TEST_F(CraftedCheckpoint, NegativeBestStepTimeIsAnInputError) {
  craft(path, "best_step_s", torch::tensor({-1.0}, torch::kDouble));
  EXPECT_NE(load_error().find("best_step_s: expected a finite step time"), std::string::npos)
      << load_error();
}

TEST_F(CraftedCheckpoint, ForeignWeightsAreAnInputError) {
  torch::serialize::InputArchive in;
  std::istringstream is(unwrap_checkpoint(sim::read_text_file(path), path));
  in.load_from(is);
  // The same keys with a wrongly shaped "model": a checkpoint of another network.
  torch::nn::Linear other(3, 5);
  torch::serialize::OutputArchive model;
  other->save(model);
  torch::serialize::OutputArchive out;
  for (const std::string& k : in.keys()) {
    c10::IValue v;
    if (k != "model" && k != "optim" && in.try_read(k, v)) out.write(k, v);
  }
  torch::serialize::InputArchive optim;
  in.read("optim", optim);
  out.write("model", model);
  std::ostringstream os;
  out.save_to(os);
  sim::write_file_atomic(path, wrap_checkpoint(os.str()));
  EXPECT_NE(load_error().rfind(path, 0), std::string::npos) << load_error();
}

#endif  // PLACESIM_WITH_TORCH

}  // namespace
}  // namespace placesim::policy
