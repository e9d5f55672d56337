// Checks of the arguments the CLI sends to the server, made as the command
// line is read, so that a usage error names the argument and nothing is sent.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/format/utf8.hpp"

namespace kzoo::cli {

// Text that goes inside JSON: UTF-8, as JSON text is (nlohmann would throw on
// the first bad byte, and the server refuses it).
inline CLI::Validator utf8_text() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        auto p = kzoo::format::find_invalid_utf8(s);
        if (!p) return "";
        return fmt::format("is not UTF-8 text: byte 0x{:02X} at offset {} is invalid (convert it, e.g. with iconv -t UTF-8)",
                           static_cast<unsigned char>(s[p->offset]), p->offset);
      },
      "UTF-8");
}

// An id of the server's (a pull request, a job): 1 to 18 decimal digits, as
// its routes take. Checked as typed: CLI11 would turn 99999999999999999999
// into 9223372036854775807 and send that.
inline CLI::Validator positive_id() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const bool ok = !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos &&
                        s.find_first_not_of('0') != std::string::npos;
        return ok ? "" : "is not an id: give a whole number from 1 to 999999999999999999 (kzoo pulls and kzoo jobs --held list them)";
      },
      "ID");
}

// A route's NAME (of routes/NAME), or also "main" where `main_too`. Checked
// here because a name with '/' or ".." would reach the server as another
// path, and come back as "no route POST /api/routes/../main/merge".
inline CLI::Validator route_name(bool main_too) {
  return CLI::Validator(
      [main_too](std::string& s) -> std::string {
        if ((main_too && s == "main") || kzoo::board::valid_route_name(s)) return "";
        return std::string("is not ") + (main_too ? "main or " : "") +
               "a route name: 1-63 of a-z 0-9 . _ -, starting with a letter or digit, without \"..\" or a trailing "
               "\".\" or \".lock\" (NAME of routes/NAME; kzoo board lists them)";
      },
      main_too ? "main|ROUTE" : "ROUTE");
}

// Text from the server was written by others (a pull request's summary, its
// comments, some stored before the server refused control characters): it
// reaches this terminal with '?' for each control character that would
// drive it (ESC sequences, CR over the line, C1 codes), tabs and line breaks kept.
inline std::string shown(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0u;
    if (c == 0xC2 && next >= 0x80 && next <= 0x9F) {
      out += '?';
      ++i;
    } else {
      out += (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F ? '?' : static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace kzoo::cli
