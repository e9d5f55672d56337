// The board's pages in a real browser (Debian's chromium, driven by
// playwright-core; no browser download). Loads each page and checks what it
// shows against the API's numbers: the ranking, the geomean shown, a kernel
// plot, no console errors, no request leaving the host, and the ranking
// readable with JavaScript off.
// Usage: node board_pages.mjs http://127.0.0.1:PORT SUBMISSION_ID
import { chromium } from 'playwright-core';

const [server, submissionId] = process.argv.slice(2);
const failures = [];
const fail = (m) => { failures.push(m); console.log('FAIL: ' + m); };
const ok = (m) => console.log('ok   ' + m);
const api = async (path) => (await fetch(server + path)).json();
const f4 = (x) => (x === null || x === undefined ? '–' : x.toFixed(4));

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--headless=new'] });
try {
  for (const js of [true, false]) {
    const ctx = await browser.newContext({ javaScriptEnabled: js });
    const page = await ctx.newPage();
    const errors = [], outside = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('request', (r) => { const u = r.url(); if (!u.startsWith(server + '/') && !u.startsWith('data:')) outside.push(u); });
    const board = await api('/api/board');
    const visit = async (path) => {
      const res = await page.goto(server + path);
      if (!res || res.status() !== 200) fail(`${path}: HTTP ${res && res.status()}`);
    };
    const tag = js ? '' : ' (JavaScript off)';

    await visit('/');
    const rows = await page.$$eval('#ranking tr.rank-row', (trs) => trs.map((tr) => ({
      route: tr.dataset.route, kind: tr.dataset.kind, score: tr.querySelector('.score').textContent.trim() })));
    const want = board.ranking.map((r) => ({ route: r.route, kind: r.kind, score: f4(r.score) }));
    if (JSON.stringify(rows) === JSON.stringify(want) && rows.length > 0) ok(`the ranking shown is the API's (${rows.length} rows)${tag}`);
    else fail(`ranking shown ${JSON.stringify(rows)} != API ${JSON.stringify(want)}${tag}`);
    const geo = Math.exp(board.kernels.reduce((s, k) => s + Math.log(k.speedup), 0) / board.kernels.length);
    const shown = (await page.textContent('#geomean')).trim();
    if (shown === f4(geo)) ok(`the geomean shown (${shown}) is the API kernels' geometric mean${tag}`);
    else fail(`geomean shown ${shown} != ${f4(geo)}${tag}`);
    const speedups = await page.$$eval('#kernels tr.kernel-row', (trs) => trs.map((tr) => [tr.dataset.kernel, tr.querySelector('.speedup').textContent.trim()]));
    const wantK = board.kernels.map((k) => [k.kernel_id, f4(k.speedup)]);
    if (JSON.stringify(speedups) === JSON.stringify(wantK)) ok(`the kernels table's speed-ups are the API's${tag}`);
    else fail(`kernels ${JSON.stringify(speedups)} != ${JSON.stringify(wantK)}${tag}`);
    const status = (await page.textContent('#status')).trim().toLowerCase();
    if (status === board.status) ok(`status ${status}${tag}`); else fail(`status ${status} != ${board.status}`);

    const best = board.kernels.filter((k) => k.route);
    for (const k of best) {
      await visit('/kernels/' + k.kernel_id);
      const n = await page.$$eval('#speedup-plot circle.point', (c) => c.length);
      const box = await page.$eval('#speedup-plot', (s) => s.getBoundingClientRect().width);
      if (n >= 1 && box > 100) ok(`${k.kernel_id}: the plot is drawn (${n} points)${tag}`);
      else fail(`${k.kernel_id}: plot points ${n}, width ${box}${tag}`);
    }
    if (best.length === 0) fail('no kernel holds a verified result: nothing to plot');
    await visit('/boards/' + board.version);
    await visit('/submissions/' + submissionId);
    const cases = await page.$$eval('#cases tr', (trs) => trs.length - 1);
    if (cases >= 1) ok(`the submission page lists ${cases} cases${tag}`); else fail('submission page has no cases');

    if (errors.length === 0) ok(`no console errors${tag}`); else fail(`console errors: ${errors.join(' | ')}`);
    if (outside.length === 0) ok(`no request left ${server}${tag}`); else fail(`requests outside: ${outside.join(' ')}`);
    await ctx.close();
  }
} finally {
  await browser.close();
}
console.log(`${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
