// Max-min fair bandwidth sharing (the flow-level model of SimGrid's LMM solver, without weights),
// solved incrementally: only the connected component of constraints and variables touched since
// the last solve is recomputed.
//
//   MaxMinSolver s;
//   const int link = s.add_constraint(12e9);            // capacity in bytes/s
//   const int a = s.add_variable(kUnbounded, {&link, 1});
//   const int b = s.add_variable(5e9, {&link, 1});      // capped at 5 GB/s (a fat-pipe hop)
//   s.solve();                                          // a = 7e9, b = 5e9
//   s.remove_variable(b);
//   s.solve();                                          // a = 12e9
//
// The problem. Variables x_v >= 0 (flow rates), constraints c with capacities C_c, each variable
// crossing a set S(v) of constraints and carrying an optional bound B_v (+inf when none):
//
//     for every constraint c:   sum_{v : c in S(v)} x_v  <=  C_c
//     for every variable v:     x_v <= B_v
//
// The max-min fair allocation is the unique feasible x in which no x_v can grow without making
// some x_w <= x_v shrink. It is computed by progressive filling ("water filling"):
//
//     U := all variables, R_c := C_c, n_c := sum_{v in U : c in S(v)} 1 / w_v
//     while U is not empty:
//         s := min( min_{c : n_c > 0} R_c / n_c ,  min_{v in U} B_v w_v )
//         every v in U with B_v w_v <= s, or crossing a c with R_c / n_c <= s, gets
//         x_v := min(s / w_v, B_v) and leaves U; R_c -= x_v and n_c -= 1 / w_v for each c in S(v)
//
// with weights w_v = 1 unless given (SimGrid's LMM "sharing penalty": rates on a saturated
// constraint are proportional to 1 / w_v; with all weights 1 the arithmetic is the unweighted
// algorithm's, bit for bit).
//
// Ties are detected with a relative tolerance of kRelEps. A variable with no constraint and no
// bound gets +inf. Because the allocation of one connected component of the variable-constraint
// graph does not depend on any other component, adding or removing a variable only requires
// re-solving the component(s) it touches: `solve()` does exactly that and reports which variables
// it recomputed (`last_changed()`), so the caller can bring their progress up to date first
// (`pending_component()` lists them before solving).
//
// Determinism: components are explored in the order constraints and variables were created, and
// all arithmetic is in a fixed order, so equal inputs give bit-identical rates.
//
// Invariant checks (for tests; SimGrid's lmm System::check_concurrency and its solver's sanity
// asserts are the model). `set_check_invariants(true)`, or PLACESIM_CHECK_MAXMIN=1 in the
// environment (read once per process, the default of every solver created after), makes every
// solve() verify the component it solved and throw MaxMinInvariantError on a violation:
// bookkeeping (each live variable listed exactly once by each of its constraints and by no
// other, weighted counts, live count, nothing left dirty), feasibility (each constraint's usage
// <= capacity (1 + kCheckRelTol), each bound respected), positivity (every rate > 0), max-min
// optimality (each variable is at its bound or crosses a saturated constraint, usage >=
// capacity (1 - kCheckRelTol), on which its weighted rate x_v w_v is the largest to kCheckRelTol)
// and equal treatment (variables with the same constraints, bound and weight have the same rate,
// bit for bit). It costs about one more solve; `check_invariants()` runs it on demand.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

namespace placesim::sim {

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

/// Thrown by MaxMinSolver's invariant check (a bug in the solver or its caller, not bad input).
class MaxMinInvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class MaxMinSolver {
 public:
  static constexpr double kRelEps = 1e-12;
  /// Relative tolerance of the invariant check: the fill accumulates one rounding per variable
  /// charged to a constraint, far below this.
  static constexpr double kCheckRelTol = 1e-9;

  MaxMinSolver() : check_(check_default()) {}

  /// Turns the invariant check after every solve() on or off (default: PLACESIM_CHECK_MAXMIN).
  void set_check_invariants(bool on) { check_ = on; }
  [[nodiscard]] bool check_invariants_enabled() const { return check_; }
  /// Process-wide default for solvers created from now on; starts as PLACESIM_CHECK_MAXMIN=1.
  static void set_check_invariants_default(bool on);
  /// Checks the whole system (every live variable and constraint) now; throws
  /// MaxMinInvariantError naming the first violation. Call after solve(), not between a change
  /// and the next solve (then rates are stale by design).
  void check_invariants() const;

  /// Adds a constraint with `capacity` (> 0) and returns its id (ids are dense, from 0).
  int add_constraint(double capacity);
  /// Adds a variable crossing `constraints` (each at most once) with an upper `bound`; returns its
  /// id. Ids of removed variables are reused, lowest first. `weight` (> 0) is SimGrid's sharing
  /// penalty: on a saturated constraint the variables' rates are proportional to 1 / weight
  /// (TCP flows weighted by their route latency, network.hpp); 1 for all = plain max-min.
  int add_variable(double bound, std::span<const int> constraints, double weight = 1.0);
  /// Removes a variable. When that provably leaves every other rate unchanged (see
  /// remove_variable in maxmin.cpp: each flow sharing a constraint with it is bottlenecked
  /// elsewhere), nothing is marked for re-solving and the next solve() has nothing to do.
  void remove_variable(int id);
  /// Turns the no-re-solve removals above and additions below off (on by default), e.g. to
  /// compare.
  void set_skip_neutral_removals(bool on) { skip_neutral_ = on; }
  /// Removals that needed no re-solve, since creation.
  [[nodiscard]] std::int64_t removals_without_solve() const { return removals_kept_; }
  /// Additions that needed no re-solve, since creation: when nothing is pending and no variable
  /// sharing a constraint with the new one is bottlenecked on one of its constraints, the new
  /// variable takes the least room left on its constraints (or its bound) and, if it is then the
  /// largest on the constraint it saturates, every other rate provably stays (addition_alone in
  /// maxmin.cpp). The next solve() reports only it as changed.
  [[nodiscard]] std::int64_t additions_without_solve() const { return additions_kept_; }
  /// Solves that re-filled only the variables at or above the lowest rate a change can move.
  [[nodiscard]] std::int64_t partial_solves() const { return partial_solves_; }

  /// The variables whose rate the next `solve()` will recompute (the components touched since
  /// the last solve), in a deterministic order. Valid until the next add/remove/solve.
  std::span<const int> pending_component();
  /// Recomputes the touched components. Returns true if anything was recomputed.
  bool solve();
  /// Variables recomputed by the last `solve()`, until the next `pending_component()` or `solve()`.
  [[nodiscard]] std::span<const int> last_changed() const {
    return solved_ ? std::span<const int>(comp_vars_) : std::span<const int>();
  }

  [[nodiscard]] double value(int v) const { return vars_[v].value; }
  [[nodiscard]] bool alive(int v) const { return vars_[v].alive; }
  [[nodiscard]] int num_constraints() const { return static_cast<int>(cons_.size()); }
  [[nodiscard]] int num_live_variables() const { return live_vars_; }
  /// Sum of the rates of the live variables crossing constraint `c` (for checks and reports).
  [[nodiscard]] double usage(int c) const;

 private:
  struct Var {
    double bound = kUnbounded;
    double weight = 1.0;
    double inv_weight = 1.0;  // 1 / weight, so that weight 1 costs no division
    double value = 0.0;
    std::vector<int> cons;  // capacity kept when the id is reused
    bool alive = false;
    bool fixed = false;      // scratch for solve
    std::uint32_t mark = 0;  // component stamp
    // The saturated constraint that fixed it in the last solve (where its weighted rate is the
    // largest), or -1 when its bound holds it: what remove_variable() and addition_alone() read.
    int bottleneck = -1;
  };
  // 64 bytes, so that an index is a shift (the capacity, read once per collection, is apart).
  struct Con {
    double remaining = 0.0;  // scratch
    double unfixed = 0;      // scratch: sum of 1 / weight of the unfixed variables
    double level = 0.0;      // scratch: remaining / unfixed in the current round
    std::vector<int> vars;   // live variables crossing it, in insertion order
    int weighted = 0;        // live variables with a weight other than 1
    std::uint32_t mark = 0;
    int unfixed_count = 0;  // scratch
    bool dirty = false;
  };
  static_assert(sizeof(Con) == 64);

  friend struct MaxMinSolverTestAccess;  // tests corrupt the state to see the check fail

  static bool check_default();
  bool addition_alone(int id);  // sets id's rate when no other changes (see above)
  // Stamps v's constraints in own_mark_, so that "is constraint b one of v's" is one load
  // (own_mark_[b + 1] == own_stamp_; b = -1, no bottleneck, reads slot 0, never stamped).
  void mark_own(const Var& v);
  void check_bookkeeping() const;
  void check_solution(std::span<const int> vars, std::span<const int> cons) const;
  void start_collection();  // empties the component lists, new stamp
  void collect_component();
  bool collect_partial();  // the variables that can change only (maxmin.cpp); false: not here
  bool abandon_partial();  // undoes a started collect_partial; returns false
  [[nodiscard]] double rate_floor(int id) const;  // lower bound on an added variable's new rate
  void fix(Var& v, double share);  // fixes v at the level `share`, charging its constraints
  void fill_plain();
  void fill_active();
  void fill_unweighted();                            // all weights 1: the same bits, cheaper rounds
  static constexpr std::size_t kActiveFillFrom = 8;  // component size (variables)

  std::vector<Var> vars_;
  std::vector<Con> cons_;
  std::vector<double> capacity_;  // per constraint
  // Per constraint + 1 (mark_own): the constraints of the variable being added or removed.
  std::vector<std::uint64_t> own_mark_ = std::vector<std::uint64_t>(1, 0);
  std::uint64_t own_stamp_ = 0;
  // Free variable ids as a bitmap (bit i of word i / 64): the lowest is reused first
  // (deterministic ids), found with one count of trailing zeros instead of a sorted list's insert.
  std::vector<std::uint64_t> free_bits_;
  int num_free_ = 0;
  std::vector<int> dirty_cons_;
  std::vector<int> dirty_vars_;  // new variables with no constraint
  std::vector<int> fast_vars_;   // additions set alone since the last solve
  // A list of ids whose room is made once (fit(): every variable or every constraint), so that
  // the collection's and the fills' appends need no capacity check.
  struct IdList {
    std::vector<int> room;
    std::size_t n = 0;
    void fit(std::size_t size) {
      if (room.size() < size) room.resize(size);
    }
    void clear() { n = 0; }
    void push_back(int id) { room[n++] = id; }
    void resize(std::size_t size) { n = size; }
    template <class It>
    void assign(It first, It last) {
      n = 0;
      for (; first != last; ++first) room[n++] = *first;
    }
    [[nodiscard]] std::size_t size() const { return n; }
    [[nodiscard]] bool empty() const { return n == 0; }
    int& operator[](std::size_t i) { return room[i]; }
    int operator[](std::size_t i) const { return room[i]; }
    int* begin() { return room.data(); }
    int* end() { return room.data() + n; }
    [[nodiscard]] const int* begin() const { return room.data(); }
    [[nodiscard]] const int* end() const { return room.data() + n; }
    operator std::span<const int>() const { return {room.data(), n}; }
  };
  IdList comp_vars_, comp_cons_;  // the component being (or last) solved
  IdList act_vars_, act_cons_;    // scratch of solve: what is still open
  IdList touched_;                // scratch of fill_unweighted
  std::uint32_t stamp_ = 0;
  bool component_ready_ = false;
  bool comp_weighted_ = false;  // a variable of the component has a weight other than 1
  bool solved_ = false;         // comp_vars_ holds what the last solve() recomputed
  bool check_ = false;          // check invariants after each solve
  bool skip_neutral_ = true;    // removals that keep every rate need no solve
  std::int64_t removals_kept_ = 0;
  std::int64_t additions_kept_ = 0;
  std::int64_t partial_solves_ = 0;
  // No variable with a rate below this can change at the next solve (collect_partial).
  double change_floor_ = kUnbounded;
  // The least level in act_cons_ as the collection left it: the fill's first share.
  double first_level_ = kUnbounded;
  std::vector<double> below_;      // scratch of collect_partial: rates below the cut, ascending
  std::vector<int> pending_adds_;  // variables added (weight 1, not alone) since the last solve
  int live_vars_ = 0;
};

}  // namespace placesim::sim
