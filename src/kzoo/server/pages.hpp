// The board's web pages (seed benchmark_board): plain HTML rendered on the
// server with kainjow-mustache templates (page_templates.cpp), readable without
// JavaScript, no CDN, no external fonts, no build step. Every value that came
// from a user passes through {{x}} (HTML-escaped); AGENTS.md is rendered by
// cmark without CMARK_OPT_UNSAFE, so raw HTML in it is dropped.
//
//   GET /                        the board in force
//   GET /boards/{version}        an earlier board, as it was
//   GET /kernels/{kernel_id}     a kernel: desc and its speed-up over time (SVG, drawn here)
//   GET /submissions/{id}        a submission: per-case figures, reasons, log link
//   GET /issues, /issues/{id}    the issues, and one with its thread
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kzoo::server {

// The pieces, pure so they can be tested without a server.
std::string render_board_page(const nlohmann::json& board);
std::string render_kernel_page(const nlohmann::json& kernel);
std::string render_submission_page(const nlohmann::json& submission);
// GET /api/issues's answer as a page ({"issues", "next"?}); `state` names the list shown.
std::string render_issues_page(const nlohmann::json& list, const std::string& state);
// GET /api/issues/{id}'s answer as a page.
std::string render_issue_page(const nlohmann::json& issue);
std::string render_message_page(const std::string& title, const std::string& message);

// A speed-up-over-time plot: points {time_ms, speedup, route}; well-formed SVG
// with a y axis from 0 to above the largest speed-up and a line at 1 (eager).
std::string speedup_svg(const nlohmann::json& points);

// AGENTS.md as HTML (cmark, safe mode).
std::string markdown_html(const std::string& markdown);

}  // namespace kzoo::server
