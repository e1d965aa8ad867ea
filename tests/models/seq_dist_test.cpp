// The padded lengths of a binned loader (NVIDIA LDDL) over a sequence-length histogram, and the
// seq_dist graph options: hand-computed cases and the Wikipedia histogram's published totals.
#include "models/seq_dist.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "sim/error.hpp"

namespace placesim::models {
namespace {

const std::string kWiki = PLACESIM_TEST_DATA "/seqlen/wikipedia_bert512.csv";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("placesim_seq_dist_" + name);
  std::ofstream(p) << text;
  return p.string();
}

// Lengths 1, 3 and 8 (twice); bins of 4, multiples of 2, the longest of 2 draws. Bin (0, 4] has
// half the sequences: both draws of length 1 (1/4) pad to 2, else to 4 (3/4). Bin (4, 8]: to 8.
TEST(SeqDist, LongestOfTheDrawsRoundedToTheAlignment) {
  const SeqHistogram h{{1, 0, 1, 0, 0, 0, 0, 2}};
  const auto p = padded_lengths(h, {.bin = 4, .align = 2, .draws = 2}, 0.0);
  ASSERT_EQ(p.size(), 3U);
  EXPECT_EQ(p[0].seq, 2);
  EXPECT_DOUBLE_EQ(p[0].weight, 0.5 * 0.25);
  EXPECT_EQ(p[1].seq, 4);
  EXPECT_DOUBLE_EQ(p[1].weight, 0.5 * 0.75);
  EXPECT_EQ(p[2].seq, 8);
  EXPECT_DOUBLE_EQ(p[2].weight, 0.5);
  // One draw: the bin's own fractions.
  const auto one = padded_lengths(h, {.bin = 4, .align = 2, .draws = 1}, 0.0);
  EXPECT_DOUBLE_EQ(one[0].weight, 0.25);
  // Below min_weight: dropped, the rest rescaled.
  const auto cut = padded_lengths(h, {.bin = 4, .align = 2, .draws = 2}, 0.2);
  ASSERT_EQ(cut.size(), 2U);
  EXPECT_DOUBLE_EQ(cut[0].weight, 0.375 / 0.875);
  EXPECT_DOUBLE_EQ(cut[1].weight, 0.5 / 0.875);
}

// Graphcore's histogram as published: 16,279,552 sequences, a packing speed-up limit of 2.0013
// (512 / mean length; graphcore/examples tutorials/blogs_code/packedBERT/README.md).
TEST(SeqDist, WikipediaHistogramReadsAsPublished) {
  const SeqHistogram h = read_seq_histogram(kWiki, 512);
  std::int64_t n = 0, tokens = 0;
  for (std::size_t i = 0; i < h.count.size(); ++i) {
    n += h.count[i];
    tokens += h.count[i] * static_cast<std::int64_t>(i + 1);
  }
  EXPECT_EQ(n, 16279552);
  EXPECT_NEAR(512.0 * static_cast<double>(n) / static_cast<double>(tokens), 2.0013, 5e-5);
  // Bins of one token, no alignment, one draw: the histogram itself.
  const auto p = padded_lengths(h, {.bin = 1, .align = 1, .draws = 1}, 0.0);
  EXPECT_EQ(p.back().seq, 512);
  EXPECT_DOUBLE_EQ(p.back().weight, 3815044.0 / 16279552.0);
  // LDDL's bins of 64 with 16 draws, nothing dropped: the top bin's share is its sequences'
  // (4,428,329 of lengths 449-512), every length is a multiple of 8, the weights sum to 1.
  double sum = 0.0, top = 0.0;
  for (const PaddedLength& l : padded_lengths(h, {.bin = 64, .align = 8, .draws = 16}, 0.0)) {
    EXPECT_EQ(l.seq % 8, 0);
    sum += l.weight;
    if (l.seq > 448) top += l.weight;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(top, 4428329.0 / 16279552.0, 1e-12);
}

TEST(SeqDist, MalformedFilesNameTheLine) {
  const auto fails = [](const std::string& name, const std::string& text, const std::string& want) {
    const std::string path = write_temp(name, text);
    try {
      read_seq_histogram(path, 512);
      ADD_FAILURE() << name << " was accepted";
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
  };
  fails("header", "len,n\n1,2\n", "line 1: expected the header length,count");
  fails("long", "# c\nlength,count\n5,1\n513,2\n",
        "line 4: expected a length from 1 to the graph's seq (512)");
  fails("order", "length,count\n5,1\n5,2\n", "line 3: expected lengths in increasing order");
  fails("negative", "length,count\n5,-1\n", "line 2: expected a count from 0");
  fails("text", "length,count\n5,abc\n", "line 2: expected two integers");
  fails("zero", "length,count\n5,0\n", "expected some count above 0");
  fails("empty", "", "line 1: expected the header");
}

TEST(SeqDist, GraphOptionsPerLength) {
  EXPECT_FALSE(take_seq_dist("seq=512,batch=4").has_value());
  const auto o = take_seq_dist("layers=2,seq=512,masked=80,batch=16,seq_dist=x.csv,seq_bin=32");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->file, "x.csv");
  EXPECT_EQ(o->loader.bin, 32);
  EXPECT_EQ(o->loader.align, 8);
  EXPECT_EQ(o->loader.draws, 16);
  // masked scales with the length (80 of 512 -> 40 of 256), at least 1.
  EXPECT_EQ(options_at(*o, 256), "layers=2,batch=16,seq=256,masked=40");
  EXPECT_EQ(options_at(*o, 1), "layers=2,batch=16,seq=1,masked=1");
  // Without masked the head predicts every position (a causal LM): masked follows seq.
  EXPECT_EQ(options_at(*take_seq_dist("seq=64,batch=2,seq_dist=f"), 24),
            "batch=2,seq=24,masked=24");
  EXPECT_THROW(take_seq_dist("seq=512,seq_dist=x.csv"), sim::InputError);     // no batch
  EXPECT_THROW(take_seq_dist("batch=4,seq_dist=x.csv"), sim::InputError);     // no seq
  EXPECT_THROW(take_seq_dist("seq=512,batch=4,seq_dist="), sim::InputError);  // no file
  EXPECT_THROW(take_seq_dist("seq=512,batch=4,seq_dist=f,seq_bin=0"), sim::InputError);
  EXPECT_THROW(take_seq_dist("seq=512,batch=4,seq_dist=f,seq_align=x"), sim::InputError);
}

}  // namespace
}  // namespace placesim::models
