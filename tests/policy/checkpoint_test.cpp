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

#include "policy/rl/checkpoint_file.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

#ifdef PLACESIM_WITH_TORCH
#include "policy/rl/rl.hpp"
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

// A real checkpoint, then the same bytes truncated, with one byte flipped, and as the bare
// LibTorch archive of earlier releases: each an InputError naming the file.
TEST(CheckpointFile, DamagedTrainerCheckpointsAreInputErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("placesim_ckpt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "checkpoint.pt").string();
  {
    Trainer t(problem(6, 3), opts(), reward(), 1.0);
    for (int i = 0; i < 3; ++i) t.step();
    t.save(path);
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  const std::string bytes = sim::read_text_file(path);
  auto load_error = [&](const std::string& content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    Trainer t(problem(6, 3), opts(), reward(), 1.0);
    return error_of([&] { t.load(path); });
  };
  EXPECT_EQ(load_error(bytes), "");
  for (const double frac : {0.1, 0.5, 0.9, 0.999}) {
    const std::string msg = load_error(
        bytes.substr(0, static_cast<std::size_t>(static_cast<double>(bytes.size()) * frac)));
    EXPECT_EQ(msg.rfind(path, 0), 0u) << frac << ": " << msg;
  }
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x20;
  EXPECT_NE(load_error(flipped).find("checksum"), std::string::npos);
  EXPECT_NE(load_error(bytes.substr(bytes.find('\n') + 1)).find("bare LibTorch archive"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

#endif  // PLACESIM_WITH_TORCH

}  // namespace
}  // namespace placesim::policy
