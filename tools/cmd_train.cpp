// `placesim train`: the README's main job. Trains the RL placer (policy/rl.hpp) against the
// simulator, writes the best placement, the training curve (CSV + PNG) and prints the baselines
// table with the learned placement added. With no arguments: nmt on paper-4gpu, 8 minutes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "models/grouping.hpp"
#include "models/registry.hpp"
#include "policy/compare.hpp"
#include "policy/methods.hpp"
#include "policy/mpi_util.hpp"
#include "sim/error.hpp"
#include "sim/simulate.hpp"
#include "tools/commands.hpp"
#ifdef PLACESIM_WITH_TORCH
#include "policy/rl.hpp"
#include "policy/rl_gnn.hpp"
#endif

namespace placesim::tools {

#ifdef PLACESIM_WITH_TORCH
namespace {

// A signal handler can reach nothing but a global; this flag is the only one, and only the
// `train` command installs the handler that sets it.
std::atomic<bool> g_stop_requested{false};
extern "C" void on_sigint(int) {
  g_stop_requested.store(true);
}

struct TrainArgs {
  std::string graph = "nmt", graph_opt, cluster = "paper-4gpu", calibration;
  std::optional<double> minutes;
  std::optional<int> iterations;
  int samples = 16, hidden = 256, groups = 64, checkpoint_every = 10, threads = 0;
  int shards = 1;
  std::uint64_t seed = 1;
  double learning_rate = policy::RlOptions{}.learning_rate;
  double entropy = policy::RlOptions{}.entropy_weight;
  double temperature = policy::RlOptions{}.temperature;
  std::string attention = "dot";
  std::string grouper = "scotch";
  std::string checkpoint_dir, output = "rl_placement.json", curve;
  bool resume = false, no_plot = false, no_table = false, json = false;
  bool project_baselines = false;  // the grouping's ceiling instead of training (docs/rl.md)
  std::string graphs, pretrained;  // multi-graph training; weights to start from (docs/rl.md)
  // The policy network: seq2seq (the 2017 paper's) or gnn (graph embeddings, issue 21), and how
  // the GNN learns; --clusters makes --graphs a pre-training corpus of every graph on every one.
  std::string policy = "seq2seq", update = "ppo", clusters;
  int ppo_epochs = policy::GnnOptions{}.ppo_epochs, rounds = policy::GnnOptions{}.rounds;
  bool hidden_given = false, lr_given = false, no_hints = false;
};

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
void run_train_multi(const TrainArgs& a, const policy::TrainConfig& cfg,
                     const sim::Cluster& cluster, const policy::MpiComm& comm) {
  if (comm.size() > 1)
    throw sim::InputError("<flag --graphs>", "", "one process (no mpirun) for --graphs");
  std::vector<sim::Graph> graphs;
  std::stringstream list(a.graphs);
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) graphs.push_back(models::load_graph(name, a.graph_opt));
  std::cerr << "placesim train: one policy for " << a.graphs << " on " << cluster.name << ", seed "
            << a.seed << "\n";
  const policy::MultiTrainResult r = policy::train_multi(graphs, cluster, cfg);
  std::string curve = a.curve;
  if (curve.empty()) {
    auto p = std::filesystem::path(a.output);
    curve = (p.parent_path() / (p.stem().string() + ".curve.csv")).string();
  }
  policy::write_curve_csv(r.history, curve, r.graphs);
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
                           const models::Grouping& grouping, const policy::MethodOptions& mo) {
  std::cout << "projection of each baseline onto the " << grouping.size()
            << " groups the policy places\n";
  std::cout << std::left << std::setw(14) << "method" << std::right << std::setw(14) << "own (s)"
            << std::setw(16) << "projected (s)"
            << "\n";
  for (const auto& name : policy::method_names()) {
    sim::Placement own;
    try {
      own = policy::make_placement(name, graph, cluster, mo);
    } catch (const sim::InputError&) {
      continue;
    }
    const sim::Placement projected =
        grouping.expand(models::project_placement(grouping, own, cluster));
    auto cell = [&](const sim::Placement& p) {
      const policy::CompareRow row = policy::evaluate_row(name, graph, cluster, p, mo, 0.0);
      std::ostringstream os;
      os << std::fixed << std::setprecision(4) << row.step_time_s;
      if (row.oom || row.unreachable) os << (row.oom ? " OOM" : " unreach");
      return os.str();
    };
    std::cout << std::left << std::setw(14) << name << std::right << std::setw(14) << cell(own)
              << std::setw(16) << cell(projected) << "\n";
  }
}

policy::GnnOptions gnn_options(const TrainArgs& a) {
  policy::GnnOptions o;
  if (a.hidden_given) o.hidden = a.hidden;
  if (a.lr_given) o.learning_rate = a.learning_rate;
  o.rounds = a.rounds;
  o.samples = a.samples;
  o.seed = a.seed;
  o.entropy_weight = a.entropy;
  o.ppo_epochs = a.ppo_epochs;
  o.hints = !a.no_hints;
  if (a.update == "ppo")
    o.update = policy::PolicyUpdate::Ppo;
  else if (a.update == "reinforce")
    o.update = policy::PolicyUpdate::Reinforce;
  else
    throw sim::InputError("<flag --update>", "", "ppo or reinforce, got \"" + a.update + "\"");
  if (a.rounds < 0)
    throw sim::InputError("<flag --rounds>", "", "0 or more, got " + std::to_string(a.rounds));
  if (a.ppo_epochs < 1)
    throw sim::InputError("<flag --ppo-epochs>", "",
                          "at least 1, got " + std::to_string(a.ppo_epochs));
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
void run_pretrain_gnn(const TrainArgs& a, const policy::TrainConfig& cfg) {
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
  std::vector<policy::CorpusItem> corpus;
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
  const policy::PretrainResult r =
      policy::pretrain_gnn(corpus, cfg, gnn_options(a), out, how.str());
  std::string curve = a.curve;
  if (curve.empty()) curve = (std::filesystem::path(a.checkpoint_dir) / "gnn.curve.csv").string();
  policy::write_curve_csv(r.history, curve, r.items);
  std::cout << std::fixed << std::setprecision(3) << "rl: " << r.history.size()
            << " iterations over " << corpus.size() << " graph-cluster pairs in " << r.wall_s
            << " s; policy " << out << ", curve " << curve << "\n";
  for (size_t i = 0; i < r.items.size(); ++i)
    std::cout << "rl: " << r.items[i] << ": best sample while training " << fmt_ms(r.best_step_s[i])
              << "\n";
}

void run_train(const TrainArgs& a, const policy::MpiComm& comm) {
  if (a.policy != "seq2seq" && a.policy != "gnn")
    throw sim::InputError("<flag --policy>", "", "seq2seq or gnn, got \"" + a.policy + "\"");
  const bool gnn = a.policy == "gnn";
  if (!gnn && !a.clusters.empty())
    throw sim::InputError("<flag --clusters>", "", "--policy gnn (pre-training corpus)");
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
  policy::AttentionScore score;
  if (a.attention == "dot")
    score = policy::AttentionScore::Dot;
  else if (a.attention == "additive")
    score = policy::AttentionScore::Additive;
  else
    throw sim::InputError("<flag --attention>", "", "dot or additive, got \"" + a.attention + "\"");

  const sim::Graph graph = models::load_graph(a.graph, a.graph_opt);
  sim::Cluster cluster = sim::load_cluster(a.cluster);
  policy::MethodOptions mo;
  if (!a.calibration.empty()) {
    std::vector<std::string> notes;
    mo.costs.set_calibration(sim::use_calibration(a.calibration, cluster, notes));
    for (const std::string& n : notes) note(n);
  }

  policy::TrainConfig cfg;
  cfg.rl.hidden = a.hidden;
  cfg.rl.samples = a.samples;
  cfg.rl.seed = a.seed;
  cfg.rl.learning_rate = a.learning_rate;
  cfg.rl.entropy_weight = a.entropy;
  cfg.rl.temperature = a.temperature;
  cfg.rl.attention = score;
  cfg.max_groups = a.groups;
  if (a.grouper == "group_graph")
    cfg.grouper = policy::Grouper::GroupGraph;
  else if (a.grouper == "colocation")
    cfg.grouper = policy::Grouper::Colocation;
  else if (a.grouper == "learned")
    cfg.grouper = policy::Grouper::Learned;
  else if (a.grouper == "scotch")
    cfg.grouper = policy::Grouper::Scotch;
  else
    throw sim::InputError("<flag --grouper>", "",
                          "group_graph, colocation, scotch or learned, got \"" + a.grouper + "\"");
  if (a.project_baselines) {
    if (cfg.grouper == policy::Grouper::Learned)
      throw sim::InputError("<flag --project-baselines>", "",
                            "a fixed grouper (scotch, group_graph or colocation)");
    cfg.costs = mo.costs;
    if (comm.rank() == 0)
      run_project_baselines(graph, cluster, policy::policy_grouping(graph, cluster, cfg), mo);
    return;
  }
  cfg.iterations = a.iterations;
  cfg.minutes = a.minutes;
  if (!a.minutes && !a.iterations) cfg.minutes = 8.0;  // the main job ends within 10 minutes
  cfg.checkpoint_dir = a.checkpoint_dir;
  cfg.resume = a.resume;
  cfg.checkpoint_every = a.checkpoint_every;
  cfg.sim_threads = a.threads;
  cfg.rl.shards = a.shards;
  cfg.comm = &comm;
  const bool root = comm.rank() == 0;
  if (cfg.sim_threads == 0 && comm.size() > 1) {
    // Ranks on one machine share its cores; mpirun says how many ranks this node runs.
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int per_node = local ? std::max(1, std::atoi(local)) : 1;
    cfg.sim_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / per_node);
  }
  cfg.costs = mo.costs;
  cfg.stop = &g_stop_requested;
  cfg.pretrained = a.pretrained;
  const bool tty = isatty(STDERR_FILENO) != 0;
  cfg.on_iteration = [tty](const policy::IterationStats& st, const policy::Progress& pr) {
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
  if (!a.graphs.empty()) {
    g_stop_requested.store(false);
    auto* prev_handler = std::signal(SIGINT, on_sigint);
    try {
      if (gnn)
        run_pretrain_gnn(a, cfg);
      else
        run_train_multi(a, cfg, cluster, comm);
    } catch (...) {
      std::signal(SIGINT, prev_handler);
      throw;
    }
    std::signal(SIGINT, prev_handler);
    if (tty) std::cerr << "\n";
    return;
  }

  if (root) {
    std::cerr << "placesim train: " << graph.name << " (" << graph.num_ops() << " ops) on "
              << cluster.name << " (" << cluster.num_devices() << " devices), " << a.samples
              << " samples/iteration in " << cfg.rl.shards << " shard(s), seed " << a.seed;
    if (comm.size() > 1) std::cerr << ", " << comm.size() << " MPI ranks";
    if (cfg.iterations) std::cerr << ", " << *cfg.iterations << " iterations";
    if (cfg.minutes) std::cerr << ", " << *cfg.minutes << " min budget";
    std::cerr << "; Ctrl-C checkpoints and stops\n";
  }

  g_stop_requested.store(false);
  auto* previous = std::signal(SIGINT, on_sigint);
  policy::TrainResult r;
  try {
    r = gnn ? policy::train_gnn(graph, cluster, cfg, gnn_options(a))
        : cfg.grouper == policy::Grouper::Learned ? policy::train_hierarchical(graph, cluster, cfg)
                                                  : policy::train_placement(graph, cluster, cfg);
  } catch (...) {
    std::signal(SIGINT, previous);
    throw;
  }
  std::signal(SIGINT, previous);
  if (!root) {
    if (r.interrupted) throw CliExit{130};
    return;
  }
  if (tty) std::cerr << "\n";
  if (r.resumed) std::cerr << "placesim train: resumed from " << a.checkpoint_dir << "\n";

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
  if (gnn) {
    md.extra["update"] = a.update;
    md.extra["hints"] = a.no_hints ? "false" : "true";
  } else {
    md.extra["hidden"] = std::to_string(a.hidden);
    md.extra["attention"] = a.attention;
  }
  md.extra["grouper"] = a.grouper;
  if (!a.pretrained.empty()) md.extra["pretrained"] = a.pretrained;
  md.extra["oom"] = r.best_oom ? "true" : "false";
  if (!a.graph_opt.empty()) md.extra["graph_options"] = a.graph_opt;
  sim::write_placement_json(sim::to_placement_file(r.best, graph, cluster, md), a.output);

  std::string curve = a.curve;
  if (curve.empty()) {
    auto p = std::filesystem::path(a.output);
    curve = (p.parent_path() / (p.stem().string() + ".curve.csv")).string();
  }
  policy::write_curve_csv(r.history, curve);
  if (!a.no_plot) {
    auto png = std::filesystem::path(curve).replace_extension(".png").string();
    plot_curve(curve, png, graph.name + " on " + cluster.name + ", seed " + std::to_string(a.seed));
  }

  double sample_s = 0, reward_s = 0, grad_s = 0;
  for (const auto& s : r.history) {
    sample_s += s.sample_s;
    reward_s += s.reward_s;
    grad_s += s.grad_s;
  }
  const double n = std::max<double>(1.0, static_cast<double>(r.history.size()));
  if (a.json) {
    // One JSON document instead of the lines and the table (the table's rows included).
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
    if (!a.no_table && !r.interrupted) {
      std::vector<policy::CompareRow> extra{
          policy::evaluate_row("rl (learned)", graph, cluster, r.best, mo, r.wall_s)};
      j["compare"] = nlohmann::ordered_json::parse(policy::compare_to_json(
          policy::compare_methods(graph, cluster, policy::method_names(), mo, extra)));
    }
    std::cout << j.dump(1) << "\n";
    if (r.interrupted) throw CliExit{130};
    return;
  }
  std::cout << std::fixed << std::setprecision(3) << "rl: " << r.history.size() << " iterations, "
            << r.groups << " groups, " << r.evaluations << " simulations in " << r.wall_s
            << " s; per iteration: sampling " << sample_s / n << " s, simulation " << reward_s / n
            << " s, gradient " << grad_s / n << " s\n";
  std::cout << "rl: best step time " << fmt_ms(r.best_step_s) << (r.best_oom ? " (OOM)" : "")
            << "; placement " << a.output << ", curve " << curve << "\n";
  if (r.interrupted) {
    std::cout << "rl: interrupted; checkpoint in "
              << (a.checkpoint_dir.empty() ? std::string("(none: no --checkpoint)")
                                           : a.checkpoint_dir)
              << ", continue with --resume\n";
    throw CliExit{130};
  }
  if (!a.no_table) {
    std::vector<policy::CompareRow> extra{
        policy::evaluate_row("rl (learned)", graph, cluster, r.best, mo, r.wall_s)};
    const auto rows = policy::compare_methods(graph, cluster, policy::method_names(), mo, extra);
    std::cout << "\n" << policy::format_compare_table(rows);
  }
}

}  // namespace
#endif  // PLACESIM_WITH_TORCH

void register_train(CLI::App& app) {
#ifdef PLACESIM_WITH_TORCH
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train",
                                     "train the RL placer (Mirhoseini et al. 2017) on the "
                                     "simulator; no arguments = nmt on paper-4gpu, 8 minutes");
  cmd->add_option("--graph", a->graph, "built-in workload or graph file")
      ->capture_default_str()
      ->check(not_a_directory());
  cmd->add_option("--graph-opt", a->graph_opt, "workload options, k=v,k=v");
  cmd->add_option("--cluster", a->cluster, "built-in cluster or YAML file")
      ->capture_default_str()
      ->check(not_a_directory());
  cmd->add_option("--calibration", a->calibration, "calibration YAML for the kernel cost model")
      ->check(input_file());
  cmd->add_option("--minutes", a->minutes,
                  "wall-clock budget (default 8 when --iterations is not given)");
  cmd->add_option("--iterations", a->iterations,
                  "total iterations, counting those before --resume");
  cmd->add_option("--samples", a->samples, "placements sampled per iteration (K)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "seed: weights and sampling; the same seed gives the same run")
      ->capture_default_str();
  auto* hidden_opt = cmd->add_option("--hidden", a->hidden,
                                     "LSTM width (seq2seq; default 256) or embedding width (gnn; "
                                     "default 64)");
  cmd->add_option(
         "--policy", a->policy,
         "seq2seq (Mirhoseini et al. 2017, one graph) or gnn (graph embeddings: any graph, "
         "any cluster; docs/rl.md)")
      ->capture_default_str();
  cmd->add_option("--update", a->update,
                  "gnn: ppo (clipped ratio, --ppo-epochs per batch) or reinforce")
      ->capture_default_str();
  cmd->add_option("--ppo-epochs", a->ppo_epochs, "gnn, ppo: gradient steps per batch of samples")
      ->capture_default_str();
  cmd->add_option("--rounds", a->rounds, "gnn: message-passing rounds over the group DAG")
      ->capture_default_str();
  cmd->add_flag("--no-hints", a->no_hints,
                "gnn: hide the baselines' placements (scotch, m-etf) from the policy (ablation)");
  cmd->add_option("--clusters", a->clusters,
                  "gnn with --graphs: pre-train on every graph on each of these clusters, c1,c2");
  cmd->add_option("--groups", a->groups, "maximum co-location groups the policy places")
      ->capture_default_str();
  cmd->add_option("--grouper", a->grouper,
                  "group_graph (models::group_graph), scotch (group_graph split along Scotch's "
                  "placement), colocation (contiguous co-location runs) or learned (Hierarchical "
                  "Planner grouper, trained jointly)")
      ->capture_default_str();
  auto* lr_opt = cmd->add_option("--lr", a->learning_rate,
                                 "Adam learning rate (seq2seq default 0.001, gnn 0.003)");
  cmd->add_option("--entropy", a->entropy, "entropy bonus weight")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "softmax temperature")->capture_default_str();
  cmd->add_option("--attention", a->attention,
                  "dot (Luong, default) or additive (Bahdanau, ~10x slower)")
      ->capture_default_str();
  cmd->add_option("--checkpoint", a->checkpoint_dir,
                  "directory for checkpoint.pt (atomic, every --checkpoint-every iterations)");
  cmd->add_option("--checkpoint-every", a->checkpoint_every, "iterations between checkpoints")
      ->capture_default_str();
  cmd->add_flag("--resume", a->resume, "continue from --checkpoint DIR exactly where it stopped");
  cmd->add_option(
      "--graphs", a->graphs,
      "train one policy on several graphs, g1,g2,... (needs --checkpoint; with --policy gnn "
      "g@k=v+k=v gives a graph's options; see docs/rl.md)");
  cmd->add_option(
      "--pretrained", a->pretrained,
      "start from this checkpoint's weights (e.g. from --graphs); --iterations 0 = no retraining");
  cmd->add_option("-o,--output", a->output, "best placement JSON")->capture_default_str();
  cmd->add_option("--curve", a->curve,
                  "training-curve CSV (default: <output stem>.curve.csv; PNG beside it)");
  cmd->add_option("--threads", a->threads,
                  "simulation threads (oneTBB); 0 = all cores (shared by the ranks under mpirun)")
      ->capture_default_str();
  cmd->add_option("--shards", a->shards,
                  "cut the K samples into this many shards, each sampled and back-propagated as "
                  "one batch; under mpirun the rank count must divide it, and every such rank "
                  "count (1 included) gives the same result")
      ->capture_default_str();
  cmd->add_flag("--no-plot", a->no_plot, "skip the PNG plot");
  cmd->add_flag("--no-table", a->no_table, "skip the baselines table at the end");
  cmd->add_flag("--json", a->json, "print the result (and the baselines table's rows) as JSON");
  cmd->add_flag("--project-baselines", a->project_baselines,
                "no training: simulate every baseline's placement projected onto the policy's "
                "groups (what the grouping can express)");
  cmd->callback([a, hidden_opt, lr_opt] {
    a->hidden_given = hidden_opt->count() > 0;
    a->lr_given = lr_opt->count() > 0;
    policy::MpiRuntime mpi;
    policy::MpiComm comm(mpi);
    refuse_mpirun_without_mpi(mpi);
    try {
      run_train(*a, comm);
    } catch (const sim::InputError&) {
      // Every rank meets the same bad input; one line from rank 0 is enough. The others wait a
      // moment before exiting: mpirun aborts the job when the first rank exits non-zero, which
      // could otherwise be before rank 0 has printed the line.
      if (comm.rank() != 0) {
        std::this_thread::sleep_for(std::chrono::seconds(2));
        throw CliExit{2};
      }
      throw;
    }
    // Ranks leave together (polling with sleeps), so no rank spins in MPI_Finalize while rank 0
    // writes its outputs and the baselines table.
    comm.barrier();
  });
#else
  CLI::App* cmd = app.add_subcommand("train", "train the RL placer (needs a build with LibTorch)");
  cmd->allow_extras();
  cmd->callback([] {
    throw sim::InputError("<placesim train>", "",
                          "a build with -DPLACESIM_WITH_TORCH=ON; this one has no LibTorch");
  });
#endif
}

}  // namespace placesim::tools
