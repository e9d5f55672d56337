// kzoo's entry point: builds the CLI11 app from the registered subcommands and
// runs the chosen one. Kept tiny on purpose; the work lives in libkzoo.
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "kzoo/cli/command.hpp"

namespace kzoo::cli {
namespace {

struct Entry {
  std::string name;  // may contain one space: "group verb"
  std::string description;
  Setup setup;
};

std::vector<Entry>& registry() {
  static std::vector<Entry> entries;
  return entries;
}

}  // namespace

bool register_command(std::string name, std::string description, Setup setup) {
  registry().push_back({std::move(name), std::move(description), std::move(setup)});
  return true;
}

}  // namespace kzoo::cli

int main(int argc, char** argv) {
  using namespace kzoo::cli;
  CLI::App app{"kzoo: grade GPU kernels honestly"};
  app.set_version_flag("--version", std::string("kzoo ") + KZOO_VERSION);
  app.require_subcommand(1);

  std::map<std::string, CLI::App*> groups;
  std::vector<std::pair<CLI::App*, Runner>> runners;
  auto entries = registry();
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& e : entries) {
    CLI::App* parent = &app;
    std::string leaf = e.name;
    if (auto sp = e.name.find(' '); sp != std::string::npos) {
      std::string group = e.name.substr(0, sp);
      leaf = e.name.substr(sp + 1);
      auto it = groups.find(group);
      if (it == groups.end()) {
        CLI::App* g = app.add_subcommand(group, group + " commands");
        g->require_subcommand(1);
        it = groups.emplace(group, g).first;
      }
      parent = it->second;
    }
    CLI::App* sub = parent->add_subcommand(leaf, e.description);
    runners.emplace_back(sub, e.setup(*sub));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        std::cerr << "kzoo: internal error: " << e.what() << "\n";
        return kExitError;
      }
    }
  }
  return kExitError;
}
