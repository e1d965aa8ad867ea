// Sequence lengths of a data set, and the lengths a binned loader's micro-batches run at.
//
// A BERT pre-training step at max length 512 rarely runs 512 tokens: most sequences of the
// Wikipedia data are shorter (tests/data/seqlen/wikipedia_bert512.csv), and NVIDIA's LDDL loader
// (NVIDIA/LDDL lddl/torch/bert.py, lddl/dask/bert/binning.py) keeps them in bins of `bin` tokens
// ((0, 64], (64, 128], ...), draws every micro-batch from one bin, chosen with probability
// proportional to the sequences it has left, and pads the micro-batch to its longest sequence
// rounded up to a multiple of `align` (sequence_length_alignment=8). `simulate --graph gpt
// --graph-opt seq_dist=FILE,...` prices one step per padded length and reports the expected step
// (tools/cmd_simulate.cpp, docs/workloads.md):
//
//   const SeqHistogram h = read_seq_histogram("wikipedia_bert512.csv", 512);
//   for (const PaddedLength& p : padded_lengths(h, {.bin = 64, .align = 8, .draws = 16}))
//     expected += p.weight * step_time(p.seq);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace placesim::models {

/// count[L - 1]: the sequences of L tokens, L = 1 .. count.size() (the longest length allowed).
struct SeqHistogram {
  std::vector<std::int64_t> count;
};

/// A CSV of `length,count` rows after a `length,count` header (# comments and blank lines
/// skipped), lengths increasing, each from 1 to max_len, counts >= 0, some count > 0. Bad input
/// throws sim::InputError naming the file and the line.
SeqHistogram read_seq_histogram(const std::string& path, std::int64_t max_len);

struct BinnedLoader {
  std::int64_t bin = 64;   ///< tokens per bin (LDDL's --bin-size)
  std::int64_t align = 8;  ///< padded lengths are multiples of this (sequence_length_alignment)
  /// Sequences whose longest sets the step's length: the micro-batch, times the data-parallel
  /// replicas (every rank draws the same bin, LDDL's world RNG; the step waits for the slowest).
  std::int64_t draws = 1;
};

struct PaddedLength {
  std::int64_t seq = 0;  ///< padded length (a multiple of align, at most the histogram's max)
  double weight = 0.0;   ///< fraction of micro-batches that run at it
};

/// The padded lengths and how often micro-batches run at each: bin b is drawn with probability
/// (its sequences) / (all), and within it the longest of `draws` sequences is at most L with
/// probability F_b(L)^draws (F_b: the bin's cumulative fraction). Lengths whose weight is below
/// `min_weight` are dropped and the others rescaled to sum to 1; sorted by length.
std::vector<PaddedLength> padded_lengths(const SeqHistogram& h, const BinnedLoader& loader,
                                         double min_weight = 1e-3);

/// The `seq_dist`, `seq_bin` and `seq_align` keys of a --graph-opt string, and the options
/// without them (`rest`, also without `seq` and `masked`, which options_at sets per length).
struct SeqDistOptions {
  std::string file;
  BinnedLoader loader;
  std::int64_t seq = 0, masked = 0, batch = 0;
  std::string rest;
};

/// nullopt when `graph_opt` has no seq_dist key; a malformed or missing seq, batch, masked,
/// seq_bin or seq_align throws sim::InputError naming "<flag --graph-opt>" and the key.
std::optional<SeqDistOptions> take_seq_dist(const std::string& graph_opt);

/// The graph options of one padded length: `rest` plus seq=L and masked = max(1,
/// round(masked * L / seq)) (BERT masks 15 % of a sequence's tokens, at most
/// max_predictions_per_seq: the same share of the shorter length).
std::string options_at(const SeqDistOptions& o, std::int64_t seq);

}  // namespace placesim::models
