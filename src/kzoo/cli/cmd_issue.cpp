// kzoo issue new | list | show | comment | close: the project's issues
// through the server (store/issues.hpp), with $KZOO_TOKEN as the bearer
// token. Anyone signed in opens and comments; the author or a maintainer
// closes. Exit codes: 0 done, 1 refused by the server (4xx), 2 unreachable,
// a server failure or a usage error.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/server_answer.hpp"
#include "kzoo/cli/text_args.hpp"
#include "kzoo/server/client.hpp"

namespace cmd_issue {  // per command: a unity build joins commands (CMakeLists.txt)

using kzoo::cli::kExitError;
using kzoo::cli::kExitInvalid;
using kzoo::cli::kExitOk;
using kzoo::cli::shown;
using kzoo::cli::refused;
constexpr auto str = &kzoo::cli::shown_field;
using nlohmann::json;

struct Opts {
  std::string server = kzoo::server::default_server_url();
  std::string title, body, body_file, state = "open", author, why;
  std::int64_t id = 0, before = 0;
  int limit = 50;
  bool json_out = false;
};

void common(CLI::App& sub, Opts& o) {
  sub.add_option("--server", o.server, "Server URL (env KZOO_SERVER)");
  sub.add_flag("--json", o.json_out, "one JSON document on stdout");
}

// --body TEXT, or --body-file FILE ("-": standard input), for texts longer than a command line.
void body_options(CLI::App& sub, Opts& o, const char* what) {
  auto* b = sub.add_option("--body", o.body, what)->check(kzoo::cli::utf8_text());
  sub.add_option("--body-file", o.body_file, "read the text from FILE (- for standard input)")->excludes(b);
}

bool read_body(Opts& o, const char* cmd) {
  if (o.body_file.empty()) return true;
  std::stringstream ss;
  if (o.body_file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(o.body_file, std::ios::binary);
    if (!in) {
      std::cerr << fmt::format("kzoo issue {}: cannot read {}\n", cmd, o.body_file);
      return false;
    }
    ss << in.rdbuf();
  }
  o.body = ss.str();
  if (auto p = kzoo::format::find_invalid_utf8(o.body)) {
    std::cerr << fmt::format("kzoo issue {}: {} is not UTF-8 text (byte 0x{:02X} at line {}, column {}): convert it, "
                             "e.g. with iconv -t UTF-8\n",
                             cmd, o.body_file, static_cast<unsigned char>(o.body[p->offset]), p->line, p->column);
    return false;
  }
  return true;
}

void print_issue(const json& i, bool thread) {
  std::cout << fmt::format("#{} {} · {} · by {} · {} comment(s) · updated {}\n", i.value("id", 0), str(i, "title"),
                           str(i, "state"), str(i, "author"), i.value("comments", 0), str(i, "updated_at"));
  if (!thread) return;
  if (i.value("closed_by", json()).is_string())
    std::cout << fmt::format("  closed by {} at {}{}\n", str(i, "closed_by"), str(i, "closed_at"),
                             i.value("close_reason", json()).is_string() ? ": " + str(i, "close_reason") : "");
  if (!str(i, "body").empty()) std::cout << "\n" << str(i, "body") << "\n";
  for (const auto& c : i.value("thread", json::array()))
    std::cout << fmt::format("\n  [{}] {}: {}\n", str(c, "at"), str(c, "who"), str(c, "body"));
}

const bool new_cmd = kzoo::cli::register_command(
    "issue new", "Open an issue (anyone signed in)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("title", o->title, "one line, 1-200 bytes")->required()->check(kzoo::cli::utf8_text());
      body_options(sub, *o, "what happened, and how to see it again (at most 20000 bytes)");
      common(sub, *o);
      return [o] {
        if (!read_body(*o, "new")) return kExitError;
        auto a = kzoo::server::http_post_json(o->server, "/api/issues", {{"title", o->title}, {"body", o->body}});
        if (!a || a->status != 201) return refused("issue new", a);
        if (o->json_out) std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        else std::cout << a->body.value("id", 0) << "\n";
        std::cerr << fmt::format("kzoo issue new: opened issue {} ({}/issues/{})\n", a->body.value("id", 0), o->server,
                                 a->body.value("id", 0));
        return kExitOk;
      };
    });

const bool list_cmd = kzoo::cli::register_command(
    "issue list", "List issues, newest first (open ones by default)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("--state", o->state, "open, closed or all")->check(CLI::IsMember({"open", "closed", "all"}));
      sub.add_option("--author", o->author, "only those opened by this user")->check(kzoo::cli::utf8_text());
      sub.add_option("--limit", o->limit, "at most this many (1-1000, default 50)")->check(CLI::Range(1, 1000));
      sub.add_option("--before", o->before, "only those older than this issue id (the next page)")
          ->check(CLI::Range(std::int64_t{1}, INT64_MAX));
      common(sub, *o);
      return [o] {
        std::string q = fmt::format("/api/issues?state={}&limit={}", o->state, o->limit);
        if (!o->author.empty()) q += "&author=" + kzoo::server::query_escape(o->author);
        if (o->before > 0) q += fmt::format("&before={}", o->before);
        auto a = kzoo::server::http_get(o->server, q);
        if (!a || a->status != 200) return refused("issue list", a);
        if (o->json_out) {
          std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
          return kExitOk;
        }
        const json& list = a->body["issues"];
        if (list.empty()) std::cerr << fmt::format("kzoo issue list: no {} issue\n", o->state == "all" ? "" : o->state);
        for (const auto& i : list) print_issue(i, false);
        if (a->body.contains("next") && !list.empty())
          std::cerr << fmt::format("kzoo issue list: more with --before {}\n", list.back().value("id", 0));
        return kExitOk;
      };
    });

const bool show_cmd = kzoo::cli::register_command(
    "issue show", "Show one issue with its comments", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("id", o->id, "the issue's id (kzoo issue list)")->required()->check(kzoo::cli::positive_id());
      common(sub, *o);
      return [o] {
        auto a = kzoo::server::http_get(o->server, fmt::format("/api/issues/{}", o->id));
        if (!a || a->status != 200) return refused("issue show", a);
        if (o->json_out) std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        else print_issue(a->body, true);
        return kExitOk;
      };
    });

const bool comment_cmd = kzoo::cli::register_command(
    "issue comment", "Comment on an issue (anyone signed in)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("id", o->id, "the issue's id")->required()->check(kzoo::cli::positive_id());
      auto* text = sub.add_option("text", o->body, "the comment (1-10000 bytes)")->check(kzoo::cli::utf8_text());
      sub.add_option("--body-file", o->body_file, "read the comment from FILE (- for standard input)")->excludes(text);
      common(sub, *o);
      return [o] {
        if (!read_body(*o, "comment")) return kExitError;
        if (o->body.empty()) {
          std::cerr << "kzoo issue comment: no text: give it as an argument or with --body-file\n";
          return kExitError;
        }
        auto a = kzoo::server::http_post_json(o->server, fmt::format("/api/issues/{}/comments", o->id),
                                              {{"body", o->body}});
        if (!a || a->status != 201) return refused("issue comment", a);
        if (o->json_out) std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        std::cerr << fmt::format("kzoo issue comment: comment {} on issue {}\n", a->body.value("id", 0), o->id);
        return kExitOk;
      };
    });

const bool close_cmd = kzoo::cli::register_command(
    "issue close", "Close an issue (its author, their agents, or a maintainer)", [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Opts>();
      sub.add_option("id", o->id, "the issue's id")->required()->check(kzoo::cli::positive_id());
      sub.add_option("--why", o->why, "the reason (at most 1000 bytes)")->check(kzoo::cli::utf8_text());
      common(sub, *o);
      return [o] {
        json body = json::object();
        if (!o->why.empty()) body["why"] = o->why;
        auto a = kzoo::server::http_post_json(o->server, fmt::format("/api/issues/{}/close", o->id), body);
        if (!a || a->status != 200) return refused("issue close", a);
        if (o->json_out) std::cout << a->body.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        std::cerr << fmt::format("kzoo issue close: issue {} closed\n", o->id);
        return kExitOk;
      };
    });

}  // namespace
