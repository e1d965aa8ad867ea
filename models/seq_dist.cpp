#include "models/seq_dist.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "models/workloads.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::models {

namespace {

constexpr const char* kFlag = "<flag --graph-opt>";

bool parse_int(const std::string& s, std::int64_t& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && !s.empty();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

}  // namespace

SeqHistogram read_seq_histogram(const std::string& path, std::int64_t max_len) {
  std::istringstream in(sim::read_text_file(path));
  SeqHistogram h;
  h.count.assign(static_cast<std::size_t>(max_len), 0);
  std::string raw;
  int line = 0;
  bool header = false;
  std::int64_t last = 0, total = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string s = trimmed(raw);
    const std::string where = "line " + std::to_string(line);
    if (s.empty() || s.front() == '#') continue;
    if (!header) {
      if (s != "length,count")
        throw sim::InputError(path, where, "the header length,count, got \"" + s + "\"");
      header = true;
      continue;
    }
    const std::size_t comma = s.find(',');
    std::int64_t len = 0, n = 0;
    if (comma == std::string::npos || !parse_int(s.substr(0, comma), len) ||
        !parse_int(s.substr(comma + 1), n))
      throw sim::InputError(path, where, "two integers length,count, got \"" + s + "\"");
    if (len < 1 || len > max_len)
      throw sim::InputError(path, where,
                            "a length from 1 to the graph's seq (" + std::to_string(max_len) +
                                "), got " + std::to_string(len));
    if (len <= last)
      throw sim::InputError(path, where,
                            "lengths in increasing order, got " + std::to_string(len) + " after " +
                                std::to_string(last));
    if (n < 0 || n > (std::int64_t{1} << 50))
      throw sim::InputError(path, where, "a count from 0 to 2^50, got " + std::to_string(n));
    h.count[static_cast<std::size_t>(len - 1)] = n;
    last = len;
    total += n;
  }
  if (!header) throw sim::InputError(path, "line 1", "the header length,count, got an empty file");
  if (total == 0)
    throw sim::InputError(path, "line " + std::to_string(line), "some count above 0, got none");
  return h;
}

std::vector<PaddedLength> padded_lengths(const SeqHistogram& h, const BinnedLoader& loader,
                                         double min_weight) {
  const auto max_len = static_cast<std::int64_t>(h.count.size());
  // cum[L]: sequences of at most L tokens.
  std::vector<double> cum(h.count.size() + 1, 0.0);
  for (std::size_t i = 0; i < h.count.size(); ++i)
    cum[i + 1] = cum[i] + static_cast<double>(h.count[i]);
  const double total = cum.back();
  const auto n = static_cast<double>(loader.draws);
  std::map<std::int64_t, double> weight;
  for (std::int64_t lo = 1; lo <= max_len; lo += loader.bin) {
    const std::int64_t hi = std::min(lo + loader.bin - 1, max_len);
    const double in_bin = cum[static_cast<std::size_t>(hi)] - cum[static_cast<std::size_t>(lo - 1)];
    if (in_bin <= 0.0) continue;
    // F(L): the bin's fraction of sequences of at most L tokens, L in [lo - 1, hi].
    const auto frac = [&](std::int64_t l) {
      l = std::clamp(l, lo - 1, hi);
      return (cum[static_cast<std::size_t>(l)] - cum[static_cast<std::size_t>(lo - 1)]) / in_bin;
    };
    // The longest of the draws, rounded up to a multiple of align: A when it is in (A - align, A].
    for (std::int64_t a = (lo + loader.align - 1) / loader.align * loader.align;
         a - loader.align < hi; a += loader.align) {
      const double p = std::pow(frac(a), n) - std::pow(frac(a - loader.align), n);
      if (p > 0.0) weight[std::min(a, max_len)] += in_bin / total * p;
    }
  }
  std::vector<PaddedLength> out;
  double kept = 0.0;
  for (const auto& [seq, w] : weight)
    if (w >= min_weight) {
      out.push_back({seq, w});
      kept += w;
    }
  for (PaddedLength& p : out) p.weight /= kept;
  return out;
}

std::optional<SeqDistOptions> take_seq_dist(const std::string& graph_opt) {
  GraphOptions o(graph_opt, kFlag);  // rejects a key given twice
  if (!o.has("seq_dist")) return std::nullopt;
  SeqDistOptions s;
  for (const char* key : {"seq", "batch"})
    if (!o.has(key))
      throw sim::InputError(kFlag, key,
                            std::string("an explicit ") + key +
                                "= with seq_dist (the longest "
                                "length and the micro-batch the loader draws), got none");
  s.seq = o.get_int("seq", 0);
  s.batch = o.get_int("batch", 0);
  s.masked = o.get_int("masked", s.seq, 1, s.seq);
  s.loader.bin = o.get_int("seq_bin", 64, 1, s.seq);
  s.loader.align = o.get_int("seq_align", 8, 1, s.seq);
  s.loader.draws = s.batch;
  std::size_t pos = 0;
  while (pos <= graph_opt.size()) {
    const std::size_t end = std::min(graph_opt.find(',', pos), graph_opt.size());
    const std::string item = trimmed(graph_opt.substr(pos, end - pos));
    pos = end + 1;
    const std::string key = item.substr(0, item.find('='));
    if (key == "seq_dist") {
      s.file = item.size() > key.size() ? item.substr(key.size() + 1) : "";
    } else if (!item.empty() && key != "seq" && key != "masked" && key != "seq_bin" &&
               key != "seq_align") {
      s.rest += (s.rest.empty() ? "" : ",") + item;
    }
    if (end >= graph_opt.size()) break;
  }
  if (s.file.empty())
    throw sim::InputError(kFlag, "seq_dist", "a CSV file of length,count, got none");
  return s;
}

std::string options_at(const SeqDistOptions& o, std::int64_t seq) {
  const auto masked = std::max<std::int64_t>(
      1, std::llround(static_cast<double>(o.masked) * static_cast<double>(seq) /
                      static_cast<double>(o.seq)));
  return o.rest + (o.rest.empty() ? "" : ",") + "seq=" + std::to_string(seq) +
         ",masked=" + std::to_string(masked);
}

}  // namespace placesim::models
