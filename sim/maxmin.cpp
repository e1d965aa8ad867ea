#include "sim/maxmin.hpp"

#include <algorithm>
#include <cassert>

namespace placesim::sim {

int MaxMinSolver::add_constraint(double capacity) {
  assert(capacity > 0.0);
  Con c;
  c.capacity = capacity;
  cons_.push_back(std::move(c));
  return static_cast<int>(cons_.size()) - 1;
}

int MaxMinSolver::add_variable(double bound, std::span<const int> constraints, double weight) {
  assert(weight > 0.0);
  int id;
  if (!free_vars_.empty()) {
    id = free_vars_.back();
    free_vars_.pop_back();
  } else {
    id = static_cast<int>(vars_.size());
    vars_.emplace_back();
  }
  Var& v = vars_[id];
  v.bound = bound;
  v.weight = weight;
  v.inv_weight = 1.0 / weight;
  v.value = 0.0;
  v.alive = true;
  v.fixed = false;
  v.cons.assign(constraints.begin(), constraints.end());
  for (int c : constraints) {
    cons_[c].vars.push_back(id);
    if (weight != 1.0) ++cons_[c].weighted;
    if (!cons_[c].dirty) {
      cons_[c].dirty = true;
      dirty_cons_.push_back(c);
    }
  }
  if (constraints.empty()) dirty_vars_.push_back(id);
  ++live_vars_;
  component_ready_ = false;
  return id;
}

void MaxMinSolver::remove_variable(int id) {
  Var& v = vars_[id];
  assert(v.alive);
  for (int c : v.cons) {
    auto& list = cons_[c].vars;
    list.erase(std::find(list.begin(), list.end(), id));
    if (v.weight != 1.0) --cons_[c].weighted;
    if (!cons_[c].dirty) {
      cons_[c].dirty = true;
      dirty_cons_.push_back(c);
    }
  }
  v.alive = false;
  v.value = 0.0;
  --live_vars_;
  // Keep the free list sorted descending so ids are reused lowest first (deterministic).
  free_vars_.insert(std::upper_bound(free_vars_.begin(), free_vars_.end(), id, std::greater<>()),
                    id);
  auto it = std::find(dirty_vars_.begin(), dirty_vars_.end(), id);
  if (it != dirty_vars_.end()) dirty_vars_.erase(it);
  component_ready_ = false;
}

void MaxMinSolver::collect_component() {
  comp_vars_.clear();
  comp_cons_.clear();
  act_vars_.clear();  // the bounded variables, for fill_unweighted
  comp_weighted_ = false;
  solved_ = false;
  ++stamp_;
  // Breadth-first over the bipartite graph from the touched constraints, in the order they were
  // touched; comp_cons_ doubles as the queue. Each constraint and variable is made ready for the
  // fill as it is reached (one pass over the component instead of two).
  const auto reach = [&](int c) {
    Con& con = cons_[c];
    con.mark = stamp_;
    con.remaining = con.capacity;
    con.unfixed_count = static_cast<int>(con.vars.size());
    con.unfixed = con.unfixed_count;
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

std::span<const int> MaxMinSolver::pending_component() {
  if (!component_ready_) collect_component();
  return comp_vars_;
}

void MaxMinSolver::fix(Var& v, double share) {
  v.value = std::min(share * v.inv_weight, v.bound);
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
        if (!v.fixed) v.value = -1.0;  // marked for fixing at `share`
      }
    }
    for (int vid : comp_vars_) {
      Var& v = vars_[vid];
      if (v.fixed) continue;
      if (v.value == -1.0 || v.bound * v.weight <= limit) {
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
        if (!v.fixed) v.value = -1.0;
      }
    }
    const bool all = share == kUnbounded;  // only unconstrained, unbounded variables remain
    std::size_t keep = 0;
    var_level = kUnbounded;
    for (int vid : act_vars_) {
      Var& v = vars_[vid];
      if (v.value == -1.0 || v.bound * v.weight <= limit) {
        fix(v, share);
      } else if (all) {
        v.value = kUnbounded;
        v.fixed = true;
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
  act_cons_.clear();
  for (int c : comp_cons_) {
    Con& con = cons_[c];
    if (con.unfixed_count == 0) continue;
    con.level = std::max(con.remaining, 0.0) / static_cast<double>(con.unfixed_count);
    act_cons_.push_back(c);
  }
  double var_level = kUnbounded;  // the lowest open bound
  for (int vid : act_vars_) var_level = std::min(var_level, vars_[vid].bound);
  std::size_t left = comp_vars_.size();
  while (left > 0) {
    // The share, dropping the constraints the last round closed.
    double share = var_level;
    std::size_t keep = 0;
    for (int c : act_cons_) {
      const Con& con = cons_[c];
      if (con.unfixed_count == 0) continue;
      act_cons_[keep++] = c;
      share = std::min(share, con.level);
    }
    act_cons_.resize(keep);
    if (share == kUnbounded) {  // only unconstrained, unbounded variables remain
      for (int vid : comp_vars_) {
        Var& v = vars_[vid];
        if (!v.fixed) {
          v.value = kUnbounded;
          v.fixed = true;
        }
      }
      return;
    }
    const double limit = share * (1.0 + kRelEps);
    ++stamp_;  // marks the constraints charged this round
    touched_.clear();
    const auto charge = [&](Var& v) {
      v.value = share;
      v.fixed = true;
      --left;
      for (int c : v.cons) {
        Con& con = cons_[c];
        con.remaining -= share;
        --con.unfixed_count;
        if (con.mark != stamp_) {
          con.mark = stamp_;
          touched_.push_back(c);
        }
      }
    };
    // Saturation is judged on the levels at the start of the round (they change only below).
    for (int c : act_cons_) {
      if (cons_[c].level > limit) continue;
      for (int vid : cons_[c].vars)
        if (!vars_[vid].fixed) charge(vars_[vid]);
    }
    if (!act_vars_.empty()) {
      keep = 0;
      var_level = kUnbounded;
      for (int vid : act_vars_) {
        Var& v = vars_[vid];
        if (v.fixed) continue;
        if (v.bound <= limit) {
          charge(v);
        } else {
          act_vars_[keep++] = vid;
          var_level = std::min(var_level, v.bound);
        }
      }
      act_vars_.resize(keep);
    }
    for (int c : touched_) {
      Con& con = cons_[c];
      if (con.unfixed_count > 0)
        con.level = std::max(con.remaining, 0.0) / static_cast<double>(con.unfixed_count);
    }
  }
}

bool MaxMinSolver::solve() {
  solved_ = false;
  if (dirty_cons_.empty() && dirty_vars_.empty()) return false;
  if (!component_ready_) collect_component();
  for (int c : dirty_cons_) cons_[c].dirty = false;
  // Progressive filling (maxmin.hpp); the three fills give the same bits. The plain one, which
  // scans the whole component every round, is the cheapest on small components (cachegrind: the
  // heavy sim_bench case, a few flows per component); on large ones the active-set one, or
  // without weights the one that visits only saturated constraints (the race: ~15 flows).
  if (comp_vars_.size() <= kActiveFillFrom) {
    fill_plain();
  } else if (!comp_weighted_) {
    fill_unweighted();
  } else {
    fill_active();
  }
  solved_ = true;
  dirty_cons_.clear();
  dirty_vars_.clear();
  component_ready_ = false;
  return true;
}

double MaxMinSolver::usage(int c) const {
  double s = 0.0;
  for (int vid : cons_[c].vars) s += vars_[vid].value;
  return s;
}

}  // namespace placesim::sim
