#!/usr/bin/env node
// What does one more turn cost the editor: the Flower view's tree rebuilt in the extension host,
// and the context chart redrawn in its webview? For an HT001-scale history (70 judged rounds:
// 140 work turns from 28.7K to 185.9K tokens, 70 judges, 70 verdict marks), or `--history FILE`
// (a flower/history answer as JSON).
//
// - extension host (Node): applying a flower/historyUpdate turn and rebuilding the tree's nodes;
// - webview (headless Chromium, the chart's page script bundled as build.mjs bundles dist/chart.js
//   for VS Code): the first drawing of the whole history, then each appended turn until the
//   drawing is laid out (a forced layout after every message), median of `--turns` turns.
//
//   eval "$(bash scripts/vscode-toolchain.sh --env)"      # Node 24, playwright-core, chromium
//   bash scripts/vscode-deps.sh                             # the extension's node_modules (esbuild)
//   node benchmarks/bench_chart.mjs [--turns 200] [--history FILE] [--smoke]
//
// --smoke: a few turns, seconds; it proves the benchmark runs (CI), its figures mean nothing.
// Figures only: nothing here asserts on time.
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXT = path.join(REPO, 'vscode-extension');
const argv = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
};
const TURNS = argv.includes('--smoke') ? 5 : Number(arg('--turns', '200'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// how a verdict verified its three checks: a command, a read, and (while it fails) the failed one
function evidenceOf(failing) {
  const none = { command: '', exit_code: null, excerpt: '', path: '', line: null, end_line: null, pattern: '', hits: null };
  return [
    { ...none, check: 'python3 hello.py 输出 hello', kind: 'command', command: 'python3 hello.py', exit_code: 0, excerpt: 'hello', backed: true, basis: '跑了 python3 hello.py', check_line: 5, state: 'passed' },
    { ...none, check: 'hello.py 只用标准库', kind: 'read', path: 'hello.py', line: 1, end_line: 3, backed: true, basis: '读了 hello.py', check_line: 6, state: 'passed' },
    { ...none, check: 'README.md 写明了 Python 的最低版本', kind: 'read', path: 'README.md', line: 1, end_line: 9, backed: !failing, basis: '读了 README.md', check_line: 7, state: failing ? 'failed' : 'passed' },
  ];
}

function ht001() {
  const t0 = 1_800_000_000;
  const turns = [];
  const marks = [];
  const rounds = [];
  let used = 28_700;
  const growth = (185_900 - 28_700) / 140;
  for (let r = 1; r <= 70; r++) {
    for (let k = 0; k < 2; k++) {
      turns.push({ at: t0 + turns.length * 30, used: Math.round(used), session_id: 'work', step: r === 1 ? '干活' : `干活#round${r}`, lane: '干活', generation: 1, wake: 1 });
      used += growth;
    }
    turns.push({ at: t0 + turns.length * 30, used: 13_600, session_id: `judge-${r}`, step: `干活·判定#${r}`, lane: '干活·判定', generation: r, wake: 1 });
    marks.push({ kind: 'verdict', turn: turns.length - 1, label: r === 1 ? '干活' : `干活#round${r}`, state: r < 70 ? 'not_yet' : 'achieved' });
    rounds.push({
      number: r, step: r === 1 ? '干活' : `干活#round${r}`, status: 'done', session_id: 'work', retired: [],
      started_at: t0 + r * 90, ended_at: t0 + r * 90 + 60, duration_s: 60, cost_usd: 0.3, num_turns: 2,
      attempts: 1, errors: [], error: null, resumed: false, judge_error: null, handoffs: [], questions: [],
      verdict: { state: r < 70 ? 'not_yet' : 'achieved', reason: `第 ${r} 轮:还差一条。`, failed: r < 70 ? [{ text: 'README.md 写明了 Python 的最低版本', line: 7 }] : [],
        round: r, step: `干活·判定#${r}`, session_id: `judge-${r}`, at: t0 + r * 90 + 70, cost_usd: 0.02, num_turns: 1, duration_s: 10,
        evidence: evidenceOf(r < 70), trail: [], unproven: [], claimed: r < 70 ? 'not_yet' : 'achieved' },
    });
  }
  const work = { name: '干活', rounds, sessions: ['work'], cost_usd: 22.4, num_turns: 210, duration_s: 4900, live: true };
  return {
    folder: 'file:///ht001', revision: 1, workspace: '/ht001', run_dir: '/ht001/runs', brief: '/ht001/.flower/notes/需求.md',
    goal: '/ht001/.flower/notes/目标.md', brief_uri: '', goal_uri: '', brief_exists: true, goal_exists: true, checks: [],
    woke: 1, sessions: { 干活: 'work' },
    wakes: [{ number: 1, run: 'r1', started_at: t0, ended_at: 0, cost_usd: 22.4, num_turns: 210, duration_s: 4900, live: true, steps: [work] }],
    turns, marks, window: 1_000_000, at: 950_000, warn_at: 930_000, cost_usd: 22.4, num_turns: 210, duration_s: 4900,
    live: true, live_step: '干活#round70', elsewhere: '', earlier: 0, problems: [],
  };
}

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'flower-bench-chart-'));

async function pure() {
  // the extension's pure modules, bundled as the extension bundles them (CommonJS: @vscode/l10n
  // requires Node's modules at run time, which an ES module bundle cannot)
  const { build } = createRequire(path.join(EXT, 'package.json'))('esbuild');
  const out = path.join(TMP, 'pure.cjs');
  await build({
    stdin: {
      contents: "export { applyUpdate } from './src/history'; export { folderNodes } from './src/historyTree'; export { chartSvg } from './src/chart';",
      resolveDir: EXT,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: out,
    logLevel: 'warning',
  });
  return createRequire(import.meta.url)(out);
}

async function pageScript() {
  // the webview's script, with build.mjs's options for dist/chart.js (a browser, no Node)
  const { build } = createRequire(path.join(EXT, 'package.json'))('esbuild');
  const out = path.join(TMP, 'chart.js');
  await build({
    entryPoints: [path.join(EXT, 'src/webview/chart.ts')],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'chrome120',
    outfile: out,
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  return fs.readFileSync(out, 'utf8');
}

async function main() {
  const given = arg('--history');
  let history = given ? JSON.parse(fs.readFileSync(given, 'utf8')) : ht001();
  const { applyUpdate, folderNodes, chartSvg } = await pure();
  const last = history.turns[history.turns.length - 1];
  const extra = Array.from({ length: TURNS }, (_, i) => ({ ...last, at: last.at + i + 1, used: last.used + i }));
  console.log(`history:     ${history.turns.length} turns, ${history.marks.length} marks, ${history.wakes.length} wake(s)${given ? ` (${given})` : ' (HT001 scale)'}`);

  // -- the extension host: apply the update, rebuild the tree's nodes
  const host = [];
  let held = history;
  for (let i = 0; i < TURNS; i++) {
    const started = performance.now();
    held = applyUpdate(held, { folder: held.folder, revision: held.revision + 1, turn: extra[i] }).history;
    folderNodes(held);
    host.push(performance.now() - started);
  }
  const svg = [];
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    chartSvg(history, { width: 1100, height: 600 });
    svg.push(performance.now() - started);
  }
  console.log(`host        median ${median(host).toFixed(3).padStart(8)} ms per turn   (apply the update + rebuild the tree's nodes)`);
  console.log(`svg markup  median ${median(svg).toFixed(3).padStart(8)} ms per drawing (chart.ts alone, in Node)`);

  // -- the webview: the bundled page script in headless Chromium
  const script = await pageScript();
  const playwright = process.env.FLOWER_PLAYWRIGHT_CORE;
  if (!playwright) throw new Error('FLOWER_PLAYWRIGHT_CORE is not set: eval "$(bash scripts/vscode-toolchain.sh --env)"');
  const { chromium } = createRequire(import.meta.url)(playwright);
  const browser = await chromium.launch({
    executablePath: process.env.FLOWER_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.setContent(
      '<!DOCTYPE html><html><head><style>#chart{width:1100px;height:600px}</style></head><body>' +
        '<p id="summary"></p><main id="chart"></main><ul id="legend"></ul><div id="tooltip" hidden></div></body></html>',
    );
    await page.evaluate(() => {
      window.reports = [];
      window.acquireVsCodeApi = () => ({ postMessage: (m) => window.reports.push(m) });
    });
    await page.addScriptTag({ content: script });
    const timed = (message) =>
      page.evaluate((m) => {
        const started = performance.now();
        window.dispatchEvent(new MessageEvent('message', { data: m }));
        document.querySelector('#chart svg')?.getBoundingClientRect(); // lay it out
        void document.body.offsetHeight;
        return performance.now() - started;
      }, message);
    const first = await timed({ type: 'history', history });
    const perTurn = [];
    for (let i = 0; i < TURNS; i++)
      perTurn.push(await timed({ type: 'turn', turn: extra[i], revision: history.revision + i + 1 }));
    const drawn = await page.evaluate(() => document.querySelectorAll('#chart circle.point').length);
    if (drawn !== history.turns.length + TURNS)
      throw new Error(`the page drew ${drawn} points, expected ${history.turns.length + TURNS}`);
    console.log(`webview     first  ${first.toFixed(2).padStart(8)} ms            (the whole history, laid out)`);
    console.log(`webview     median ${median(perTurn).toFixed(2).padStart(8)} ms per turn   (append, redraw, lay out; ${history.turns.length}..${drawn} points)`);
    console.log('a model turn takes seconds: both are well below it');
  } finally {
    await browser.close();
  }
}

try {
  await main();
} finally {
  fs.rmSync(TMP, { recursive: true, force: true });
}
