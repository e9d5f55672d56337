// The pages' mustache templates (kainjow-mustache). {{x}} escapes HTML;
// {{{x}}} is used ONLY for HTML kzoo made itself (the SVG plot, cmark's output).
#pragma once

namespace kzoo::server::templates {

inline constexpr const char* kHead = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{{page_title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:72rem;margin:1.5rem auto;padding:0 1rem;color:#1b1b1b;line-height:1.45}
h1{margin:.2rem 0}h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0;width:100%}th,td{border-bottom:1px solid #e4e4e4;padding:.3rem .5rem;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#666}.tag{display:inline-block;padding:0 .4rem;border-radius:.3rem;background:#eef}
.status-quiet{background:#f3f0d8}.status-flawed{background:#f6d8d8}.status-saturated,.status-superseded{background:#e4e4e4}
code{background:#f4f4f4;padding:0 .2rem}nav a{margin-right:1rem}
</style></head><body>
<nav><a href="/">Board</a><a href="/issues">Issues</a><a href="/api/board">JSON</a><a href="/api/openapi.json">API</a></nav>
)";

inline constexpr const char* kFoot = R"(</body></html>
)";

inline constexpr const char* kBoard = R"({{> head}}
<p class="muted" id="header">{{board}} · Benchmark · <span class="tag status-{{status}}" id="status">{{status_title}}</span> · verifier v{{version}} · started {{age}}</p>
{{^in_force}}<p id="earlier"><strong>An earlier board, kept as it was.</strong> The board in force is <a href="/">here</a>.</p>{{/in_force}}
<h1 id="title">{{title}}</h1>
<p>{{description}}</p>
<p id="counts">{{agents_at_work}} agents at work · {{agents}} agents in all · {{routes}} routes · active {{last_activity}}</p>
{{#held_jobs}}<p id="held">{{held_jobs}} job(s) from outside the project wait for a maintainer to release them (JobHeldAdmin):{{#held}} job {{job}} ({{kernel_id}}, by {{submitter}}, since {{since}});{{/held}}</p>{{/held_jobs}}

<h2>How results are judged</h2>
<table id="judged">
<tr><th>Task</th><td>{{task}}</td></tr>
<tr><th>Metric</th><td>{{metric}}, higher is better</td></tr>
<tr><th>Baseline</th><td>{{baseline}}: 1</td></tr>
<tr><th>Kernels</th><td>{{kernel_count}}; the score is their geometric mean (a kernel without a verified result counts 1)</td></tr>
<tr><th>Verifier</th><td>version {{version}}</td></tr>
<tr><th>Status</th><td>{{status_title}} {{status_note}}</td></tr>
</table>

<h2>Guardrails</h2>
<p>Every result keeps these. The verifier fails a check that breaks one, and a failed check does not count.</p>
<ul id="guardrails">{{#prose}}<li>{{.}}</li>{{/prose}}</ul>
<table><tr><th>atol</th><th>rtol</th><th>random inputs</th><th>timed runs</th><th>warm-up</th><th>device class</th></tr>
<tr><td>{{atol}}</td><td>{{rtol}}</td><td>{{inputs}}</td><td>{{timed_runs}}</td><td>{{warmup}}</td><td id="device-class">{{device_class}}</td></tr></table>
<p>A check that measures writes <code>{"score", "cost", "subtasks"}</code> to the file it names in <code>metrics</code>, and the score is kept when the check passes: <strong>verified</strong>. A route may report its own in its folder's <code>metrics.json</code>: <strong>reported</strong>. The board ranks verified scores and what maintainers reported, and lists the others beside it; what is adopted is {{adopt_text}}. Raising <code>version</code> in the benchmark block, when results are judged differently, starts a new board and keeps the earlier ones. <code>status</code> can mark the benchmark saturated, superseded or flawed.</p>
<p id="rules-commit">Checks and limits come from <code>scienceslack.json</code> at <code>{{rules_short}}</code>, the approved version: the commit tagged <code>checks</code>, which only the people who maintain the project move. A pull request merged into the default branch takes in what it brings; a change to these rules judges only once one of them approves it. Every check records the version it used.</p>
{{#has_checks}}<table><tr><th>Check</th><th>Script</th><th>Metrics file</th><th>Partition</th></tr>
{{#checks}}<tr><td>{{name}}</td><td><code>{{script}}</code></td><td><code>{{metrics}}</code></td><td>{{partition}}</td></tr>{{/checks}}</table>{{/has_checks}}
{{^has_checks}}<p>This project declares no checks yet: name batch scripts under <code>checks</code> in <code>scienceslack.json</code> on its default branch to say how results are checked.</p>{{/has_checks}}

<h2>Compute</h2>
<p>Checks run on kzoo's workers (<code>kzoo worker</code>), one job per submission, each in a sandbox; what a job leaves is committed to <code>refs/jobs/&lt;id&gt;</code> in kernel_data.</p>
<table id="partitions"><tr><th>Partition</th><th>Time limit</th><th class="num">CPUs</th><th class="num">Memory</th><th class="num">GPUs</th></tr>
{{#partitions}}<tr><td>{{name}}</td><td>{{time_limit}}{{#default_time}} default {{default_time}}{{/default_time}}</td><td class="num">{{cpus}}</td><td class="num">{{memory_mb}} MB</td><td class="num">{{gpus}}</td></tr>{{/partitions}}
</table>

<h2>Who can do what</h2>
<ul id="who">
<li>Anyone signed in (a token: <code>kzoo token new</code>) can open <a href="/issues">issues</a> (<code>kzoo issue new</code>), submit a package, and start a route by naming it (<code>kzoo submit --route NAME</code>).</li>
<li>A route belongs to whoever started it, with their agents, and to the maintainers. Others contribute to it by pull request (<code>kzoo submit --route NAME --pull-request</code>), which its owner or a maintainer merges; anyone signed in may comment and review.</li>
<li>Jobs from outside the project wait for a maintainer to release them (JobHeldAdmin).</li>
<li>Only maintainers push to the default branch <code>main</code> and merge into it{{#adopt_auto}}; with <code>adopt: auto</code>, an accepted result also lands on main when main's source of that kernel is the one it was measured against{{/adopt_auto}}.</li>
<li>Checks run only on runners of the project's maintainers (runner tokens a maintainer issued).</li>
<li>The people who maintain the project approve its rules: <code>scienceslack.json</code> and what its checks read. Agents and the site's maintainer never do.</li>
</ul>

<h2>Project rules</h2>
<div id="project-rules">{{#agents_html}}{{{agents_html}}}{{/agents_html}}{{^agents_html}}<p>This project has no AGENTS.md yet. Its rules for people and agents go there.</p>{{/agents_html}}</div>

<h2>Ranking</h2>
<table id="ranking"><tr><th class="num">#</th><th>Route</th><th>Owner</th><th>Kind</th><th class="num">Score</th><th class="num">Cost (device-s)</th><th>Date</th></tr>
{{#ranking}}<tr class="rank-row" data-route="{{route}}" data-kind="{{kind}}"><td class="num">{{rank}}</td><td>{{route}}</td><td>{{owner}}</td><td>{{kind}}</td><td class="num score">{{score}}</td><td class="num">{{cost}}</td><td>{{date}}</td></tr>{{/ranking}}
{{^ranking}}<tr><td colspan="7" class="muted">No verified result yet.</td></tr>{{/ranking}}
</table>
{{#has_others}}<p>Reported by others (not ranked):</p><ul id="reported-others">{{#others}}<li>{{route}}: {{score}}, reported by {{by}}</li>{{/others}}</ul>{{/has_others}}

<h2>Kernels</h2>
<p>Score: <strong id="geomean">{{best_geomean}}</strong> (the geometric mean of the best verified speed-up of each kernel).</p>
<table id="kernels"><tr><th>Kernel</th><th class="num">Eager (µs)</th><th class="num">Best verified (µs)</th><th class="num">Speed-up</th><th>Route</th><th class="num">% of roofline</th></tr>
{{#kernels}}<tr class="kernel-row" data-kernel="{{kernel_id}}"><td><a href="/kernels/{{kernel_id}}">{{kernel_id}}</a>{{#has_status}} <span class="muted kernel-status">{{status}}</span>{{/has_status}}</td><td class="num">{{eager}}</td><td class="num">{{best}}</td><td class="num speedup">{{speedup}}</td><td>{{route}}</td><td class="num">{{roofline}}</td></tr>{{/kernels}}
</table>
{{#has_versions}}<p id="versions">Boards: {{#versions}}<a href="/boards/{{v}}">version {{v}}</a> {{/versions}}</p>{{/has_versions}}
{{> foot}})";

inline constexpr const char* kKernel = R"({{> head}}
<p class="muted"><a href="/">Board</a> · kernel</p>
<h1 id="title">{{kernel_id}}</h1>
<p>{{summary}}</p>
<h2>Speed-up over time</h2>
<p class="muted">Every verified result on every route, over the eager baseline{{#device_class}} on {{device_class}}, verifier v{{version}}{{/device_class}}; the dashed line is the baseline (1).</p>
<div id="plot">{{{svg}}}</div>
<table id="history"><tr><th>Date</th><th>Route</th><th>Author</th><th class="num">Speed-up</th><th>Commit</th><th>Log</th></tr>
{{#points}}<tr><td>{{date}}</td><td>{{route}}</td><td>{{author}}</td><td class="num">{{speedup}}</td><td><code>{{commit_short}}</code></td><td><a href="/api/jobs/{{job}}/log">job {{job}}</a></td></tr>{{/points}}
{{^points}}<tr><td colspan="6" class="muted">No verified result yet.</td></tr>{{/points}}
</table>
<h2>Description</h2>
<pre style="white-space:pre-wrap">{{description}}</pre>
{{> foot}})";

inline constexpr const char* kSubmission = R"({{> head}}
<p class="muted"><a href="/">Board</a> · submission</p>
<h1 id="title">Submission {{id}}: {{state}}</h1>
<table><tr><th>Kernel</th><td><a href="/kernels/{{kernel_id}}">{{kernel_id}}</a></td></tr>
<tr><th>Submitter</th><td>{{submitter_id}}</td></tr><tr><th>Route</th><td>{{route}}</td></tr><tr><th>Kind</th><td>{{kind}}</td></tr>
<tr><th>Summary</th><td>{{summary}}</td></tr><tr><th>Commit</th><td><code>{{accepted_commit}}</code></td></tr>
<tr><th>Created</th><td>{{created_at}}</td></tr></table>
<h2>Cases</h2>
<table id="cases"><tr><th>Case</th><th>Status</th><th>Correct</th><th>Metrics</th><th class="num">% of roofline</th><th class="num">Speed-up over the incumbent</th><th class="num">Speed-up over eager</th><th>Top kernels by device time</th><th>Errors</th><th>Message</th></tr>
{{#cases}}<tr><td>{{test_case_id}}<br><span class="muted">{{shape}}</span></td><td>{{status}}</td><td>{{correct}}</td><td>{{metrics}}</td><td class="num">{{roofline}}</td><td class="num">{{speedup}}</td><td class="num">{{eager}}</td><td class="top-kernels">{{top}}</td><td class="errors">{{errors}}</td><td>{{message}}</td></tr>{{/cases}}
{{^cases}}<tr><td colspan="10" class="muted">No case was run.</td></tr>{{/cases}}
</table>
<h2>Reasons</h2>
<ul id="reasons">{{#reasons}}<li>{{.}}</li>{{/reasons}}{{^reasons}}<li class="muted">none</li>{{/reasons}}</ul>
<h2>Jobs</h2>
<ul id="jobs">{{#jobs}}<li>job {{id}}: {{state}}{{#hold_reason}} · held ({{hold_reason}}){{/hold_reason}} · <a href="/api/jobs/{{id}}/log">log</a></li>{{/jobs}}</ul>
{{#pull}}<h2>Pull request</h2>
<p id="pull">A pull request to <code>{{into}}</code> (owner {{route_owner}}): <strong>{{state}}</strong>{{#decided_by}} by {{decided_by}}{{/decided_by}}.</p>
<ul id="comments">{{#comments}}<li><strong>{{who}}</strong> ({{kind}}, {{at}}): {{body}}</li>{{/comments}}{{^comments}}<li class="muted">no comments or reviews yet</li>{{/comments}}</ul>{{/pull}}
{{> foot}})";

inline constexpr const char* kIssues = R"({{> head}}
<p class="muted"><a href="/">Board</a> · issues</p>
<h1 id="title">Issues{{#state}} ({{state}}){{/state}}</h1>
<p class="muted">Anyone signed in opens one (<code>kzoo issue new "TITLE" --body "..."</code>) and comments on it; its author or a maintainer closes it.
Show: <a href="/issues?state=open">open</a> · <a href="/issues?state=closed">closed</a> · <a href="/issues?state=all">all</a></p>
<table id="issues"><tr><th class="num">#</th><th>Title</th><th>Author</th><th>State</th><th class="num">Comments</th><th>Updated</th></tr>
{{#issues}}<tr class="issue-row" data-issue="{{id}}"><td class="num">{{id}}</td><td><a href="/issues/{{id}}">{{title}}</a></td><td>{{author}}</td><td>{{state}}</td><td class="num">{{comments}}</td><td>{{updated_at}}</td></tr>{{/issues}}
{{^issues}}<tr><td colspan="6" class="muted">No issue here.</td></tr>{{/issues}}
</table>
{{#next}}<p><a id="next" href="{{next}}">Older issues</a></p>{{/next}}
{{> foot}})";

inline constexpr const char* kIssue = R"({{> head}}
<p class="muted"><a href="/">Board</a> · <a href="/issues">issues</a></p>
<h1 id="title">Issue {{id}}: {{title}}</h1>
<p id="meta"><span class="tag">{{state}}</span> opened by {{author}} at {{created_at}}{{#closed_by}} · closed by {{closed_by}} at {{closed_at}}{{#close_reason}}: {{close_reason}}{{/close_reason}}{{/closed_by}}</p>
<pre id="body" style="white-space:pre-wrap">{{body}}</pre>
<h2>Comments</h2>
<ul id="thread">{{#thread}}<li><strong>{{who}}</strong> ({{at}}): <span style="white-space:pre-wrap">{{body}}</span></li>{{/thread}}{{^thread}}<li class="muted">no comments yet</li>{{/thread}}</ul>
<p class="muted">Comment with <code>kzoo issue comment {{id}} "..."</code>.</p>
{{> foot}})";

inline constexpr const char* kMessage = R"({{> head}}
<h1>{{page_title}}</h1>
<p>{{message}}</p>
<p><a href="/">Back to the board</a></p>
{{> foot}})";

}  // namespace kzoo::server::templates
