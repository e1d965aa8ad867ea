#include "sim/maxmin.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

namespace placesim::sim {

namespace {

// The process-wide default of the invariant check: PLACESIM_CHECK_MAXMIN=1 read once, then
// whatever set_check_invariants_default() says. Atomic because BatchOracle creates solvers on
// several threads.
std::atomic<bool>& check_default_flag() {
  static std::atomic<bool> flag{[] {
    const char* env = std::getenv("PLACESIM_CHECK_MAXMIN");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }()};
  return flag;
}

// Calls f on each of a variable's constraint ids, in order. A flow crosses two constraints (its
// source's up-link and its destination's down-link) and an op one, the same count for every
// variable of a solver, so the test of the count is learnt by the predictor, and the two calls
// unrolled save the general loop's set-up and exit on the solver's two hottest per-variable loops
// (cachegrind, race_dag: 74.83 -> 73.95 M instructions at 16k activities, mispredicts -1.6 %, the
// same operations in the same order; docs/performance.md, session 29).
template <class F>
__attribute__((always_inline)) inline void for_each_con(const std::vector<int>& ids, F&& f) {
  const int* const p = ids.data();
  const std::size_t n = ids.size();
  if (n == 2) {
    f(p[0]);
    f(p[1]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) f(p[i]);
}

[[noreturn]] void violated(const std::string& what) {
  throw MaxMinInvariantError("max-min invariant violated: " + what);
}

std::string num(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  return o.str();
}

}  // namespace

bool MaxMinSolver::check_default() {
  return check_default_flag().load(std::memory_order_relaxed);
}

void MaxMinSolver::set_check_invariants_default(bool on) {
  check_default_flag().store(on, std::memory_order_relaxed);
}

int MaxMinSolver::add_constraint(double capacity) {
  assert(capacity > 0.0);
  Con c;
  cons_.push_back(std::move(c));
  capacity_.push_back(capacity);
  own_mark_.push_back(0);
  // One slot more than there are constraints: the branch-free appends of collect_partial and
  // fill_unweighted write the id one past the list before deciding whether to keep it.
  comp_cons_.fit(cons_.size() + 1);
  act_cons_.fit(cons_.size());
  touched_.fit(cons_.size() + 1);
  return static_cast<int>(cons_.size()) - 1;
}

int MaxMinSolver::add_variable(double bound, std::span<const int> constraints, double weight) {
  assert(weight > 0.0);
  int id;
  if (num_free_ > 0) {
    std::size_t w = 0;
    while (free_bits_[w] == 0) ++w;
    id = static_cast<int>(w * 64) + std::countr_zero(free_bits_[w]);
    free_bits_[w] &= free_bits_[w] - 1;
    --num_free_;
  } else {
    id = static_cast<int>(vars_.size());
    vars_.emplace_back();
    free_bits_.resize(vars_.size() / 64 + 1, 0);
    comp_vars_.fit(vars_.size());
    act_vars_.fit(vars_.size());
    below_.resize(vars_.size());  // a constraint lists at most every variable
  }
  Var& v = vars_[id];
  v.bound = bound;
  v.weight = weight;
  v.inv_weight = 1.0 / weight;
  v.value = 0.0;
  v.alive = true;
  v.fixed = false;
  // Element by element: assign() copies through a memcpy call, which for the 1-2 ids of a flow or
  // an op costs more than the copy (callgrind, race_dag at 16k).
  v.cons.resize(constraints.size());
  for (std::size_t i = 0; i < constraints.size(); ++i) v.cons[i] = constraints[i];
  for (int c : constraints) {
    cons_[c].vars.push_back(id);
    if (weight != 1.0) ++cons_[c].weighted;
  }
  ++live_vars_;
  if (!constraints.empty() && dirty_cons_.empty() && dirty_vars_.empty() && addition_alone(id)) {
    // Every other rate stays; the new variable's is set. solve() reports it as changed.
    fast_vars_.push_back(id);
    ++additions_kept_;
    return id;
  }
  for (int c : constraints) {
    if (!cons_[c].dirty) {
      cons_[c].dirty = true;
      dirty_cons_.push_back(c);
    }
  }
  // Its rate's lower bound is taken at the solve, once every change of the instant is in
  // (collect_partial); the bound is for weight 1: otherwise the whole component is re-filled.
  if (weight == 1.0) {
    pending_adds_.push_back(id);
  } else {
    change_floor_ = 0.0;
  }
  if (constraints.empty()) dirty_vars_.push_back(id);
  component_ready_ = false;
  return id;
}

bool MaxMinSolver::addition_alone(int id) {
  // The allocation is solved (nothing dirty) and no variable sharing a constraint with id has
  // its bottleneck on one of id's constraints. Give id x = min(bound, the least room left on its
  // constraints). Every other variable keeps its saturated bottleneck, where it is still the
  // largest (id does not cross it), or its bound; id is at its bound or saturates the constraint
  // of least room, where it must then be the largest (weighted). That is the characterisation of
  // the max-min allocation, which is unique, so no other rate changes and nothing is re-solved.
  // Any doubt (a neighbour bottlenecked on id's constraints, no room, id not the largest where it
  // saturates) falls back to the re-solve. The room is capacity minus the usage summed in the
  // constraint's list order: deterministic.
  // id was just appended to each of its constraints' lists, so the others are the ones before it.
  if (!skip_neutral_) return false;
  Var& v = vars_[id];
  mark_own(v);
  const std::uint64_t* const own = own_mark_.data() + 1;  // own[-1]: no bottleneck, never marked
  const std::uint64_t stamp = own_stamp_;
  double x = v.bound;
  int bottleneck = -1;
  for (int c : v.cons) {
    double used = 0.0;
    const std::vector<int>& list = cons_[c].vars;
    for (std::size_t i = 0; i + 1 < list.size(); ++i) {
      const Var& w = vars_[list[i]];
      if (own[w.bottleneck] == stamp) return false;
      used += w.value;
    }
    const double room = capacity_[c] - used;
    if (room < x) {
      x = room;
      bottleneck = c;
    }
  }
  if (!(x > 0.0) || x == kUnbounded) return false;
  if (bottleneck >= 0) {
    const double share = x * v.weight;
    for (int u : cons_[bottleneck].vars)
      if (u != id && vars_[u].value * vars_[u].weight > share) return false;
  }
  v.value = x;
  v.bottleneck = bottleneck;
  v.fixed = true;
  return true;
}

void MaxMinSolver::mark_own(const Var& v) {
  ++own_stamp_;
  for (int c : v.cons) own_mark_[static_cast<std::size_t>(c) + 1] = own_stamp_;
}

void MaxMinSolver::remove_variable(int id) {
  // Whether the removal keeps every other rate: the allocation is solved (nothing pending) and
  // every other variable on id's constraints has its recorded bottleneck off them (or is held by
  // its bound). Then without id every variable still has a saturated constraint where its
  // weighted rate is the largest (its bottleneck: id does not cross it, so nothing there changed)
  // or sits at its bound: the characterisation of the max-min allocation, which is unique, so the
  // current rates are it. The test is made in the same pass that takes id out of each list, in
  // place and branch-free (each element moved down past id, the bottleneck test OR-ed in): a
  // find and an erase (a memmove call) per constraint, and a find among id's constraints per
  // neighbour, were the removal's cost and its mispredicts (cachegrind, race_dag at 16k).
  Var& v = vars_[id];
  assert(v.alive);
  mark_own(v);
  const std::uint64_t* const own = own_mark_.data() + 1;  // own[-1]: no bottleneck, never marked
  const std::uint64_t stamp = own_stamp_;
  const Var* const vars = vars_.data();
  unsigned moves = 0;  // some other variable on id's constraints is bottlenecked on one of them
  for (int c : v.cons) {
    std::vector<int>& list = cons_[c].vars;
    int* const p = list.data();
    const std::size_t n = list.size();
    std::size_t j = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const int u = p[i];
      p[j] = u;
      const unsigned other = u != id ? 1U : 0U;
      j += other;
      moves |= other & (own[vars[u].bottleneck] == stamp ? 1U : 0U);
    }
    assert(j + 1 == n);
    list.pop_back();
    if (v.weight != 1.0) --cons_[c].weighted;
  }
  const bool keep_rates = skip_neutral_ && moves == 0 && dirty_cons_.empty() && dirty_vars_.empty();
  if (keep_rates) {
    ++removals_kept_;
  } else {
    for (int c : v.cons) {
      if (!cons_[c].dirty) {
        cons_[c].dirty = true;
        dirty_cons_.push_back(c);
      }
    }
    // Every variable below the removed one's rate keeps its rate (collect_partial).
    change_floor_ = std::min(change_floor_, v.weight == 1.0 ? v.value : 0.0);
  }
  v.alive = false;
  v.value = 0.0;
  --live_vars_;
  // Free: reused lowest first (add_variable), so ids are deterministic.
  free_bits_[static_cast<std::size_t>(id) / 64] |= std::uint64_t{1} << (id % 64);
  ++num_free_;
  auto it = std::find(dirty_vars_.begin(), dirty_vars_.end(), id);
  if (it != dirty_vars_.end()) dirty_vars_.erase(it);
  it = std::find(fast_vars_.begin(), fast_vars_.end(), id);
  if (it != fast_vars_.end()) fast_vars_.erase(it);
  component_ready_ = false;
  if (keep_rates && check_) check_invariants();  // no solve() follows to check it
}

void MaxMinSolver::start_collection() {
  comp_vars_.clear();
  comp_cons_.clear();
  act_vars_.clear();  // the bounded variables, for fill_unweighted
  act_cons_.clear();  // the constraints that carry a variable, for fill_unweighted
  comp_weighted_ = false;
  first_level_ = kUnbounded;
  solved_ = false;
  ++stamp_;
}

void MaxMinSolver::collect_component() {
  start_collection();
  // Breadth-first over the bipartite graph from the touched constraints, in the order they were
  // touched; comp_cons_ doubles as the queue. Each constraint and variable is made ready for the
  // fill as it is reached (one pass over the component instead of two).
  const auto reach = [&](int c) {
    Con& con = cons_[c];
    con.mark = stamp_;
    con.remaining = capacity_[c];
    con.unfixed_count = static_cast<int>(con.vars.size());
    con.unfixed = con.unfixed_count;
    // fill_unweighted's first levels and open constraints, here while the constraint is at hand
    // (capacity > 0, so this is its max(remaining, 0) / unfixed_count, the same bits).
    if (con.unfixed_count > 0) {
      con.level = capacity_[c] / con.unfixed;
      act_cons_.push_back(c);
      first_level_ = std::min(first_level_, con.level);
    }
    if (con.weighted > 0) {
      comp_weighted_ = true;
      con.unfixed = 0.0;
      for (int vid : con.vars) con.unfixed += vars_[vid].inv_weight;
    }
    comp_cons_.push_back(c);
  };
  for (int c : dirty_cons_)
    if (cons_[c].mark != stamp_) reach(c);
  for (std::size_t qi = 0; qi < comp_cons_.size(); ++qi) {
    for (int vid : cons_[comp_cons_[qi]].vars) {
      Var& v = vars_[vid];
      if (v.mark == stamp_) continue;
      v.mark = stamp_;
      v.fixed = false;
      comp_vars_.push_back(vid);
      if (v.bound != kUnbounded) act_vars_.push_back(vid);
      for (int c2 : v.cons)
        if (cons_[c2].mark != stamp_) reach(c2);
    }
  }
  for (int vid : dirty_vars_) {
    Var& v = vars_[vid];
    if (v.alive && v.mark != stamp_) {
      v.mark = stamp_;
      v.fixed = false;
      // A weighted variable with no constraint is in no constraint's count.
      comp_weighted_ = comp_weighted_ || v.weight != 1.0;
      comp_vars_.push_back(vid);
      if (v.bound != kUnbounded) act_vars_.push_back(vid);
    }
  }
  component_ready_ = true;
}

bool MaxMinSolver::collect_partial() {
  // The progressive filling of the changed system repeats the last one's rounds, bit for bit,
  // up to the lowest level a change reaches: an added variable's new rate (at least
  // rate_floor), a removed one's old rate (change_floor_). So every variable below the least of
  // those keeps its rate, and the fill only has to resume from that level: over the
  // variables at or above it (and the new ones) reachable from the touched constraints through
  // such variables, on each constraint's capacity less what the variables below the floor take.
  // That is subtracted in ascending order of rate, the order in which the fill charged them (a
  // round charges its share to each variable it fixes, rounds in rising share), so the fill
  // resumes from the same bits. Unweighted components only; anything else takes the full
  // collection.
  if (!skip_neutral_ || !dirty_vars_.empty()) return false;
  double floor = change_floor_;
  for (int v : pending_adds_)
    if (vars_[v].alive) floor = std::min(floor, rate_floor(v));
  if (!(floor > 0.0)) return false;
  const double cut = floor * (1.0 - 1e-9);  // margin for the fill's tie tolerance
  start_collection();
  // Breadth-first from the touched constraints. comp_cons_ is the queue: a constraint is
  // stamped and queued when first seen (touched, or crossed by a variable as it is opened), and
  // its variables are read when its turn comes. That is the order of a walk over the opened
  // variables after each reach (the constraints seen before variable k are the touched ones and
  // those of variables 1..k-1 either way), without a second pass over the opened variables.
  // The rates below the cut go into a buffer sized once (every variable), sorted once the
  // constraint's list is read (the same sorted sequence as any other order). Local pointers
  // (nothing here resizes the arrays): the compiler cannot keep the members' addresses in
  // registers across the stores.
  Var* const vars = vars_.data();
  Con* const cons = cons_.data();
  double* const below = below_.data();
  int* const queue = comp_cons_.begin();
  std::size_t queued = 0;
  const std::uint32_t stamp = stamp_;
  for (int c : dirty_cons_) {
    if (cons[c].mark == stamp) continue;
    cons[c].mark = stamp;
    queue[queued++] = c;
  }
  bool ok = true;
  for (std::size_t qi = 0; qi < queued; ++qi) {
    const int c = queue[qi];
    Con& con = cons[c];
    if (con.weighted != 0) {
      ok = false;
      break;
    }
    std::size_t num_below = 0;
    int open = 0;
    // Whether a variable is below the cut, and whether an open one was opened already, are data
    // the branch predictor cannot learn (cachegrind's branch simulation, race_dag at 16k: 190,887
    // mispredicts on the below test as a branch): the rate is appended branch-free (written one
    // past the list, kept when below) and the list sorted after the loop, so one branch per
    // visit remains. The time is in mispredicts more than in instructions (docs/performance.md).
    for (int vid : con.vars) {
      Var& v = vars[vid];
      const double x = v.value;
      const unsigned is_below = static_cast<unsigned>(v.fixed) & static_cast<unsigned>(x < cut);
      below[num_below] = x;
      num_below += is_below;
      open += static_cast<int>(is_below ^ 1U);
      if ((is_below | static_cast<unsigned>(v.mark == stamp)) != 0) continue;
      v.mark = stamp;
      v.fixed = false;
      comp_vars_.push_back(vid);
      if (v.bound != kUnbounded) act_vars_.push_back(vid);
      // Branch-free: whether c2 was seen is data the predictor cannot learn (89,007 mispredicts
      // at 16k as a branch); the id is written one past the queue and kept only when new.
      for_each_con(
          v.cons, [&](int c2) __attribute__((always_inline)) {
            const bool seen = cons[c2].mark == stamp;
            cons[c2].mark = stamp;
            queue[queued] = c2;
            queued += seen ? 0 : 1;
          });
    }
    // Ascending (insertion sort: a few rates at most), the order in which the fill charged them.
    for (std::size_t i = 1; i < num_below; ++i) {
      const double x = below[i];
      std::size_t j = i;
      for (; j > 0 && below[j - 1] > x; --j) below[j] = below[j - 1];
      below[j] = x;
    }
    double remaining = capacity_[c];
    for (std::size_t i = 0; i < num_below; ++i) remaining -= below[i];
    con.remaining = remaining;
    // Only fill_unweighted follows a partial collection (no weights), and it counts the open
    // variables in unfixed_count: Con::unfixed is left as it is.
    con.unfixed_count = open;
    if (open > 0) {
      con.level = std::max(remaining, 0.0) / static_cast<double>(open);
      act_cons_.push_back(c);
      first_level_ = std::min(first_level_, con.level);
    }
  }
  comp_cons_.resize(queued);
  if (!ok) return abandon_partial();
  component_ready_ = true;
  ++partial_solves_;
  return true;
}

double MaxMinSolver::rate_floor(int id) const {
  // A lower bound on added variable id's new rate (weight 1): its bottleneck c, if any, is
  // saturated with id the largest there, so x_id >= C_c / n_c, counting every variable on c
  // once all the instant's changes are in; else its bound holds it. (Water-filling c with the
  // solved variables at their current rates gives a tighter bound, but on the race it opened
  // no fewer variables and cost more: 551.2 -> 567.3 M instructions at 100k.)
  const Var& v = vars_[id];
  double floor = v.bound;
  for (int c : v.cons)
    floor = std::min(floor, capacity_[c] / static_cast<double>(cons_[c].vars.size()));
  return floor;
}

bool MaxMinSolver::abandon_partial() {
  // Variables opened so far go back to fixed (their rates stand); the full collection follows.
  // (a new variable has rate 0 and was not fixed; every solved one has a positive rate).
  for (int vid : comp_vars_) vars_[vid].fixed = vars_[vid].value > 0.0;
  return false;
}

std::span<const int> MaxMinSolver::pending_component() {
  if (!component_ready_) collect_component();
  return comp_vars_;
}

void MaxMinSolver::fix(Var& v, double share) {
  v.value = std::min(share * v.inv_weight, v.bound);
  if (v.value == v.bound) v.bottleneck = -1;
  v.fixed = true;
  for (int c : v.cons) {
    cons_[c].remaining -= v.value;
    cons_[c].unfixed -= v.inv_weight;
    --cons_[c].unfixed_count;
  }
}

void MaxMinSolver::fill_plain() {
  std::size_t left = comp_vars_.size();
  while (left > 0) {
    double share = kUnbounded;
    for (int c : comp_cons_) {
      const Con& con = cons_[c];
      if (con.unfixed_count > 0)
        share = std::min(share, std::max(con.remaining, 0.0) / con.unfixed);
    }
    for (int vid : comp_vars_) {
      const Var& v = vars_[vid];
      if (!v.fixed) share = std::min(share, v.bound * v.weight);
    }
    const double limit = share * (1.0 + kRelEps);
    // Saturated constraints first mark their variables; then bounded variables at the level.
    for (int c : comp_cons_) {
      const Con& con = cons_[c];
      if (con.unfixed_count == 0 || std::max(con.remaining, 0.0) / con.unfixed > limit) continue;
      for (int vid : con.vars) {
        Var& v = vars_[vid];
        if (!v.fixed) {
          v.value = -1.0;  // marked for fixing at `share`
          v.bottleneck = c;
        }
      }
    }
    for (int vid : comp_vars_) {
      Var& v = vars_[vid];
      if (v.fixed) continue;
      if (v.value == -1.0 || v.bound * v.weight <= limit) {
        if (v.value != -1.0) v.bottleneck = -1;  // held by its bound
        fix(v, share);
        --left;
      }
    }
    if (share == kUnbounded) {
      // Only unconstrained, unbounded variables remain.
      for (int vid : comp_vars_) {
        Var& v = vars_[vid];
        if (!v.fixed) {
          v.value = kUnbounded;
          v.fixed = true;
          v.bottleneck = -1;
          --left;
        }
      }
    }
  }
}

void MaxMinSolver::fill_active() {
  // Each round only looks at what is still open: the unfixed variables (act_vars_, in component
  // order) and the constraints that still carry one (act_cons_, in component order), both
  // compacted in place as they close, so a round costs what is left rather than the whole
  // component. The minimum is exact and order-free and variables are fixed in component order,
  // so the subtractions into each constraint happen in fill_plain's order: same bits.
  act_cons_.clear();
  for (int c : comp_cons_)
    if (cons_[c].unfixed_count > 0) act_cons_.push_back(c);
  act_vars_.assign(comp_vars_.begin(), comp_vars_.end());
  double var_level = kUnbounded;  // min over unfixed variables of bound * weight
  for (int vid : act_vars_) var_level = std::min(var_level, vars_[vid].bound * vars_[vid].weight);

  while (!act_vars_.empty()) {
    double share = var_level;
    for (int c : act_cons_) {
      Con& con = cons_[c];
      con.level = std::max(con.remaining, 0.0) / con.unfixed;
      share = std::min(share, con.level);
    }
    const double limit = share * (1.0 + kRelEps);
    for (int c : act_cons_) {
      const Con& con = cons_[c];
      if (con.level > limit) continue;
      for (int vid : con.vars) {
        Var& v = vars_[vid];
        if (!v.fixed) {
          v.value = -1.0;
          v.bottleneck = c;
        }
      }
    }
    const bool all = share == kUnbounded;  // only unconstrained, unbounded variables remain
    std::size_t keep = 0;
    var_level = kUnbounded;
    for (int vid : act_vars_) {
      Var& v = vars_[vid];
      if (v.value == -1.0 || v.bound * v.weight <= limit) {
        if (v.value != -1.0) v.bottleneck = -1;  // held by its bound
        fix(v, share);
      } else if (all) {
        v.value = kUnbounded;
        v.fixed = true;
        v.bottleneck = -1;
      } else {
        act_vars_[keep++] = vid;
        var_level = std::min(var_level, v.bound * v.weight);
      }
    }
    act_vars_.resize(keep);
    keep = 0;
    for (int c : act_cons_)
      if (cons_[c].unfixed_count > 0) act_cons_[keep++] = c;
    act_cons_.resize(keep);
  }
}

void MaxMinSolver::fill_unweighted() {
  // Every weight in the component is 1, so every variable fixed in a round gets exactly `share`
  // (a bounded one is fixed only when its bound is within kRelEps above the share, and the share
  // is at most every open bound): what a constraint is charged in a round is `share` once per
  // variable fixed on it, whatever the order, and the arithmetic is fill_plain's, bit for bit
  // (`unfixed` is then the count of open variables, so the level divides by that count). That
  // frees the order: a round visits only the variables of the saturated constraints, and only the
  // constraints they cross have their level recomputed (one division each), instead of every open
  // constraint and variable per round.
  // The collection (collect_component or collect_partial) left the open constraints in act_cons_
  // with their first levels, and the least of those in first_level_.
  // The arrays are read through local pointers: nothing here resizes them, and the compiler
  // cannot otherwise keep their addresses in registers across the stores.
  Var* const vars = vars_.data();
  Con* const cons = cons_.data();
  int* const act_cons = act_cons_.begin();
  std::size_t num_act_cons = act_cons_.size();
  int* const touched = touched_.begin();
  double var_level = kUnbounded;  // the lowest open bound
  for (int vid : act_vars_) var_level = std::min(var_level, vars[vid].bound);
  std::size_t left = comp_vars_.size();
  std::uint32_t stamp = stamp_;
  bool first_round = true;
  while (left > 0) {
    // The share. A constraint closed in the last round has level +inf here (set below) until
    // the saturation pass drops it. The first round's minimum level the collection took as it
    // set the levels (a minimum is exact, in any order).
    double share = var_level;
    if (first_round) {
      share = std::min(share, first_level_);
      first_round = false;
    } else {
      for (std::size_t i = 0; i < num_act_cons; ++i)
        share = std::min(share, cons[act_cons[i]].level);
    }
    std::size_t keep = 0;
    if (share == kUnbounded) {  // only unconstrained, unbounded variables remain
      for (int vid : comp_vars_) {
        Var& v = vars[vid];
        if (!v.fixed) {
          v.value = kUnbounded;
          v.fixed = true;
          v.bottleneck = -1;
        }
      }
      break;
    }
    const double limit = share * (1.0 + kRelEps);
    ++stamp;  // marks the constraints charged this round
    std::size_t num_touched = 0;
    const auto charge = [&](Var & v) __attribute__((always_inline)) {
      v.value = share;
      v.fixed = true;
      --left;
      for_each_con(
          v.cons, [&](int c) __attribute__((always_inline)) {
            Con& con = cons[c];
            con.remaining -= share;
            --con.unfixed_count;
            // Branch-free append, as in collect_partial.
            touched[num_touched] = c;
            num_touched += con.mark != stamp ? 1 : 0;
            con.mark = stamp;
          });
    };
    // Saturation is judged on the levels at the start of the round (they change only below). A
    // saturated constraint closes (each of its open variables is fixed now), and so does one
    // whose variables an earlier round fixed: both leave the open list here.
    for (std::size_t i = 0; i < num_act_cons; ++i) {
      const int c = act_cons[i];
      if (cons[c].level > limit) {
        act_cons[keep] = c;  // keep <= i: in place, branch-free
        keep += cons[c].unfixed_count > 0 ? 1 : 0;
        continue;
      }
      // c closes: stamped as charged already, so that its level is not recomputed below.
      cons[c].mark = stamp;
      for (int vid : cons[c].vars) {
        Var& v = vars[vid];
        if (v.fixed) continue;
        v.bottleneck = c;
        charge(v);
      }
    }
    num_act_cons = keep;
    if (!act_vars_.empty()) {
      std::size_t open = 0;
      var_level = kUnbounded;
      for (int vid : act_vars_) {
        Var& v = vars[vid];
        if (v.fixed) continue;
        if (v.bound <= limit) {
          v.bottleneck = -1;  // held by its bound
          charge(v);
        } else {
          act_vars_[open++] = vid;
          var_level = std::min(var_level, v.bound);
        }
      }
      act_vars_.resize(open);
    }
    for (std::size_t i = 0; i < num_touched; ++i) {
      Con& con = cons[touched[i]];
      con.level = con.unfixed_count > 0
                      ? std::max(con.remaining, 0.0) / static_cast<double>(con.unfixed_count)
                      : kUnbounded;
    }
  }
  stamp_ = stamp;
  act_cons_.resize(num_act_cons);
}

bool MaxMinSolver::solve() {
  solved_ = false;
  if (dirty_cons_.empty() && dirty_vars_.empty()) {
    if (fast_vars_.empty()) return false;
    // Only additions that changed no other rate (addition_alone): they are what changed.
    comp_vars_.assign(fast_vars_.begin(), fast_vars_.end());
    fast_vars_.clear();
    solved_ = true;
    if (check_) check_invariants();
    return true;
  }
  if (!component_ready_ && !collect_partial()) collect_component();
  change_floor_ = kUnbounded;
  pending_adds_.clear();
  const std::uint32_t comp_stamp = stamp_;  // the fills move stamp_ on
  for (int c : dirty_cons_) cons_[c].dirty = false;
  // Progressive filling (maxmin.hpp); the three fills give the same bits. Without weights the one
  // that visits only saturated constraints, whatever the size (the race: ~15 flows per component
  // on the network, 1-3 ops per CPU; cachegrind at 16k activities, it beats the plain scan on
  // small components too). With weights the plain one, which scans the whole component every
  // round, on small components, and the active-set one on large ones.
  if (!comp_weighted_) {
    fill_unweighted();
  } else if (comp_vars_.size() <= kActiveFillFrom) {
    fill_plain();
  } else {
    fill_active();
  }
  // Additions set alone before the change that needed this solve, outside its component.
  const bool had_fast = !fast_vars_.empty();
  for (int f : fast_vars_)
    if (vars_[f].mark != comp_stamp) comp_vars_.push_back(f);
  fast_vars_.clear();
  solved_ = true;
  dirty_cons_.clear();
  dirty_vars_.clear();
  component_ready_ = false;
  if (check_) {
    if (had_fast) {
      check_invariants();
    } else {
      // Only what this solve recomputed: the rest was checked when it was solved and is unchanged.
      check_bookkeeping();
      check_solution(comp_vars_, comp_cons_);
    }
  }
  return true;
}

void MaxMinSolver::check_invariants() const {
  check_bookkeeping();
  int live = 0;
  std::vector<int> vars, cons;
  for (std::size_t v = 0; v < vars_.size(); ++v) {
    if (!vars_[v].alive) continue;
    ++live;
    vars.push_back(static_cast<int>(v));
  }
  if (live != live_vars_)
    violated(std::to_string(live) + " live variables, the count says " +
             std::to_string(live_vars_));
  for (std::size_t c = 0; c < cons_.size(); ++c) cons.push_back(static_cast<int>(c));
  check_solution(vars, cons);
}

void MaxMinSolver::check_bookkeeping() const {
  if (!dirty_cons_.empty() || !dirty_vars_.empty())
    violated("changes pending after a solve (dirty constraints or variables left)");
  for (std::size_t c = 0; c < cons_.size(); ++c) {
    const Con& con = cons_[c];
    if (!(capacity_[c] > 0.0)) violated("constraint " + std::to_string(c) + " has capacity <= 0");
    if (con.dirty) violated("constraint " + std::to_string(c) + " still marked dirty");
    int weighted = 0;
    for (std::size_t i = 0; i < con.vars.size(); ++i) {
      const int vid = con.vars[i];
      // Messages are built only on a failure: the check runs after every solve.
      const auto where = [&] {
        return "constraint " + std::to_string(c) + " lists variable " + std::to_string(vid);
      };
      if (vid < 0 || static_cast<std::size_t>(vid) >= vars_.size())
        violated(where() + ": no such id");
      const Var& v = vars_[vid];
      if (!v.alive) violated(where() + ", which is not alive");
      if (std::count(v.cons.begin(), v.cons.end(), static_cast<int>(c)) != 1)
        violated(where() + ", which does not cross it exactly once");
      if (std::find(con.vars.begin() + static_cast<std::ptrdiff_t>(i) + 1, con.vars.end(), vid) !=
          con.vars.end())
        violated(where() + " twice");
      if (v.weight != 1.0) ++weighted;
    }
    if (weighted != con.weighted)
      violated("constraint " + std::to_string(c) + " counts " + std::to_string(con.weighted) +
               " weighted variables, it has " + std::to_string(weighted));
  }
  for (std::size_t v = 0; v < vars_.size(); ++v) {
    const Var& var = vars_[v];
    if (!var.alive) continue;
    if (!(var.weight > 0.0) || var.inv_weight != 1.0 / var.weight)
      violated("variable " + std::to_string(v) + " has weight " + num(var.weight) +
               " and inverse " + num(var.inv_weight));
    for (int c : var.cons) {
      const auto& list = cons_[c].vars;
      if (std::find(list.begin(), list.end(), static_cast<int>(v)) == list.end())
        violated("variable " + std::to_string(v) + " crosses constraint " + std::to_string(c) +
                 ", which does not list it");
    }
  }
  int free = 0;
  for (std::size_t id = 0; id < vars_.size(); ++id) {
    if ((free_bits_[id / 64] >> (id % 64) & 1U) == 0) continue;
    ++free;
    if (vars_[id].alive) violated("variable " + std::to_string(id) + " is alive and free");
  }
  if (free != num_free_)
    violated(std::to_string(free) + " free variable ids, the count says " +
             std::to_string(num_free_));
}

void MaxMinSolver::check_solution(std::span<const int> vars, std::span<const int> cons) const {
  // Per constraint: usage and the largest weighted rate x_v w_v of its variables.
  std::vector<double> usage(cons_.size(), 0.0), top(cons_.size(), 0.0);
  for (int c : cons) {
    for (int vid : cons_[c].vars) {
      usage[c] += vars_[vid].value;
      top[c] = std::max(top[c], vars_[vid].value * vars_[vid].weight);
    }
    if (usage[c] > capacity_[c] * (1.0 + kCheckRelTol))
      violated("constraint " + std::to_string(c) + " carries " + num(usage[c]) + " > capacity " +
               num(capacity_[c]) + " (relative tolerance " + num(kCheckRelTol) + ")");
  }
  const auto saturated = [&](int c) { return usage[c] >= capacity_[c] * (1.0 - kCheckRelTol); };
  for (int vid : vars) {
    const Var& v = vars_[vid];
    const auto name = [&] {
      return "variable " + std::to_string(vid) + " (rate " + num(v.value) + ")";
    };
    if (!(v.value > 0.0)) violated(name() + " has no positive rate");
    if (v.value == kUnbounded) {
      if (!v.cons.empty() || v.bound != kUnbounded)
        violated(name() + " is unlimited but has a constraint or a bound");
      continue;
    }
    if (v.value > v.bound * (1.0 + kCheckRelTol))
      violated(name() + " exceeds its bound " + num(v.bound));
    if (v.value >= v.bound * (1.0 - kCheckRelTol)) continue;  // held by its bound
    bool bottleneck = false;
    for (int c : v.cons)
      bottleneck =
          bottleneck || (saturated(c) && v.value * v.weight >= top[c] * (1.0 - kCheckRelTol));
    if (!bottleneck)
      violated(name() +
               " is below its bound and gets the largest share on no saturated "
               "constraint (not max-min fair)");
  }
  // Equal treatment: the same constraints, bound and weight give the same rate, bit for bit (the
  // fill fixes such variables in the same round at the same share).
  std::vector<std::pair<std::vector<int>, int>> keyed;
  keyed.reserve(vars.size());
  for (int vid : vars) {
    std::vector<int> key = vars_[vid].cons;
    std::sort(key.begin(), key.end());
    keyed.emplace_back(std::move(key), vid);
  }
  const auto less = [&](const auto& a, const auto& b) {
    const Var& x = vars_[a.second];
    const Var& y = vars_[b.second];
    if (a.first != b.first) return a.first < b.first;
    if (x.bound != y.bound) return x.bound < y.bound;
    if (x.weight != y.weight) return x.weight < y.weight;
    return a.second < b.second;
  };
  std::sort(keyed.begin(), keyed.end(), less);
  for (std::size_t i = 1; i < keyed.size(); ++i) {
    const Var& x = vars_[keyed[i - 1].second];
    const Var& y = vars_[keyed[i].second];
    if (keyed[i - 1].first == keyed[i].first && x.bound == y.bound && x.weight == y.weight &&
        x.value != y.value)
      violated("variables " + std::to_string(keyed[i - 1].second) + " and " +
               std::to_string(keyed[i].second) + " share constraints, bound and weight but get " +
               num(x.value) + " and " + num(y.value));
  }
}

double MaxMinSolver::usage(int c) const {
  double s = 0.0;
  for (int vid : cons_[c].vars) s += vars_[vid].value;
  return s;
}

}  // namespace placesim::sim
