// The --help layout every program of ours uses: CLI11's, without the value
// CLI11 prints after each name of a negatable flag. CLI11 2.1 lists
// "--journal-fsync,!--no-journal-fsync" as
// "--journal-fsync,--no-journal-fsync{false}" (the value that name stores);
// the description says what each name does, so the names stand alone.
// Header-only; include it only from a target that links CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace resctrlfs {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    std::string out;
    bool in_value = false;
    for (char c : name) {
      if (c == '{') in_value = true;
      if (!in_value) out += c;
      if (c == '}') in_value = false;
    }
    return out;
  }
};

// Gives `app` (and the subcommands it adds afterwards) the formatter above.
inline void use_help_formatter(CLI::App& app) { app.formatter(std::make_shared<HelpFormatter>()); }

}  // namespace resctrlfs
