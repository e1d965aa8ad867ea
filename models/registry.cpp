#include "models/registry.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <utility>

#include "models/chakra.hpp"
#include "models/onnx_import.hpp"
#include "models/optimizer_impl.hpp"
#include "models/torch_host.hpp"
#include "models/train_loop.hpp"
#include "models/workloads.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"

namespace placesim::models {

namespace {

// The shortest decimal that reads back as v.
std::string shortest(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Builtin {
  const char* name;
  sim::Graph (*build)(GraphOptions&);
};

constexpr Builtin kBuiltins[] = {
    {"gpt", &build_gpt},     {"inception_v3", &build_inception_v3},
    {"nmt", &build_nmt},     {"resnet50", &build_resnet50},
    {"rnnlm", &build_rnnlm},
};

}  // namespace

GraphOptions::GraphOptions(const std::string& text, std::string origin)
    : origin_(std::move(origin)) {
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    // Surrounding spaces are forgiven ("batch=8, layers=4").
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) {
      if (end >= text.size()) break;
      continue;
    }
    const std::size_t eq = item.find('=');
    std::string key = eq == std::string::npos ? item : item.substr(0, eq);
    std::string value = eq == std::string::npos ? "true" : item.substr(eq + 1);
    if (key.empty()) throw sim::InputError(origin_, item, "key=value, got an empty key");
    if (given_.contains(key)) throw sim::InputError(origin_, key, "each key once, got it twice");
    given_[key] = value;
    if (end >= text.size()) break;
  }
}

void GraphOptions::accept(const std::vector<std::string>& keys) const {
  for (const auto& [k, v] : given_) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      std::vector<std::string> sorted = keys;
      std::sort(sorted.begin(), sorted.end());
      throw sim::InputError(origin_, k,
                            "one of the accepted keys (" + join(sorted) + "), got \"" + k + "\"");
    }
  }
}

std::int64_t GraphOptions::get_int(const std::string& key, std::int64_t def, std::int64_t min,
                                   std::int64_t max) {
  std::int64_t v = def;
  if (const auto it = given_.find(key); it != given_.end()) {
    const std::string& s = it->second;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || v < min || v > max) {
      throw sim::InputError(origin_, key,
                            "an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                "], got \"" + s + "\"");
    }
  }
  resolved_[key] = std::to_string(v);
  return v;
}

bool GraphOptions::get_bool(const std::string& key, bool def) {
  bool v = def;
  if (const auto it = given_.find(key); it != given_.end()) {
    const std::string& s = it->second;
    if (s == "true" || s == "1" || s == "yes") {
      v = true;
    } else if (s == "false" || s == "0" || s == "no") {
      v = false;
    } else {
      throw sim::InputError(origin_, key, "true or false, got \"" + s + "\"");
    }
  }
  resolved_[key] = v ? "true" : "false";
  return v;
}

double GraphOptions::get_real(const std::string& key, double def, double min, double max) {
  double v = def;
  std::string text;
  if (const auto it = given_.find(key); it != given_.end()) {
    text = it->second;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || p != text.data() + text.size() || !(v >= min && v < max)) {
      throw sim::InputError(
          origin_, key,
          "a number in [" + shortest(min) + ", " + shortest(max) + "), got \"" + text + "\"");
    }
  }
  resolved_[key] = shortest(v);
  return v;
}

std::string GraphOptions::get_choice(const std::string& key, const std::string& def,
                                     const std::vector<std::string>& choices) {
  std::string v = def;
  if (const auto it = given_.find(key); it != given_.end()) {
    v = it->second;
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      throw sim::InputError(origin_, key, "one of " + join(choices) + ", got \"" + v + "\"");
    }
  }
  resolved_[key] = v;
  return v;
}

std::string GraphOptions::resolved() const {
  std::string s;
  for (const auto& [k, v] : resolved_) {
    if (!s.empty()) s += ',';
    s += k;
    s += '=';
    s += v;
  }
  return s;
}

Optimizer optimizer_option(GraphOptions& o, Optimizer def) {
  return *parse_optimizer(o.get_choice("optimizer", to_string(def),
                                       {"sgd", "momentum", "adam", "rmsprop", "lamb", "bertadam"}));
}

Accumulation accumulation_option(GraphOptions& o) {
  return o.get_choice("grad_accumulation", "chain", {"chain", "addn"}) == "addn"
             ? Accumulation::AddN
             : Accumulation::Chain;
}

std::vector<std::string> builtin_graph_names() {
  std::vector<std::string> names;
  for (const auto& b : kBuiltins) names.emplace_back(b.name);
  return names;
}

namespace {

// Takes "key=V" out of an options string (every graph source accepts math_mode, precision, grads,
// layout, input, input_workers and optimizer_impl)
// and returns V; nullopt when the key is absent.
std::optional<std::string> take_option(std::string& options, const std::string& key) {
  std::string rest, found;
  bool seen = false;
  std::size_t begin = 0;
  while (begin <= options.size()) {
    std::size_t end = options.find(',', begin);
    if (end == std::string::npos) end = options.size();
    std::string item = options.substr(begin, end - begin);
    const auto first = item.find_first_not_of(' ');
    const std::string trimmed = first == std::string::npos ? "" : item.substr(first);
    if (trimmed.rfind(key + "=", 0) == 0) {
      found = trimmed.substr(key.size() + 1);
      seen = true;
      while (!found.empty() && found.back() == ' ') found.pop_back();
    } else if (!item.empty()) {
      rest += (rest.empty() ? "" : ",") + item;
    }
    begin = end + 1;
  }
  if (!seen && options.find(key) == std::string::npos) return std::nullopt;
  options = rest;
  return found;
}

std::optional<sim::MathMode> take_math_mode(std::string& options) {
  const std::optional<std::string> found = take_option(options, "math_mode");
  if (!found) return std::nullopt;
  const auto m = sim::MathMode::parse(*found);
  if (!m)
    throw sim::InputError("--graph-opt", "math_mode",
                          "one of torch, tf32, f32, got \"" + *found + "\"");
  return m;
}

std::optional<sim::Dtype> take_precision(std::string& options) {
  const std::optional<std::string> found = take_option(options, "precision");
  if (!found) return std::nullopt;
  if (*found == "f32" || *found == "fp32") return sim::Dtype::F32;
  if (*found == "bf16") return sim::Dtype::BF16;
  if (*found == "f16" || *found == "fp16") return sim::Dtype::F16;
  throw sim::InputError("--graph-opt", "precision",
                        "one of f32, bf16, f16, got \"" + *found + "\"");
}

// grads=half|f32: true for f32. Only with precision=bf16|f16 (F32 training has F32 gradients).
bool take_f32_grads(std::string& options, const std::optional<sim::Dtype>& precision) {
  const std::optional<std::string> found = take_option(options, "grads");
  if (!found) return false;
  if (*found != "f32" && *found != "half")
    throw sim::InputError("--graph-opt", "grads", "one of half, f32, got \"" + *found + "\"");
  if (!precision || *precision == sim::Dtype::F32)
    throw sim::InputError("--graph-opt", "grads",
                          "precision=bf16 or precision=f16 beside grads=" + *found);
  return *found == "f32";
}

// input=synthetic|pil|pil_autoaugment and input_workers=W: the job's input pipeline
// (models/parallel.hpp, kPilConvnetsUs and kPilAutoaugmentUs). Recorded as metadata "input" /
// "input_workers" for make_parallel; synthetic (the default) records nothing. input_workers only
// with a PIL pipeline, and a PIL pipeline needs it.
std::pair<std::string, int> take_input(std::string& options) {
  // input_workers first: take_option treats a key that occurs only inside another as given empty
  const std::optional<std::string> workers = take_option(options, "input_workers");
  const std::optional<std::string> found = take_option(options, "input");
  const std::string kind = found ? *found : "synthetic";
  if (kind != "synthetic" && kind != "pil" && kind != "pil_autoaugment")
    throw sim::InputError(
        "--graph-opt", "input",
        "one of synthetic, pil, pil_autoaugment (dali is not modelled), got \"" + kind + "\"");
  if (kind == "synthetic") {
    if (workers)
      throw sim::InputError("--graph-opt", "input_workers",
                            "input=pil beside input_workers=" + *workers);
    return {kind, 0};
  }
  if (!workers)
    throw sim::InputError("--graph-opt", "input_workers",
                          "input_workers=W beside input=" + kind +
                              " (the DataLoader's worker processes per GPU), got none");
  int w = 0;
  try {
    std::size_t pos = 0;
    const long long v = std::stoll(*workers, &pos);
    if (pos == workers->size() && v >= 1 && v <= 4096) w = static_cast<int>(v);
  } catch (const std::exception&) {
    w = 0;
  }
  if (w < 1)
    throw sim::InputError("--graph-opt", "input_workers",
                          "a whole number from 1 to 4096, got \"" + *workers + "\"");
  return {kind, w};
}

std::optional<sim::Layout> take_layout(std::string& options) {
  const std::optional<std::string> found = take_option(options, "layout");
  if (!found) return std::nullopt;
  const auto l = sim::parse_layout(*found);
  if (!l)
    throw sim::InputError("--graph-opt", "layout",
                          "one of nchw, nhwc, channels_last, got \"" + *found + "\"");
  return l;
}

// optimizer_impl=...; `apex` is set for fused_apex: apex's FusedAdam / FusedSGD as built without
// capturable=True, the fused kernels of `fused` but no `_step_supports_amp_scaling`
// (NVIDIA/apex apex/optimizers/fused_adam.py sets it only under capturable), so GradScaler.step
// takes its ordinary unscale_ / found_inf.item() path in front of them (docs/workloads.md).
std::optional<OptimizerImpl> take_optimizer_impl(std::string& options, bool& apex) {
  const std::optional<std::string> found = take_option(options, "optimizer_impl");
  apex = found && *found == "fused_apex";
  if (!found) return std::nullopt;
  const auto i = parse_optimizer_impl(apex ? "fused" : *found);
  if (!i)
    throw sim::InputError(
        "--graph-opt", "optimizer_impl",
        "one of apply, per_param, foreach, fused, fused_apex, got \"" + *found + "\"");
  return i;
}

// grad_clip=none|norm|norm_sync|apex, master_weights=none|apex (precision=bf16|f16 only),
// grad_scaler=none|torch (precision=f16 only), zero_grad=none|fill, loss_item=true|false,
// grad_div=true|false,
// host_sum=N and cpu_sum=N: the training loop's
// kernels and host syncs around the step (models/train_loop.hpp).
TrainLoop take_train_loop(std::string& options, const std::optional<sim::Dtype>& precision) {
  TrainLoop t;
  if (const std::optional<std::string> c = take_option(options, "grad_clip")) {
    const auto v = parse_grad_clip(*c);
    if (!v)
      throw sim::InputError("--graph-opt", "grad_clip",
                            "one of none, norm, norm_sync, apex, got \"" + *c + "\"");
    t.clip = *v;
  }
  if (const std::optional<std::string> m = take_option(options, "master_weights")) {
    if (*m != "none" && *m != "apex")
      throw sim::InputError("--graph-opt", "master_weights",
                            "one of none, apex, got \"" + *m + "\"");
    t.apex_master = *m == "apex";
    if (t.apex_master && (!precision || *precision == sim::Dtype::F32))
      throw sim::InputError("--graph-opt", "master_weights",
                            "precision=bf16 or precision=f16 beside master_weights=apex");
  }
  // grad_scaler=torch: torch.cuda.amp.GradScaler, for f16 autocast (models/train_loop.hpp).
  if (const std::optional<std::string> m = take_option(options, "grad_scaler")) {
    if (*m != "none" && *m != "torch")
      throw sim::InputError("--graph-opt", "grad_scaler", "one of none, torch, got \"" + *m + "\"");
    t.torch_grad_scaler = *m == "torch";
    if (t.torch_grad_scaler && (!precision || *precision != sim::Dtype::F16))
      throw sim::InputError("--graph-opt", "grad_scaler", "precision=f16 beside grad_scaler=torch");
    if (t.torch_grad_scaler && t.apex_master)
      throw sim::InputError("--graph-opt", "grad_scaler",
                            "grad_scaler=torch or master_weights=apex (apex AMP scales the loss "
                            "itself), not both");
  }
  if (const std::optional<std::string> z = take_option(options, "zero_grad")) {
    if (*z != "none" && *z != "fill")
      throw sim::InputError("--graph-opt", "zero_grad", "one of none, fill, got \"" + *z + "\"");
    t.zero_fill = *z == "fill";
  }
  if (const std::optional<std::string> d = take_option(options, "grad_div")) {
    if (*d != "true" && *d != "false")
      throw sim::InputError("--graph-opt", "grad_div", "true or false, got \"" + *d + "\"");
    t.grad_div = *d == "true";
  }
  if (const std::optional<std::string> l = take_option(options, "loss_item")) {
    if (*l != "true" && *l != "false")
      throw sim::InputError("--graph-opt", "loss_item", "true or false, got \"" + *l + "\"");
    t.loss_item = *l == "true";
  }
  // host_sum=N, cpu_sum=N: the elements Python's sum() adds, a whole number from 0.
  for (const auto& [key, field] :
       {std::pair{"host_sum", &TrainLoop::host_sum}, std::pair{"cpu_sum", &TrainLoop::cpu_sum}}) {
    const std::optional<std::string> h = take_option(options, key);
    if (!h) continue;
    int n = -1;
    try {
      std::size_t pos = 0;
      const long long v = std::stoll(*h, &pos);
      if (pos == h->size() && v >= 0 && v <= 1'000'000) n = static_cast<int>(v);
    } catch (const std::exception&) {
      n = -1;
    }
    if (n < 0)
      throw sim::InputError(
          "--graph-opt", key,
          "a whole number from 0 to 1000000 (the elements summed), got \"" + *h + "\"");
    t.*field = n;
  }
  return t;
}

// host=none|torch: torch eager's host work per framework op (models/torch_host.hpp).
bool take_torch_host(std::string& options) {
  const std::optional<std::string> h = take_option(options, "host");
  if (h && *h != "none" && *h != "torch")
    throw sim::InputError("--graph-opt", "host", "one of none, torch, got \"" + *h + "\"");
  return h && *h == "torch";
}

sim::Graph load_graph_as_given(const std::string& name_or_path, const std::string& options);

}  // namespace

sim::Graph load_graph(const std::string& name_or_path, const std::string& options) {
  std::string rest = options;
  const std::optional<sim::MathMode> math = take_math_mode(rest);
  const std::optional<sim::Dtype> precision = take_precision(rest);
  const bool f32_grads = take_f32_grads(rest, precision);
  const std::optional<sim::Layout> layout = take_layout(rest);
  const auto [input, input_workers] = take_input(rest);
  bool apex_fused = false;
  const std::optional<OptimizerImpl> impl = take_optimizer_impl(rest, apex_fused);
  const TrainLoop loop = take_train_loop(rest, precision);
  const bool torch_host = take_torch_host(rest);
  // torch's fused optimizers (_step_supports_amp_scaling) take the scale and found_inf into their
  // own kernel: GradScaler.step skips the .item() there, a path not modelled. apex's
  // (fused_apex) do not, and step through the ordinary path.
  if (loop.torch_grad_scaler && impl == OptimizerImpl::Fused && !apex_fused)
    throw sim::InputError(
        "--graph-opt", "grad_scaler",
        "optimizer_impl=apply, per_param, foreach or fused_apex beside grad_scaler=torch (the "
        "fused optimizers' own scaling path is not modelled)");
  sim::Graph g = load_graph_as_given(name_or_path, rest);
  if (input != "synthetic") {
    g.metadata["input"] = input;
    g.metadata["input_workers"] = std::to_string(input_workers);
  }
  if (math) sim::apply_math_mode(g, *math);
  // MXNet's fused batch-norm kernels (resnet50's fuse=) are NHWC ones.
  if (const auto it = g.metadata.find("options"); layout == sim::Layout::Nchw &&
                                                  it != g.metadata.end() &&
                                                  it->second.find("fuse=") != std::string::npos &&
                                                  it->second.find("fuse=none") == std::string::npos)
    throw sim::InputError("--graph-opt", "fuse",
                          "fuse=none beside layout=nchw (the fused batch-norm kernels are NHWC)");
  if (layout) sim::apply_layout(g, *layout);
  if (const auto ac = g.metadata.find("autocast"); ac != g.metadata.end()) {
    // The import typed every tensor as torch.autocast runs it: F32 parameters, master copies and
    // weight gradients (the casts' backward), F16 where autocast casts (models/onnx_import.cpp).
    if (precision != sim::Dtype::F16)
      throw sim::InputError("--graph-opt", "autocast",
                            "precision=f16 beside autocast=" + ac->second +
                                " (the import types its tensors as float16 autocast runs them)");
    g.metadata["precision"] = "f16";
    g.metadata["grads"] = "f32";
  } else if (precision && *precision != sim::Dtype::F32) {
    apply_mixed_precision(g, *precision, f32_grads);
  }
  // After the precision pass, which gives each update its master copy once.
  if (impl) apply_optimizer_impl(g, *impl);
  // After the optimizer's kernels, which it places its own around.
  apply_train_loop(g, loop, "--graph-opt");
  // Last: every framework op the graph now has, the training loop's included.
  if (torch_host) {
    apply_torch_host(g);
    g.metadata["host"] = "torch";
  }
  return g;
}

namespace {

sim::Graph load_graph_as_given(const std::string& name_or_path, const std::string& options) {
  for (const auto& b : kBuiltins) {
    if (name_or_path == b.name) {
      GraphOptions o(options, "--graph-opt");
      try {
        return b.build(o);
      } catch (const sim::InputError& e) {
        // FLOPs or sizes past the graph format's limits, found when the graph is finalized.
        const std::string what = e.what();
        if (what.rfind("<builder", 0) != 0) throw;
        throw sim::InputError("--graph-opt", options.empty() ? std::string("(defaults)") : options,
                              "options within the graph format's limits (" + what + ")");
      }
    }
  }
  if (ends_with(name_or_path, ".json")) {
    GraphOptions o(options, "--graph-opt");
    o.accept({});
    return sim::read_graph_json(name_or_path);
  }
  if (ends_with(name_or_path, ".onnx")) {
    GraphOptions o(options, "--graph-opt");
    o.accept({"training", "batch", "optimizer", "silu", "gelu", "weight_view", "bias_epilogue",
              "attention", "autocast", "layer_norm", "strided_bmm", "loss"});
    OnnxImportOptions io;
    io.training = o.get_bool("training", false);
    const std::string silu = o.get_choice("silu", "ops", {"ops", "fused", "inplace"});
    io.silu = silu == "fused"     ? SiluMode::Fused
              : silu == "inplace" ? SiluMode::Inplace
                                  : SiluMode::Ops;
    io.gelu =
        o.get_choice("gelu", "ops", {"ops", "fused"}) == "fused" ? GeluMode::Fused : GeluMode::Ops;
    io.weight_view = o.get_bool("weight_view", false);
    io.bias_epilogue = o.get_bool("bias_epilogue", false);
    io.attention_sdpa = o.get_choice("attention", "ops", {"ops", "sdpa"}) == "sdpa";
    io.strided_bmm = o.get_bool("strided_bmm", false);
    io.label_smoothing =
        o.get_choice("loss", "xent", {"xent", "label_smoothing"}) == "label_smoothing";
    io.autocast = o.get_choice("autocast", "none", {"none", "torch"}) == "torch";
    io.layer_norm_apex = o.get_choice("layer_norm", "torch", {"torch", "apex"}) == "apex";
    if (io.layer_norm_apex && !io.autocast)
      throw sim::InputError("--graph-opt", "layer_norm=apex",
                            "needs autocast=torch (apex's FusedLayerNorm differs from torch's "
                            "only in the type autocast runs it in)");
    io.batch = o.get_int("batch", 0, 0);
    io.optimizer = optimizer_option(o, Optimizer::Sgd);
    return import_onnx(name_or_path, io);
  }
  if (is_chakra_path(name_or_path)) {
    GraphOptions o(options, "--graph-opt");
    o.accept({});
    return import_chakra({name_or_path}).graph;
  }
  throw sim::InputError("--graph", name_or_path,
                        "a built-in workload (" + join(builtin_graph_names()) +
                            "), a .json graph file, an .onnx model or a Chakra .et trace");
}

}  // namespace

}  // namespace placesim::models
