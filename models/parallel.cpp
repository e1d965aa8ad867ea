// Parallel training graph transforms (models/parallel.hpp).
#include "models/parallel.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "sim/error.hpp"

namespace placesim::models {

namespace {

std::int64_t parse_size_value(const std::string& v, const std::string& origin,
                              const std::string& key) {
  try {
    return sim::parse_bytes(v).v;
  } catch (const sim::InputError&) {
    throw sim::InputError(origin, key, "a size such as 25MiB, got \"" + v + "\"");
  }
}

}  // namespace

ParallelSpec parse_parallel(const std::string& text, const std::string& origin) {
  ParallelSpec s;
  std::stringstream ss(text);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw sim::InputError(origin, item,
                            "key=value (dp=8, tp=1, pp=1, bucket=25MiB), got \"" + item + "\"");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    any = true;
    if (k == "bucket" || k == "first_bucket") {
      const std::int64_t b = parse_size_value(v, origin, k);
      if (b < 1) throw sim::InputError(origin, k, "a positive size, got \"" + v + "\"");
      (k == "bucket" ? s.bucket_bytes : s.first_bucket_bytes) = b;
      continue;
    }
    if (k == "dp" && v == "all") {  // every GPU of the cluster (sweeps vary the GPU count)
      s.dp = 0;
      continue;
    }
    int n = 0;
    try {
      std::size_t pos = 0;
      n = std::stoi(v, &pos);
      if (pos != v.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1 || n > 65536)
      throw sim::InputError(origin, k, "a whole number from 1, got \"" + v + "\"");
    if (k == "dp")
      s.dp = n;
    else if (k == "tp")
      s.tp = n;
    else if (k == "pp")
      s.pp = n;
    else
      throw sim::InputError(origin, k,
                            "one of dp, tp, pp, bucket, first_bucket, got \"" + k + "\"");
  }
  if (!any)
    throw sim::InputError(origin, "", "a parallel layout such as dp=8, got \"" + text + "\"");
  if (s.tp != 1 || s.pp != 1)
    throw sim::InputError(
        origin, s.tp != 1 ? "tp" : "pp",
        "1 (only data parallelism is implemented so far; docs/collectives.md), got " +
            std::to_string(s.tp != 1 ? s.tp : s.pp));
  return s;
}

std::string to_string(const ParallelSpec& s) {
  std::string out = "dp=" + (s.dp == 0 ? std::string("all") : std::to_string(s.dp));
  if (s.tp != 1) out += ",tp=" + std::to_string(s.tp);
  if (s.pp != 1) out += ",pp=" + std::to_string(s.pp);
  return out;
}

std::int64_t graph_batch(const sim::Graph& g) {
  const auto it = g.metadata.find("options");
  if (it == g.metadata.end()) return 0;
  std::stringstream ss(it->second);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item.rfind("batch=", 0) == 0) {
      try {
        return std::stoll(item.substr(6));
      } catch (const std::exception&) {
        return 0;
      }
    }
  return 0;
}

ParallelJob make_parallel(const sim::Graph& g, const sim::Cluster& c, const ParallelSpec& spec) {
  const std::string origin = "<parallel " + to_string(spec) + ">";
  const std::vector<sim::DeviceId> gpus = c.gpus();
  ParallelSpec s = spec;
  if (s.dp == 0) s.dp = std::max(1, static_cast<int>(gpus.size()));
  if (static_cast<int>(gpus.size()) < s.dp)
    throw sim::InputError(origin, "dp",
                          "at most the " + std::to_string(gpus.size()) + " GPUs of cluster " +
                              c.name + ", got " + std::to_string(s.dp));
  const int n = g.num_ops();
  // Gradients: inputs of update ops made by backward ops, in the order the backward pass makes
  // them (topological rank of the producer), each tensor once.
  std::vector<int> rank(n);
  for (int i = 0; i < n; ++i) rank[g.topo_order[i]] = i;
  std::set<sim::TensorRef> seen;
  std::vector<sim::TensorRef> grads;
  for (const sim::Op& op : g.ops) {
    if (op.phase != sim::Phase::Update) continue;
    for (const sim::TensorRef& t : op.inputs)
      if (g.ops[t.op].phase == sim::Phase::Backward && seen.insert(t).second) grads.push_back(t);
  }
  std::stable_sort(
      grads.begin(), grads.end(),
      [&](const sim::TensorRef& a, const sim::TensorRef& b) { return rank[a.op] < rank[b.op]; });
  if (grads.empty() && s.dp > 1)
    throw sim::InputError(origin, g.name,
                          "a training graph with update ops fed by backward ops (gradients "
                          "to all-reduce), got none");
  // Buckets, filled in gradient order: the first up to first_bucket_bytes, then bucket_bytes.
  std::vector<std::vector<sim::TensorRef>> buckets;
  std::vector<std::int64_t> bucket_size;
  std::map<sim::TensorRef, int> bucket_of;
  ParallelJob job;
  for (const sim::TensorRef& t : grads) {
    const std::int64_t b = g.ops[t.op].outputs[t.output].bytes.v;
    const std::int64_t cap =
        buckets.size() <= 1 ? (buckets.empty() ? 0 : s.first_bucket_bytes) : s.bucket_bytes;
    if (buckets.empty() || (bucket_size.back() + b > cap && bucket_size.back() > 0)) {
      buckets.emplace_back();
      bucket_size.push_back(0);
    }
    buckets.back().push_back(t);
    bucket_size.back() += b;
    bucket_of[t] = static_cast<int>(buckets.size()) - 1;
    job.gradient_bytes += b;
  }
  job.replicas = s.dp;
  job.buckets = s.dp > 1 ? static_cast<int>(buckets.size()) : 0;
  job.graph.name = g.name + "@" + to_string(s);
  job.graph.metadata = g.metadata;
  job.graph.metadata["parallel"] = to_string(s);
  for (int k = 0; k < s.dp; ++k) {
    const std::string pre = s.dp > 1 ? "dp" + std::to_string(k) + "/" : "";
    const sim::DeviceId gpu = gpus[k];
    const sim::OpId base = job.graph.num_ops();
    for (const sim::Op& op : g.ops) {
      sim::Op r = op;
      r.name = pre + op.name;
      if (!r.group.empty()) r.group = pre + r.group;
      for (sim::TensorRef& t : r.inputs) t.op += base;
      for (sim::OpId& o : r.control_inputs) o += base;
      job.graph.add_op(std::move(r));
      const bool cpu = op.device_kind && *op.device_kind == sim::DeviceKind::Cpu;
      job.placement.device_of.push_back(cpu ? c.devices[gpu].host : gpu);
    }
    if (s.dp == 1) continue;
    std::vector<sim::OpId> bucket_op(buckets.size());
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      sim::Op ar;
      ar.name = pre + "ddp/allreduce_bucket" + std::to_string(b);
      ar.type = "AllReduce";
      ar.phase = sim::Phase::Backward;
      ar.layer = "ddp";
      for (const sim::TensorRef& t : buckets[b]) ar.inputs.push_back({t.op + base, t.output});
      sim::TensorOut flat;  // the bucket's flat gradient buffer, reduced in place
      flat.bytes = sim::Bytes{bucket_size[b]};
      ar.outputs = {flat};
      sim::CollectiveCall call;
      call.kind = sim::CollectiveKind::AllReduce;
      call.bytes = flat.bytes;
      call.id = "ddp/bucket" + std::to_string(b);
      ar.collective = call;
      bucket_op[b] = job.graph.add_op(std::move(ar));
      job.placement.device_of.push_back(gpu);
    }
    // Each update waits for the all-reduce of the buckets holding its gradients.
    for (sim::OpId o = 0; o < n; ++o) {
      if (g.ops[o].phase != sim::Phase::Update) continue;
      sim::Op& u = job.graph.ops[base + o];
      for (const sim::TensorRef& t : g.ops[o].inputs) {
        const auto it = bucket_of.find(t);
        if (it == bucket_of.end()) continue;
        const sim::OpId b = bucket_op[it->second];
        if (std::find(u.control_inputs.begin(), u.control_inputs.end(), b) ==
            u.control_inputs.end())
          u.control_inputs.push_back(b);
      }
    }
  }
  job.graph.finalize(origin);
  return job;
}

}  // namespace placesim::models
