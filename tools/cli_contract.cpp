// The command-line contract shared by every subcommand (tools/commands.hpp): exit statuses,
// one-line errors on stderr, --quiet, and the path checks of input options.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/error.hpp"
#include "sim/graph.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {
// The process's --quiet, set once by main before its one command runs (tools/ only; the libraries
// take no such flag).
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
bool g_quiet = false;

std::string one_line(std::string s) {
  // A message from a library may hold newlines; the contract is one line per error.
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// "placesim import onnx": the subcommands the parser had entered when it failed.
std::string command_path(CLI::App& app) {
  std::string path = app.get_name().empty() ? "placesim" : app.get_name();
  CLI::App* at = &app;
  for (;;) {
    const auto subs = at->get_subcommands();
    if (subs.empty()) break;
    at = subs.front();
    path += " " + at->get_name();
  }
  return path;
}
}  // namespace

bool quiet() {
  return g_quiet;
}
void set_quiet(bool q) {
  g_quiet = q;
}

void note(const std::string& text) {
  if (!g_quiet) std::cerr << "note: " << text << "\n";
}

const CLI::Validator& input_file() {
  static const CLI::Validator v(
      [](std::string& path) -> std::string {
        std::error_code ec;
        const auto st = std::filesystem::status(path, ec);
        if (ec || !std::filesystem::exists(st))
          return path + ": expected a readable file (it does not exist)";
        if (std::filesystem::is_directory(st)) return path + ": expected a file, got a directory";
        return {};
      },
      "FILE");
  return v;
}

namespace {
// "" when `text` is a whole number (strtod's syntax) that `ok` accepts, else the message.
std::string number_check(const std::string& text, bool (*ok)(double), const char* expected) {
  char* end = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || !ok(v))
    return std::string("expected ") + expected + ", got \"" + text + "\"";
  return {};
}
}  // namespace

const CLI::Validator& positive_number() {
  static const CLI::Validator v(
      [](std::string& text) {
        return number_check(
            text, [](double x) { return x > 0; }, "a number above 0");
      },
      "POSITIVE");
  return v;
}

const CLI::Validator& non_negative_number() {
  static const CLI::Validator v(
      [](std::string& text) {
        return number_check(
            text, [](double x) { return x >= 0; }, "a number of 0 or more");
      },
      "NONNEGATIVE");
  return v;
}

const CLI::Validator& not_a_directory() {
  static const CLI::Validator v(
      [](std::string& path) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec))
          return path + ": expected a file, got a directory";
        return {};
      },
      "");
  return v;
}

void add_quiet_flags(CLI::App& app) {
  if (!app.get_option_no_throw("--quiet"))
    app.add_flag_callback(
        "--quiet", [] { set_quiet(true); },
        "no notes, warnings or progress on stderr (results and errors only)");
  for (CLI::App* sub : app.get_subcommands({})) add_quiet_flags(*sub);
}

std::string graph_stats_json(const sim::Graph& g, const sim::GraphStats& s,
                             const std::string& output) {
  nlohmann::ordered_json j = {{"name", g.name},
                              {"ops", s.ops},
                              {"forward_ops", s.forward_ops},
                              {"backward_ops", s.backward_ops},
                              {"update_ops", s.update_ops},
                              {"flops", s.flops.v},
                              {"persistent_bytes", s.persistent_bytes.v},
                              {"metadata", g.metadata},
                              {"output", output}};
  return j.dump(1);
}

int report_failure(CLI::App& app, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own statuses (104 extras, 106 conversion, 109 ...) are one class for a caller: 2.
    const std::string path = command_path(app);
    std::cerr << path << ": " << one_line(e.what()) << " (run `" << path << " --help`)\n";
    return 2;
  } catch (const sim::InputError& e) {
    std::cerr << "placesim: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // Paths come from the command line: an unusable one is an input error.
    std::cerr << "placesim: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const CliExit& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::cerr << "placesim: error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 1;
}

}  // namespace placesim::tools
