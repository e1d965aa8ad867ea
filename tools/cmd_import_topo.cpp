// `placesim import topo`: a cluster YAML from `nvidia-smi topo -m` output or an NCCL topology XML.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/topo_import.hpp"
#include "sim/cluster.hpp"
#include "sim/error.hpp"
#include "sim/io_util.hpp"
#include "tools/commands.hpp"

namespace placesim::tools {

namespace {
struct ImportTopoArgs {
  std::string nvidia_smi, nccl_xml, output;
  calibration::TopoOptions options;
  bool json = false;
};
}  // namespace

void register_import_topo(CLI::App& import_cmd) {
  auto args = std::make_shared<ImportTopoArgs>();
  CLI::App* cmd = import_cmd.add_subcommand(
      "topo",
      "Cluster YAML from `nvidia-smi topo -m` output or an NCCL topology XML (NCCL_TOPO_FILE)");
  auto* smi =
      cmd->add_option("--nvidia-smi", args->nvidia_smi, "text output of `nvidia-smi topo -m`")
          ->check(input_file());
  auto* xml =
      cmd->add_option("--nccl-xml", args->nccl_xml, "NCCL topology XML file")->check(input_file());
  smi->excludes(xml);
  cmd->add_option("--gpu-model", args->options.gpu_model,
                  "catalog GPU model (required for nvidia-smi; overrides the XML's PCI id)");
  cmd->add_option("--cpu-model", args->options.cpu_model,
                  "catalog CPU model (default: guessed, else Xeon-E5-2698v4)");
  cmd->add_option("--name", args->options.name, "cluster name (default: the input file's stem)");
  cmd->add_option("--nic-gbps", args->options.nic_gbit_s,
                  "NIC line rate in Gb/s for files that give none (nvidia-smi; default: per GPU "
                  "generation, said so)")
      ->check(positive_number());
  cmd->add_option("-o,--output", args->output, "cluster YAML to write")->required();
  cmd->add_flag("--json", args->json, "print what was written as JSON instead of a line");
  cmd->callback([args] {
    if (args->nvidia_smi.empty() && args->nccl_xml.empty())
      throw sim::InputError("<flags>", "",
                            "one of --nvidia-smi FILE or --nccl-xml FILE, got neither");
    const std::string in = args->nvidia_smi.empty() ? args->nccl_xml : args->nvidia_smi;
    const std::string text = sim::read_text_file(in);
    const calibration::TopoImport r =
        args->nvidia_smi.empty() ? calibration::import_nccl_topo_xml(text, in, args->options)
                                 : calibration::import_nvidia_smi_topo(text, in, args->options);
    // What the importer assumed goes to stderr and, as comments, into the file it wrote.
    std::string header = "# imported by `placesim import topo` from " + in + "\n";
    for (const std::string& n : r.notes) header += "# note: " + n + "\n";
    sim::write_file_atomic(args->output, header + sim::cluster_to_yaml(r.cluster));
    if (args->json) {
      std::cout << nlohmann::ordered_json{{"output", args->output},
                                          {"gpus", r.cluster.gpus().size()},
                                          {"cpus", r.cluster.cpus().size()},
                                          {"links", r.cluster.links.size()}}
                       .dump()
                << "\n";
    } else {
      std::cout << "wrote " << args->output << ": " << r.cluster.gpus().size() << " GPUs, "
                << r.cluster.cpus().size() << " CPUs, " << r.cluster.links.size() << " links\n";
    }
    for (const std::string& n : r.notes) note(n);
  });
}

}  // namespace placesim::tools
