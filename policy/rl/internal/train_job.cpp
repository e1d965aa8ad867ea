// `placesim train` as a library call (train_job.hpp): flags checked, the run chosen, outputs
// written. LibTorch-free itself; it calls the trainers of rl.hpp and rl_gnn.hpp.
#include "policy/rl/train_job.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "models/grouping.hpp"
#include "models/registry.hpp"
#include "policy/place/compare.hpp"
#include "policy/place/methods.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"

namespace placesim::policy {
namespace {

std::string fmt_ms(double s) {
  if (s <= 0) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << s * 1e3 << " ms";
  return os.str();
}

std::string fmt_clock(double s) {
  const long t = std::lround(std::max(0.0, s));
  std::ostringstream os;
  os << t / 60 << ':' << std::setw(2) << std::setfill('0') << t % 60;
  return os.str();
}

std::filesystem::path find_plot_script() {
  if (const char* src = std::getenv("PLACESIM_SOURCE_DIR")) {
    auto p = std::filesystem::path(src) / "tools" / "plot_curve.py";
    if (std::filesystem::exists(p)) return p;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      auto p = dir / "tools" / "plot_curve.py";
      if (std::filesystem::exists(p)) return p;
    }
  return {};
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// Runs tools/plot_curve.py with Debian's python3 + matplotlib; one line and no PNG if missing.
void plot_curve(const std::string& csv, const std::string& png, const std::string& title) {
  const auto script = find_plot_script();
  if (script.empty()) {
    std::cerr
        << "placesim: no plot: tools/plot_curve.py not found (set PLACESIM_SOURCE_DIR); the CSV is "
        << csv << "\n";
    return;
  }
  if (!std::filesystem::exists("/usr/bin/python3")) {
    std::cerr << "placesim: no plot: /usr/bin/python3 missing (apt-get install "
                 "python3-matplotlib); the CSV is "
              << csv << "\n";
    return;
  }
  const std::string cmd = "/usr/bin/python3 " + shell_quote(script.string()) + " " +
                          shell_quote(csv) + " " + shell_quote(png) + " " + shell_quote(title);
  const int rc = std::system(cmd.c_str());
  if (rc != 0)
    std::cerr << "placesim: no plot written (plot_curve.py failed); the CSV is " << csv << "\n";
}

// `--graphs a,b,c`: one policy trained round-robin on several graphs; its checkpoint is a
// `--pretrained` policy for another graph.
void run_train_multi(const TrainJob& a, const TrainConfig& cfg, const sim::Cluster& cluster,
                     const Comm& comm) {
  if (comm.size() > 1)
    throw sim::InputError("<flag --graphs>", "", "one process (no mpirun) for --graphs");
  std::vector<sim::Graph> graphs;
  std::stringstream list(a.graphs);
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) graphs.push_back(models::load_graph(name, a.graph_opt));
  std::cerr << "placesim train: one policy for " << a.graphs << " on " << cluster.name << ", seed "
            << a.seed << "\n";
  const MultiTrainResult r = train_multi(graphs, cluster, cfg);
  std::string curve = a.curve;
  if (curve.empty()) {
    auto p = std::filesystem::path(a.output);
    curve = (p.parent_path() / (p.stem().string() + ".curve.csv")).string();
  }
  write_curve_csv(r.history, curve, r.graphs);
  if (!a.no_plot)
    plot_curve(curve, std::filesystem::path(curve).replace_extension(".png").string(),
               a.graphs + " on " + cluster.name + ", seed " + std::to_string(a.seed));
  std::cout << std::fixed << std::setprecision(3) << "rl: " << r.history.size()
            << " iterations over " << graphs.size() << " graphs in " << r.wall_s << " s; policy in "
            << a.checkpoint_dir << "/checkpoint.pt, curve " << curve << "\n";
  for (size_t i = 0; i < graphs.size(); ++i)
    std::cout << "rl: " << r.graphs[i] << ": best sample while training "
              << fmt_ms(r.best_step_s[i]) << "\n";
}

// `--project-baselines`: how well the policy's grouping can express each baseline's per-op
// placement (each group on the device most of its ops have); no training.
void run_project_baselines(const sim::Graph& graph, const sim::Cluster& cluster,
                           const models::Grouping& grouping, const MethodOptions& mo) {
  std::cout << "projection of each baseline onto the " << grouping.size()
            << " groups the policy places\n";
  std::cout << std::left << std::setw(14) << "method" << std::right << std::setw(14) << "own (s)"
            << std::setw(16) << "projected (s)"
            << "\n";
  for (const auto& name : method_names()) {
    sim::Placement own;
    try {
      own = make_placement(name, graph, cluster, mo);
    } catch (const sim::InputError&) {
      continue;
    }
    const sim::Placement projected =
        grouping.expand(models::project_placement(grouping, own, cluster));
    auto cell = [&](const sim::Placement& p) {
      const CompareRow row = evaluate_row(name, graph, cluster, p, mo, 0.0);
      std::ostringstream os;
      os << std::fixed << std::setprecision(4) << row.step_time_s;
      if (row.oom || row.unreachable) os << (row.oom ? " OOM" : " unreach");
      return os.str();
    };
    std::cout << std::left << std::setw(14) << name << std::right << std::setw(14) << cell(own)
              << std::setw(16) << cell(projected) << "\n";
  }
}

GnnOptions gnn_options(const TrainJob& a) {
  GnnOptions o;
  if (a.hidden_given) o.hidden = a.hidden;
  if (a.lr_given) o.learning_rate = a.learning_rate;
  o.rounds = a.rounds;
  o.samples = a.samples;
  o.seed = a.seed;
  o.entropy_weight = a.entropy;
  o.ppo_epochs = a.ppo_epochs;
  o.hints = !a.no_hints;
  if (a.update == "ppo")
    o.update = PolicyUpdate::Ppo;
  else if (a.update == "reinforce")
    o.update = PolicyUpdate::Reinforce;
  else
    throw sim::InputError("<flag --update>", "", "ppo or reinforce, got \"" + a.update + "\"");
  if (a.rounds < 0)
    throw sim::InputError("<flag --rounds>", "", "0 or more, got " + std::to_string(a.rounds));
  if (a.ppo_epochs < 1)
    throw sim::InputError("<flag --ppo-epochs>", "",
                          "at least 1, got " + std::to_string(a.ppo_epochs));
  return o;
}

// `--search`: nullopt = off; "default" = GnnPlaceOptions' defaults.
std::optional<GnnPlaceOptions> gnn_search(const TrainJob& a) {
  if (a.search == "off") return std::nullopt;
  if (a.search == "default") return gnn_train_search_defaults();
  GnnPlaceOptions o = parse_gnn_search(a.search, "<flag --search>");
  o.seed = a.seed;
  return o;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// `--policy gnn --graphs g1,g2@batch=32+layers=2 --clusters c1,c2`: one GNN policy pre-trained on
// every graph on every cluster, written to --checkpoint DIR/gnn.ckpt (docs/rl.md, "Pre-training").
void run_pretrain_gnn(const TrainJob& a, const TrainConfig& cfg) {
  if (a.checkpoint_dir.empty())
    throw sim::InputError("<flag --graphs>", "", "--checkpoint DIR to write DIR/gnn.ckpt to");
  std::vector<sim::Graph> graphs;
  std::vector<std::string> graph_names;
  for (const std::string& entry : split_list(a.graphs)) {
    const auto at = entry.find('@');
    std::string opts = at == std::string::npos ? a.graph_opt : entry.substr(at + 1);
    std::replace(opts.begin(), opts.end(), '+', ',');
    graphs.push_back(models::load_graph(entry.substr(0, at), opts));
    graph_names.push_back(entry);
  }
  std::vector<sim::Cluster> clusters;
  for (const std::string& c : split_list(a.clusters.empty() ? a.cluster : a.clusters))
    clusters.push_back(sim::load_cluster(c));
  std::vector<CorpusItem> corpus;
  for (size_t gi = 0; gi < graphs.size(); ++gi)
    for (const auto& c : clusters)
      corpus.push_back({&graphs[gi], &c, graph_names[gi] + "/" + c.name});
  if (std::error_code ec; !std::filesystem::create_directories(a.checkpoint_dir, ec) && ec)
    throw sim::InputError(a.checkpoint_dir, "",
                          "a folder that can be created (" + ec.message() + ")");
  const std::string out = (std::filesystem::path(a.checkpoint_dir) / "gnn.ckpt").string();
  std::ostringstream how;
  how << "placesim train --policy gnn --update " << a.update << " --graphs " << a.graphs
      << " --clusters " << (a.clusters.empty() ? a.cluster : a.clusters) << " --seed " << a.seed
      << " --samples " << a.samples;
  if (cfg.iterations) how << " --iterations " << *cfg.iterations;
  if (cfg.minutes) how << " --minutes " << *cfg.minutes;
  std::cerr << "placesim train: pre-training a GNN policy on " << corpus.size()
            << " graph-cluster pairs, seed " << a.seed << "\n";
  const PretrainResult r = pretrain_gnn(corpus, cfg, gnn_options(a), out, how.str());
  std::string curve = a.curve;
  if (curve.empty()) curve = (std::filesystem::path(a.checkpoint_dir) / "gnn.curve.csv").string();
  write_curve_csv(r.history, curve, r.items);
  std::cout << std::fixed << std::setprecision(3) << "rl: " << r.history.size()
            << " iterations over " << corpus.size() << " graph-cluster pairs in " << r.wall_s
            << " s; policy " << out << ", curve " << curve << "\n";
  for (size_t i = 0; i < r.items.size(); ++i)
    std::cout << "rl: " << r.items[i] << ": best sample while training " << fmt_ms(r.best_step_s[i])
              << "\n";
}

// Flags that need no input to check; the others are checked where they are used.
void check_flags(const TrainJob& a) {
  if (a.policy != "seq2seq" && a.policy != "gnn")
    throw sim::InputError("<flag --policy>", "", "seq2seq or gnn, got \"" + a.policy + "\"");
  const bool gnn = a.policy == "gnn";
  if (!gnn && !a.clusters.empty())
    throw sim::InputError("<flag --clusters>", "", "--policy gnn (pre-training corpus)");
  if (!gnn && a.search != "default")
    throw sim::InputError("<flag --search>", "", "--policy gnn (the final test-time search)");
  if (a.search != "default" && a.search != "off")
    (void)parse_gnn_search(a.search, "<flag --search>");
  if (a.samples < 1)
    throw sim::InputError("<flag --samples>", "", "at least 1, got " + std::to_string(a.samples));
  if (a.hidden < 1)
    throw sim::InputError("<flag --hidden>", "",
                          "a positive size, got " + std::to_string(a.hidden));
  if (a.groups < 1)
    throw sim::InputError("<flag --groups>", "",
                          "a positive number of groups, got " + std::to_string(a.groups));
  if (a.minutes && !(*a.minutes > 0))
    throw sim::InputError("<flag --minutes>", "", "a positive number of minutes");
  if (a.iterations && *a.iterations < (a.pretrained.empty() ? 1 : 0))
    throw sim::InputError("<flag --iterations>", "",
                          a.pretrained.empty() ? "at least 1 iteration" : "at least 0 iterations");
  if (a.resume && a.checkpoint_dir.empty())
    throw sim::InputError("<flag --resume>", "", "--checkpoint DIR to resume from");
  if (!gnn && !a.graphs.empty() && a.checkpoint_dir.empty())
    throw sim::InputError("<flag --graphs>", "", "--checkpoint DIR to keep the trained policy in");
  if (!a.pretrained.empty() && !std::filesystem::exists(a.pretrained))
    throw sim::InputError(
        a.pretrained, "",
        "a checkpoint written by `placesim train` (--pretrained), got no such file");
}

AttentionScore attention_of(const TrainJob& a) {
  if (a.attention == "dot") return AttentionScore::Dot;
  if (a.attention == "additive") return AttentionScore::Additive;
  throw sim::InputError("<flag --attention>", "", "dot or additive, got \"" + a.attention + "\"");
}

Grouper grouper_of(const TrainJob& a) {
  if (a.grouper == "group_graph") return Grouper::GroupGraph;
  if (a.grouper == "colocation") return Grouper::Colocation;
  if (a.grouper == "learned") return Grouper::Learned;
  if (a.grouper == "scotch") return Grouper::Scotch;
  throw sim::InputError("<flag --grouper>", "",
                        "group_graph, colocation, scotch or learned, got \"" + a.grouper + "\"");
}

// The per-iteration progress line on stderr: rewritten in place on a terminal, every tenth
// iteration otherwise.
std::function<void(const IterationStats&, const Progress&)> progress_printer(bool tty) {
  return [tty](const IterationStats& st, const Progress& pr) {
    std::ostringstream line;
    line << "iter " << pr.iteration;
    if (pr.total_iterations) line << '/' << *pr.total_iterations;
    line << "  best " << fmt_ms(st.best_step_s) << "  mean " << fmt_ms(st.mean_step_s);
    if (st.oom_fraction > 0) line << " (" << std::lround(st.oom_fraction * 100) << "% OOM)";
    line << "  " << std::fixed << std::setprecision(1) << pr.evals_per_s << " evals/s"
         << "  [sample " << std::setprecision(2) << st.sample_s << " s, sim " << st.reward_s
         << " s, grad " << st.grad_s << " s]";
    if (pr.time_left_s) line << "  " << fmt_clock(*pr.time_left_s) << " left";
    if (tty)
      std::cerr << "\r\033[K" << line.str() << std::flush;
    else if (pr.iteration % 10 == 0 || pr.iteration == 1)
      std::cerr << line.str() << "\n";
  };
}

// The training configuration of the flags (the grouper, RL options and budget are set already).
void configure_run(const TrainJob& a, const Comm& comm, const TrainHooks& hooks, TrainConfig& cfg) {
  cfg.iterations = a.iterations;
  cfg.minutes = a.minutes;
  if (!a.minutes && !a.iterations) cfg.minutes = 8.0;  // the main job ends within 10 minutes
  cfg.checkpoint_dir = a.checkpoint_dir;
  cfg.resume = a.resume;
  cfg.checkpoint_every = a.checkpoint_every;
  cfg.sim_threads = a.threads;
  cfg.rl.shards = a.shards;
  cfg.comm = &comm;
  if (cfg.sim_threads == 0 && comm.size() > 1) {
    // Ranks on one machine share its cores; mpirun says how many ranks this node runs.
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int per_node = local ? std::max(1, std::atoi(local)) : 1;
    cfg.sim_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / per_node);
  }
  cfg.stop = hooks.stop;
  cfg.pretrained = a.pretrained;
}

TrainConfig base_config(const TrainJob& a) {
  TrainConfig cfg;
  cfg.rl.hidden = a.hidden;
  cfg.rl.samples = a.samples;
  cfg.rl.seed = a.seed;
  cfg.rl.learning_rate = a.learning_rate;
  cfg.rl.entropy_weight = a.entropy;
  cfg.rl.temperature = a.temperature;
  cfg.rl.attention = attention_of(a);
  cfg.max_groups = a.groups;
  cfg.grouper = grouper_of(a);
  return cfg;
}

// SIGINT reaches `stop` while `body` runs, and only then.
template <typename Body>
auto with_interrupts(const TrainHooks& hooks, const Body& body) {
  if (hooks.catch_interrupt) hooks.catch_interrupt(true);
  try {
    auto result = body();
    if (hooks.catch_interrupt) hooks.catch_interrupt(false);
    return result;
  } catch (...) {
    if (hooks.catch_interrupt) hooks.catch_interrupt(false);
    throw;
  }
}

void announce(const TrainJob& a, const sim::Graph& graph, const sim::Cluster& cluster,
              const TrainConfig& cfg, const Comm& comm) {
  std::cerr << "placesim train: " << graph.name << " (" << graph.num_ops() << " ops) on "
            << cluster.name << " (" << cluster.num_devices() << " devices), " << a.samples
            << " samples/iteration in " << cfg.rl.shards << " shard(s), seed " << a.seed;
  if (comm.size() > 1) std::cerr << ", " << comm.size() << " MPI ranks";
  if (cfg.iterations) std::cerr << ", " << *cfg.iterations << " iterations";
  if (cfg.minutes) std::cerr << ", " << *cfg.minutes << " min budget";
  std::cerr << "; Ctrl-C checkpoints and stops\n";
}

std::string curve_path(const TrainJob& a) {
  if (!a.curve.empty()) return a.curve;
  auto p = std::filesystem::path(a.output);
  return (p.parent_path() / (p.stem().string() + ".curve.csv")).string();
}

void write_best_placement(const TrainJob& a, const sim::Graph& graph, const sim::Cluster& cluster,
                          const TrainResult& r) {
  sim::PlacementMetadata md;
  md.method = "rl";
  md.graph = graph.name;
  md.cluster = cluster.name;
  md.predicted_step_time_s = r.best_step_s;
  md.seed = a.seed;
  md.extra["iterations"] = std::to_string(r.history.size());
  md.extra["samples"] = std::to_string(a.samples);
  md.extra["groups"] = std::to_string(r.groups);
  md.extra["policy"] = a.policy;
  if (a.policy == "gnn") {
    md.extra["update"] = a.update;
    md.extra["hints"] = a.no_hints ? "false" : "true";
    md.extra["search"] = a.search;
    if (r.search_evaluations > 0) md.extra["trained_step_s"] = std::to_string(r.trained_step_s);
  } else {
    md.extra["hidden"] = std::to_string(a.hidden);
    md.extra["attention"] = a.attention;
  }
  md.extra["grouper"] = a.grouper;
  if (!a.pretrained.empty()) md.extra["pretrained"] = a.pretrained;
  md.extra["oom"] = r.best_oom ? "true" : "false";
  if (!a.graph_opt.empty()) md.extra["graph_options"] = a.graph_opt;
  sim::write_placement_json(sim::to_placement_file(r.best, graph, cluster, md), a.output);
}

std::vector<CompareRow> compare_with_learned(const sim::Graph& graph, const sim::Cluster& cluster,
                                             const TrainResult& r, const MethodOptions& mo) {
  std::vector<CompareRow> extra{evaluate_row("rl (learned)", graph, cluster, r.best, mo, r.wall_s)};
  return compare_methods(graph, cluster, method_names(), mo, extra);
}

// One JSON document instead of the lines and the table (the table's rows included).
int report_json(const TrainJob& a, const sim::Graph& graph, const sim::Cluster& cluster,
                const TrainResult& r, const MethodOptions& mo, const std::string& curve) {
  nlohmann::ordered_json j = {{"graph", graph.name},
                              {"cluster", cluster.name},
                              {"iterations", r.history.size()},
                              {"groups", r.groups},
                              {"simulations", r.evaluations},
                              {"wall_s", r.wall_s},
                              {"best_step_s", r.best_step_s},
                              {"best_oom", r.best_oom},
                              {"output", a.output},
                              {"curve", curve},
                              {"interrupted", r.interrupted}};
  if (r.search_evaluations > 0) {
    j["trained_step_s"] = r.trained_step_s;
    j["search_simulations"] = r.search_evaluations;
    j["search_wall_s"] = r.search_wall_s;
  }
  if (!a.no_table && !r.interrupted)
    j["compare"] =
        nlohmann::ordered_json::parse(compare_to_json(compare_with_learned(graph, cluster, r, mo)));
  std::cout << j.dump(1) << "\n";
  return r.interrupted ? 130 : 0;
}

int report_text(const TrainJob& a, const sim::Graph& graph, const sim::Cluster& cluster,
                const TrainResult& r, const MethodOptions& mo, const std::string& curve) {
  double sample_s = 0, reward_s = 0, grad_s = 0;
  for (const auto& s : r.history) {
    sample_s += s.sample_s;
    reward_s += s.reward_s;
    grad_s += s.grad_s;
  }
  const double n = std::max<double>(1.0, static_cast<double>(r.history.size()));
  std::cout << std::fixed << std::setprecision(3) << "rl: " << r.history.size() << " iterations, "
            << r.groups << " groups, " << r.evaluations << " simulations in " << r.wall_s
            << " s; per iteration: sampling " << sample_s / n << " s, simulation " << reward_s / n
            << " s, gradient " << grad_s / n << " s\n";
  if (r.search_evaluations > 0)
    std::cout << "rl: training's best " << fmt_ms(r.trained_step_s) << "; the final search ran "
              << r.search_evaluations << " simulations in " << r.search_wall_s << " s\n";
  std::cout << "rl: best step time " << fmt_ms(r.best_step_s) << (r.best_oom ? " (OOM)" : "")
            << "; placement " << a.output << ", curve " << curve << "\n";
  if (r.interrupted) {
    std::cout << "rl: interrupted; checkpoint in "
              << (a.checkpoint_dir.empty() ? std::string("(none: no --checkpoint)")
                                           : a.checkpoint_dir)
              << ", continue with --resume\n";
    return 130;
  }
  if (!a.no_table)
    std::cout << "\n" << format_compare_table(compare_with_learned(graph, cluster, r, mo));
  return 0;
}

// One graph: train, then (rank 0) write the placement and the curve and report.
int train_one(const TrainJob& a, const sim::Graph& graph, const sim::Cluster& cluster,
              const TrainConfig& cfg, const MethodOptions& mo, const Comm& comm,
              const TrainHooks& hooks) {
  const bool root = comm.rank() == 0;
  if (root) announce(a, graph, cluster, cfg, comm);
  const TrainResult r = with_interrupts(hooks, [&] {
    return a.policy == "gnn" ? train_gnn(graph, cluster, cfg, gnn_options(a), gnn_search(a))
           : cfg.grouper == Grouper::Learned ? train_hierarchical(graph, cluster, cfg)
                                             : train_placement(graph, cluster, cfg);
  });
  if (!root) return r.interrupted ? 130 : 0;
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (tty) std::cerr << "\n";
  if (r.resumed) std::cerr << "placesim train: resumed from " << a.checkpoint_dir << "\n";
  write_best_placement(a, graph, cluster, r);
  const std::string curve = curve_path(a);
  write_curve_csv(r.history, curve);
  if (!a.no_plot) {
    auto png = std::filesystem::path(curve).replace_extension(".png").string();
    plot_curve(curve, png, graph.name + " on " + cluster.name + ", seed " + std::to_string(a.seed));
  }
  return a.json ? report_json(a, graph, cluster, r, mo, curve)
                : report_text(a, graph, cluster, r, mo, curve);
}

}  // namespace

int run_train_job(const TrainJob& job, const Comm& comm, const TrainHooks& hooks) {
  const TrainJob& a = job;
  check_flags(a);
  (void)attention_of(a);  // a bad --attention is reported before any input is read
  const sim::Graph graph = models::load_graph(a.graph, a.graph_opt);
  sim::Cluster cluster = sim::load_cluster(a.cluster);  // use_calibration may annotate it
  MethodOptions mo;
  if (!a.calibration.empty()) {
    std::vector<std::string> notes;
    mo.costs.set_calibration(sim::use_calibration(a.calibration, cluster, notes));
    for (const std::string& n : notes)
      if (hooks.note) hooks.note(n);
  }
  TrainConfig cfg = base_config(a);
  cfg.costs = mo.costs;
  if (a.project_baselines) {
    if (cfg.grouper == Grouper::Learned)
      throw sim::InputError("<flag --project-baselines>", "",
                            "a fixed grouper (scotch, group_graph or colocation)");
    if (comm.rank() == 0)
      run_project_baselines(graph, cluster, policy_grouping(graph, cluster, cfg), mo);
    return 0;
  }
  configure_run(a, comm, hooks, cfg);
  cfg.on_iteration = progress_printer(isatty(STDERR_FILENO) != 0);
  if (a.graphs.empty()) return train_one(a, graph, cluster, cfg, mo, comm, hooks);
  with_interrupts(hooks, [&] {
    if (a.policy == "gnn")
      run_pretrain_gnn(a, cfg);
    else
      run_train_multi(a, cfg, cluster, comm);
    return 0;
  });
  if (isatty(STDERR_FILENO) != 0) std::cerr << "\n";
  return 0;
}

}  // namespace placesim::policy
