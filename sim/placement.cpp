#include "sim/placement.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "sim/error.hpp"
#include "sim/io_util.hpp"

namespace placesim::sim {

using nlohmann::json;

namespace {

std::string shown(const json& v) {
  if (v.is_string()) return "\"" + printable(v.get_ref<const std::string&>()) + "\"";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  return printable(v.dump());
}

std::map<std::string, std::string> name_map(const json& v, const std::string& key,
                                            const std::string& origin) {
  if (!v.is_object())
    throw InputError(origin, key, "an object mapping names to device names, got " + shown(v));
  std::map<std::string, std::string> out;
  for (const auto& [k, d] : v.items()) {
    if (!d.is_string() || d.get_ref<const std::string&>().empty()) {
      throw InputError(origin, key + "." + printable(k), "a device name, got " + shown(d));
    }
    out[k] = d.get<std::string>();
  }
  return out;
}

}  // namespace

PlacementFile parse_placement_json(const std::string& text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError(origin, "",
                     "a JSON placement object with \"groups\" or \"ops\", got an empty file");
  }
  check_json_nesting(text, origin);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (const auto p = msg.find("parse error"); p != std::string::npos) msg = msg.substr(p);
    throw InputError(origin, line_col(text, e.byte), "valid JSON (" + printable(msg, 120) + ")");
  } catch (const json::exception& e) {
    throw InputError(origin, "", std::string("valid JSON (") + printable(e.what(), 120) + ")");
  }
  if (!root.is_object()) throw InputError(origin, "", "a JSON object, got " + shown(root));
  PlacementFile f;
  for (const auto& [k, v] : root.items()) {
    if (k == "format" || k == "version") continue;
    if (k == "groups") {
      f.groups = name_map(v, "groups", origin);
    } else if (k == "ops") {
      f.ops = name_map(v, "ops", origin);
    } else if (k == "default_device") {
      if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
        throw InputError(origin, "default_device", "a device name, got " + shown(v));
      }
      f.default_device = v.get<std::string>();
    } else if (k == "metadata") {
      if (!v.is_object()) throw InputError(origin, "metadata", "an object, got " + shown(v));
      PlacementMetadata& m = f.metadata;
      for (const auto& [mk, mv] : v.items()) {
        const std::string key = "metadata." + printable(mk);
        if (mk == "method" || mk == "graph" || mk == "cluster") {
          if (!mv.is_string()) throw InputError(origin, key, "a string, got " + shown(mv));
          (mk == "method" ? m.method : mk == "graph" ? m.graph : m.cluster) = mv.get<std::string>();
        } else if (mk == "predicted_step_time_s") {
          if (mv.is_null()) continue;
          if (!mv.is_number() || !(mv.get<double>() >= 0) || !std::isfinite(mv.get<double>())) {
            throw InputError(origin, key, "a non-negative number of seconds, got " + shown(mv));
          }
          m.predicted_step_time_s = mv.get<double>();
        } else if (mk == "seed") {
          if (mv.is_null()) continue;
          if (!mv.is_number_unsigned())
            throw InputError(origin, key, "a non-negative integer, got " + shown(mv));
          m.seed = mv.get<std::uint64_t>();
        } else if (mk == "extra") {
          if (!mv.is_object()) throw InputError(origin, key, "an object, got " + shown(mv));
          for (const auto& [ek, ev] : mv.items())
            m.extra[ek] = ev.is_string() ? ev.get<std::string>() : ev.dump();
        } else {
          m.extra[mk] = mv.is_string() ? mv.get<std::string>() : mv.dump();
        }
      }
    } else {
      throw InputError(origin, printable(k),
                       "a known key (format, version, metadata, groups, ops, default_device), got "
                       "unknown key \"" +
                           printable(k) + "\"");
    }
  }
  if (f.groups.empty() && f.ops.empty() && !f.default_device) {
    throw InputError(origin, "", "at least one of \"groups\", \"ops\" or \"default_device\"");
  }
  return f;
}

PlacementFile read_placement_json(const std::string& path) {
  return parse_placement_json(read_text_file(path), path);
}

std::string placement_to_json(const PlacementFile& f) {
  json root = json::object();
  root["format"] = "placesim-placement";
  root["version"] = 1;
  json md = json::object();
  if (!f.metadata.method.empty()) md["method"] = f.metadata.method;
  if (!f.metadata.graph.empty()) md["graph"] = f.metadata.graph;
  if (!f.metadata.cluster.empty()) md["cluster"] = f.metadata.cluster;
  if (f.metadata.predicted_step_time_s)
    md["predicted_step_time_s"] = *f.metadata.predicted_step_time_s;
  if (f.metadata.seed) md["seed"] = *f.metadata.seed;
  if (!f.metadata.extra.empty()) md["extra"] = f.metadata.extra;
  root["metadata"] = std::move(md);
  if (!f.groups.empty()) root["groups"] = f.groups;
  if (!f.ops.empty()) root["ops"] = f.ops;
  if (f.default_device) root["default_device"] = *f.default_device;
  return root.dump(1) + "\n";
}

void write_placement_json(const PlacementFile& f, const std::string& path) {
  write_file_atomic(path, placement_to_json(f));
}

Placement resolve_placement(const PlacementFile& f, const Graph& g, const Cluster& c,
                            const std::string& origin) {
  auto device = [&](const std::string& name, const std::string& key) {
    const DeviceId d = c.device_index(name);
    if (d < 0) {
      std::string list;
      for (const Device& dev : c.devices) list += (list.empty() ? "" : ", ") + dev.name;
      throw InputError(
          origin, key,
          "a device of cluster " + c.name + " (" + list + "), got \"" + printable(name) + "\"");
    }
    return d;
  };
  std::map<std::string, DeviceId> group_dev;
  {
    std::set<std::string> groups;
    for (OpId i = 0; i < g.num_ops(); ++i) groups.insert(g.group_of(i));
    for (const auto& [grp, dev] : f.groups) {
      if (groups.count(grp) == 0) {
        throw InputError(origin, "groups." + printable(grp),
                         "a co-location group (or op name) of graph " + g.name +
                             ", got unknown \"" + printable(grp) + "\"");
      }
      group_dev[grp] = device(dev, "groups." + printable(grp));
    }
  }
  Placement p;
  p.device_of.assign(static_cast<std::size_t>(g.num_ops()), -1);
  for (const auto& [op, dev] : f.ops) {
    const OpId id = g.op_index(op);
    if (id < 0) {
      throw InputError(origin, "ops." + printable(op),
                       "an op of graph " + g.name + ", got unknown \"" + printable(op) + "\"");
    }
    p.device_of[static_cast<std::size_t>(id)] = device(dev, "ops." + printable(op));
  }
  const DeviceId fallback = f.default_device ? device(*f.default_device, "default_device") : -1;
  std::map<std::string, std::pair<DeviceId, OpId>> seen;  // group -> (device, first op)
  for (OpId i = 0; i < g.num_ops(); ++i) {
    auto& d = p.device_of[static_cast<std::size_t>(i)];
    const std::string& grp = g.group_of(i);
    if (d < 0) {
      if (auto it = group_dev.find(grp); it != group_dev.end()) d = it->second;
    }
    if (d < 0) d = fallback;
    const Op& op = g.ops[static_cast<std::size_t>(i)];
    if (d < 0) {
      throw InputError(
          origin, "ops",
          "a device for every op, but op \"" + printable(op.name) + "\" (group \"" +
              printable(grp) +
              "\") is named by neither \"ops\" nor \"groups\" and there is no \"default_device\"");
    }
    const Device& dev = c.devices[static_cast<std::size_t>(d)];
    if (op.device_kind && *op.device_kind != dev.spec.kind) {
      throw InputError(origin, "ops." + printable(op.name),
                       "a " + to_string(*op.device_kind) + " device for op \"" +
                           printable(op.name) + "\" (its device_kind constraint), got " + dev.name +
                           " (" + to_string(dev.spec.kind) + ")");
    }
    const auto [it, inserted] = seen.emplace(grp, std::make_pair(d, i));
    if (!inserted && it->second.first != d) {
      throw InputError(
          origin, "ops." + printable(op.name),
          "all ops of co-location group \"" + printable(grp) + "\" on one device, got " + dev.name +
              " here and " + c.devices[static_cast<std::size_t>(it->second.first)].name +
              " for op \"" + printable(g.ops[static_cast<std::size_t>(it->second.second)].name) +
              "\"");
    }
  }
  return p;
}

PlacementFile to_placement_file(const Placement& p, const Graph& g, const Cluster& c,
                                PlacementMetadata metadata) {
  PlacementFile f;
  f.metadata = std::move(metadata);
  if (f.metadata.graph.empty()) f.metadata.graph = g.name;
  if (f.metadata.cluster.empty()) f.metadata.cluster = c.name;
  for (OpId i = 0; i < g.num_ops() && static_cast<std::size_t>(i) < p.device_of.size(); ++i) {
    const DeviceId d = p.device_of[static_cast<std::size_t>(i)];
    if (d < 0 || d >= c.num_devices()) continue;
    const std::string& dev = c.devices[static_cast<std::size_t>(d)].name;
    const std::string& grp = g.group_of(i);
    const auto [it, inserted] = f.groups.emplace(grp, dev);
    // A group split across devices cannot be written by group; its stray ops go by name.
    if (!inserted && it->second != dev) f.ops[g.ops[static_cast<std::size_t>(i)].name] = dev;
  }
  return f;
}

namespace {

// Uniform integer in [0, n) from a 64-bit engine by rejection, so the sequence is the same with
// every standard library (std::uniform_int_distribution is implementation-defined).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t x = 0;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

}  // namespace

std::optional<Placement> builtin_placement(const std::string& method, const Graph& g,
                                           const Cluster& c) {
  // Kind constraint of each group: the first constrained op decides.
  std::map<std::string, std::optional<DeviceKind>> group_kind;
  std::vector<std::string> group_order;
  for (OpId i = 0; i < g.num_ops(); ++i) {
    const std::string& grp = g.group_of(i);
    auto [it, inserted] = group_kind.emplace(grp, std::nullopt);
    if (inserted) group_order.push_back(grp);
    if (!it->second && g.ops[static_cast<std::size_t>(i)].device_kind)
      it->second = g.ops[static_cast<std::size_t>(i)].device_kind;
  }
  std::map<std::string, DeviceId> chosen;
  if (method == "single-gpu" || method == "single-cpu") {
    DeviceId main = -1;
    if (method == "single-gpu") {
      double best = -1.0;
      for (DeviceId d : c.gpus()) {
        const double r = c.devices[static_cast<std::size_t>(d)].spec.peak_for(Dtype::F32).per_s;
        if (r > best) {
          best = r;
          main = d;
        }
      }
    } else {
      const auto cpus = c.cpus();
      if (!cpus.empty()) main = cpus.front();
    }
    if (main < 0) return std::nullopt;
    const DeviceId host = c.devices[static_cast<std::size_t>(main)].host;
    DeviceId gpu_for_cpu = -1;
    for (DeviceId d : c.gpus()) {
      if (c.devices[static_cast<std::size_t>(d)].host == main) {
        gpu_for_cpu = d;
        break;
      }
    }
    for (const auto& [grp, kind] : group_kind) {
      DeviceId d = main;
      if (kind && *kind != c.devices[static_cast<std::size_t>(main)].spec.kind) {
        d = *kind == DeviceKind::Cpu ? host : gpu_for_cpu;
        if (d < 0) return std::nullopt;
      }
      chosen[grp] = d;
    }
  } else if (method.rfind("random:", 0) == 0) {
    const std::string seed_text = method.substr(7);
    std::uint64_t seed = 0;
    const auto [ptr, ec] =
        std::from_chars(seed_text.data(), seed_text.data() + seed_text.size(), seed);
    if (seed_text.empty() || ec != std::errc() || ptr != seed_text.data() + seed_text.size()) {
      throw InputError(
          "<flag --method>", "",
          "random:SEED with a non-negative integer seed, got \"" + printable(method) + "\"");
    }
    std::mt19937_64 rng(seed);
    for (const std::string& grp : group_order) {
      const auto kind = group_kind[grp];
      std::vector<DeviceId> allowed;
      for (DeviceId d = 0; d < c.num_devices(); ++d) {
        if (!kind || c.devices[static_cast<std::size_t>(d)].spec.kind == *kind)
          allowed.push_back(d);
      }
      if (allowed.empty()) return std::nullopt;
      chosen[grp] = allowed[static_cast<std::size_t>(uniform_below(rng, allowed.size()))];
    }
  } else {
    throw InputError("<flag --method>", "",
                     "single-gpu, single-cpu or random:SEED, got \"" + printable(method) + "\"");
  }
  Placement p;
  p.device_of.resize(static_cast<std::size_t>(g.num_ops()));
  for (OpId i = 0; i < g.num_ops(); ++i)
    p.device_of[static_cast<std::size_t>(i)] = chosen[g.group_of(i)];
  return p;
}

}  // namespace placesim::sim
