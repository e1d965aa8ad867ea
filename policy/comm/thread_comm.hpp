// Ranks as threads of one process, for tests of code that runs on MPI ranks: a Comm whose
// collectives meet at a barrier and whose messages go through per-rank inboxes.
//
//   ThreadComm::Shared shared(2);
//   std::thread t([&] { ThreadComm c(shared, 1); run_sweep(spec, eval, out, {.comm = &c}); });
//   ThreadComm c0(shared, 0);  ...
#pragma once

#include <barrier>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "policy/comm/comm.hpp"

namespace placesim::policy {

/// Ranks as threads of one process: the collectives meet at a barrier.
class ThreadComm : public Comm {
 public:
  struct Shared {
    explicit Shared(int n)
        : size(n),
          sync(n),
          slots(static_cast<std::size_t>(n)),
          inbox(static_cast<std::size_t>(n)) {}
    int size;
    std::barrier<> sync;
    std::vector<std::string> slots;
    std::mutex m;
    std::condition_variable arrived;
    std::vector<std::deque<std::pair<int, std::string>>> inbox;
  };
  ThreadComm(Shared& s, int rank) : s_(s), rank_(rank) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return s_.size; }
  [[nodiscard]] std::string broadcast(const std::string& from_root) const override {
    if (rank_ == 0) s_.slots[0] = from_root;
    s_.sync.arrive_and_wait();
    std::string v = s_.slots[0];
    s_.sync.arrive_and_wait();
    return v;
  }
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) const override {
    s_.slots[static_cast<std::size_t>(rank_)] = mine;
    s_.sync.arrive_and_wait();
    std::vector<std::string> all;
    if (rank_ == 0) all = s_.slots;
    s_.sync.arrive_and_wait();
    return all;
  }
  void send(int to, const std::string& message) const override {
    const std::lock_guard lock(s_.m);
    s_.inbox[static_cast<std::size_t>(to)].emplace_back(rank_, message);
    s_.arrived.notify_all();
  }
  [[nodiscard]] std::pair<int, std::string> receive() const override {
    std::unique_lock lock(s_.m);
    auto& mine = s_.inbox[static_cast<std::size_t>(rank_)];
    s_.arrived.wait(lock, [&] { return !mine.empty(); });
    auto front = std::move(mine.front());
    mine.pop_front();
    return front;
  }

 private:
  Shared& s_;
  int rank_;
};

}  // namespace placesim::policy
