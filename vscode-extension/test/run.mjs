#!/usr/bin/env node
// Runs every test of the extension and prints `N passed, M failed` last:
//   unit  pure helpers, and src/protocol.ts against the server's generator (node:test)
//   host  Mocha inside the extension host of a real VS Code (code-server), real language
//         server, engine and Claude Code CLI, flower.sim as the model; each suite file in a
//         VS Code, workspace and sim of its own, so no suite depends on another's order or leftovers
//   ui    headless Chromium driving that VS Code as a person would, with the packaged .vsix;
//         its screenshots stay with the run's logs, and replace docs/*.png only with --screenshots
// Expects the toolchain's environment (scripts/test-vscode.sh sets it up):
//   FLOWER_CODE_SERVER, FLOWER_PLAYWRIGHT_CORE, FLOWER_CHROMIUM, and FLOWER_PYTHON (default .venv).
// Usage: node test/run.mjs [--only unit,host,ui] [--keep] [--verbose] [--screenshots]
import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { format, promisify } from 'node:util';

const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.dirname(EXT);
const PYTHON = process.env.FLOWER_PYTHON || path.join(REPO, '.venv/bin/python');
const CODE_SERVER = process.env.FLOWER_CODE_SERVER;
const PLAYWRIGHT = process.env.FLOWER_PLAYWRIGHT_CORE;
const CHROMIUM = process.env.FLOWER_CHROMIUM || '/usr/bin/chromium';
const VSIX = path.join(EXT, 'dist/flower.vsix');
const DOCS = path.join(REPO, 'docs');
const REQUEST = '写一个 hello.py,运行时打印问候语';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const onlyArg = argv.find((_, i) => argv[i - 1] === '--only');
const KINDS = (onlyArg ?? 'unit,host,ui').split(',');
const KEEP = flag('--keep');
const SCREENSHOTS = flag('--screenshots'); // the README's pictures: only on request, never by a test run
const VERBOSE = flag('--verbose') || process.env.FLOWER_TEST_VERBOSE === '1';

const results = []; // { kind, title, ok, ms, error }
const cleanups = [];
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'flower-vscode-test-'));
const t0 = Date.now();

function say(line) {
  process.stdout.write(`${line}\n`);
}
function record(kind, title, ok, ms, error) {
  results.push({ kind, title, ok, ms, error });
  say(`${ok ? '  ok  ' : '  FAIL'} [${kind}] ${title} (${(ms / 1000).toFixed(1)} s)`);
  if (!ok && error) say(indent(String(error).split('\n').slice(0, 25).join('\n'), '        '));
}
const indent = (text, pad) => text.replace(/^/gm, pad);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// -- processes ------------------------------------------------------------------------------

/** A child in its own process group, so that stopping it also stops what it started. */
function startGroup(command, args, { env, log, stdin = 'ignore' } = {}) {
  const out = fs.openSync(log, 'a');
  const child = spawn(command, args, {
    env,
    detached: true,
    stdio: [stdin, stdin === 'pipe' ? 'pipe' : out, out],
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      return;
    }
    const exited = once(child, 'exit');
    if (await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  };
  cleanups.push(stop);
  return { child, stop, log };
}

async function freePort() {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

/** flower.sim in its own process; its URL is the first line it prints. */
async function startSim(dir) {
  const proc = startGroup(
    PYTHON,
    [
      '-m',
      'flower.sim',
      'serve',
      '--scenario',
      'starter',
      '--port',
      '0',
      '--log',
      path.join(dir, 'sim-requests.jsonl'),
    ],
    {
      env: process.env,
      log: path.join(dir, 'sim.log'),
      stdin: 'pipe', // the sim serves until its stdin closes
    },
  );
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(
      () => reject(new Error(`flower.sim printed no URL (see ${dir}/sim.log)`)),
      30_000,
    );
    proc.child.stdout.on('data', (d) => {
      buf += d;
      const m = buf.match(/^(http:\/\/127\.0\.0\.1:\d+)\s*$/m);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.child.on('exit', (code) => reject(new Error(`flower.sim exited with ${code} (see ${dir}/sim.log)`)));
  });
  return { url, stop: proc.stop };
}

/** The environment a Claude Code CLI needs to talk only to the sim, and what to remove. */
async function simEnv(url, dir) {
  const code =
    'import json, sys\n' +
    'from flower.sim.env import HOST_MODEL_VARS, isolated_env\n' +
    'print(json.dumps({"env": isolated_env(sys.argv[1], sys.argv[2]), "remove": list(HOST_MODEL_VARS)}))';
  const { stdout } = await promisify(execFile)(PYTHON, ['-c', code, url, path.join(dir, 'claude')]);
  return JSON.parse(stdout);
}

const USER_SETTINGS = {
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'chat.disableAIFeatures': true,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'security.workspace.trust.enabled': false,
  'git.enabled': false,
  'git.openRepositoryInParentFolders': 'never',
};

/** One code-server with isolated XDG folders, user data, extensions and a sim of its own. */
async function startVSCode(name, { vscodeOptions = [], install, extraEnv = {} } = {}) {
  const dir = path.join(root, name);
  const ws = path.join(dir, 'workspace');
  for (const d of ['xdg-config', 'xdg-data', 'xdg-cache', 'user-data/User', 'extensions', 'workspace'])
    fs.mkdirSync(path.join(dir, d), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'user-data/User/settings.json'),
    JSON.stringify({ ...USER_SETTINGS, 'flower.python': PYTHON }, null, 2),
  );
  const port = await freePort();
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);

  const sim = await startSim(dir);
  cleanups.push(sim.stop);
  const { env: cliEnv, remove } = await simEnv(sim.url, dir);
  const env = { ...process.env, ...cliEnv };
  for (const v of remove) delete env[v];
  Object.assign(env, {
    XDG_CONFIG_HOME: path.join(dir, 'xdg-config'),
    XDG_DATA_HOME: path.join(dir, 'xdg-data'),
    XDG_CACHE_HOME: path.join(dir, 'xdg-cache'),
    FLOWER_TEST_RESULTS: path.join(dir, 'results.json'),
    ...extraEnv,
  });
  const common = [
    '--user-data-dir',
    path.join(dir, 'user-data'),
    '--extensions-dir',
    path.join(dir, 'extensions'),
  ];
  if (install) {
    const { stdout } = await promisify(execFile)(CODE_SERVER, [...common, '--install-extension', install], {
      env,
    });
    if (VERBOSE) say(indent(stdout.trim(), `  [${name}] `));
  }
  const args = [
    '--config',
    config,
    ...common,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--ignore-last-opened',
    ...vscodeOptions.flatMap((o) => ['--vscode-option', o]),
    ws,
  ];
  const server = startGroup(CODE_SERVER, args, { env, log: path.join(dir, 'code-server.log') });
  const base = `http://127.0.0.1:${port}`;
  const end = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {}
    if (server.child.exitCode !== null)
      throw new Error(`code-server exited with ${server.child.exitCode} (see ${server.log})`);
    if (Date.now() > end) throw new Error(`code-server did not answer /healthz (see ${server.log})`);
    await sleep(200);
  }
  const stop = async () => {
    await server.stop();
    await sim.stop();
  };
  return { dir, ws, port, base, env, stop };
}

let browserPromise;
function browser() {
  browserPromise ??= (async () => {
    const { chromium } = createRequire(import.meta.url)(PLAYWRIGHT);
    const b = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
      ],
    });
    cleanups.push(() => b.close());
    return b;
  })();
  return browserPromise;
}

// -- unit ------------------------------------------------------------------------------------

async function runUnit() {
  const { run } = await import('node:test');
  const files = fs
    .readdirSync(path.join(EXT, 'out/test/unit'))
    .filter((f) => f.endsWith('.test.js'))
    .map((f) => path.join(EXT, 'out/test/unit', f));
  const stream = run({ files, concurrency: 1 });
  stream.on(
    'test:pass',
    (t) =>
      t.details.type !== 'suite' && t.nesting === 0 && record('unit', t.name, true, t.details.duration_ms),
  );
  stream.on('test:fail', (t) => {
    if (t.details.type === 'suite') return;
    const err = t.details.error;
    record(
      'unit',
      t.name,
      false,
      t.details.duration_ms,
      err?.cause?.stack ?? err?.cause ?? err?.stack ?? String(err),
    );
  });
  for await (const _ of stream); // drain
}

// -- in-host -----------------------------------------------------------------------------------

async function runHost() {
  const suites = fs
    .readdirSync(path.join(EXT, 'out/test/suite'))
    .filter((f) => f.endsWith('.test.js'))
    .sort();
  if (suites.length === 0) throw new Error('no in-host suites in out/test/suite: build the tests first');
  for (const suite of suites) await runHostSuite(suite);
}

async function runHostSuite(suite) {
  const started = Date.now();
  const vs = await startVSCode(`host-${path.basename(suite, '.test.js')}`, {
    vscodeOptions: ['enable-smoke-test-driver'],
    extraEnv: { FLOWER_TEST_FILE: suite },
  });
  const authority = `127.0.0.1:${vs.port}`;
  const payload = [
    ['extensionDevelopmentPath', `vscode-remote://${authority}${EXT}`],
    ['extensionTestsPath', `vscode-remote://${authority}${EXT}/out/test/suite/index.js`],
  ];
  const url = `${vs.base}/?folder=${encodeURIComponent(vs.ws)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const logFile = path.join(vs.dir, 'host-tests.log');
  let exit;
  const exited = new Promise((resolve) => (exit = resolve));
  await page.exposeFunction('codeAutomationLog', (level, args) => {
    // The host forwards console calls as (level, [format, ...values]).
    const text = Array.isArray(args) ? format(...args) : format(level, args);
    fs.appendFileSync(logFile, `${text}\n`);
    if (VERBOSE) say(indent(text, '  [host] '));
  });
  await page.exposeFunction('codeAutomationExit', (code) => exit(code));
  await page.goto(url);
  const limit = Number(process.env.FLOWER_HOST_TIMEOUT_S || 420) * 1000;
  const code = await Promise.race([exited, sleep(limit).then(() => 'timeout')]);
  await context.close();
  await vs.stop();
  const resultsFile = vs.env.FLOWER_TEST_RESULTS;
  const outcomes = fs.existsSync(resultsFile) ? JSON.parse(fs.readFileSync(resultsFile, 'utf8')) : [];
  for (const o of outcomes) record('host', o.title, o.ok, o.ms, o.error);
  if (code === 'timeout' || outcomes.length === 0 || (code !== 0 && outcomes.every((o) => o.ok))) {
    const why =
      code === 'timeout'
        ? `no exit after ${limit / 1000} s`
        : `exit code ${code}, ${outcomes.length} results`;
    record(
      'host',
      `the in-host suite ${suite} completes`,
      false,
      Date.now() - started,
      `${why}; logs: ${vs.dir}`,
    );
  }
}

// -- UI ----------------------------------------------------------------------------------------

async function runUi() {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  const vs = await startVSCode('ui', { install: VSIX });
  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const step = async (title, fn) => {
    const started = Date.now();
    try {
      await fn();
      record('ui', title, true, Date.now() - started);
      return true;
    } catch (err) {
      const shot = path.join(vs.dir, `failed-${results.length}.png`);
      await page.screenshot({ path: shot }).catch(() => undefined);
      record('ui', title, false, Date.now() - started, `${err?.stack ?? err}\nscreenshot: ${shot}`);
      return false;
    }
  };
  // F1, type the title, Enter. Right after the workbench shows, installed extensions' commands
  // may not be listed yet: like a person, close the palette and try again.
  const palette = async (title) => {
    const end = Date.now() + 30_000;
    for (;;) {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(`>${title}`);
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
      try {
        await row.waitFor({ timeout: 2_000 });
        await page.keyboard.press('Enter');
        return;
      } catch (err) {
        await page.keyboard.press('Escape');
        if (Date.now() > end) throw err;
        await page.waitForTimeout(500);
      }
    }
  };
  const toast = (text) => page.locator('.notification-toast', { hasText: text }).first();
  const picture = async (name) => {
    await page.mouse.move(640, 500); // no hover tooltip in the picture
    await page.waitForTimeout(700); // toasts fade in
    const dir = SCREENSHOTS ? DOCS : vs.dir;
    fs.mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, name) });
  };
  const meter = page.locator('.statusbar-item', { hasText: /^Flower [\d.]+[KM]? \/ [\d.]+[KM]?/ }).first();

  // each step needs the one before it: the first failure ends the walk
  const steps = [
    [
      'the workbench opens the folder',
      async () => {
        await page.goto(`${vs.base}/?folder=${encodeURIComponent(vs.ws)}`);
        await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
        await page.locator('.statusbar').waitFor({ timeout: 30_000 });
      },
    ],
    [
      'F1 "Flower: Continue" in a new folder offers a new run; "New run…" is clicked',
      async () => {
        await palette('Flower: Continue');
        const offer = toast('Start a new run?');
        await offer.waitFor({ timeout: 60_000 });
        await offer.locator('.monaco-button', { hasText: 'New run' }).click();
      },
    ],
    [
      'the request is asked for in a quick pick, typed and entered',
      async () => {
        const input = page.locator('.quick-input-widget input');
        await page.locator('.quick-input-widget', { hasText: 'Flower asks' }).waitFor({ timeout: 30_000 });
        await input.pressSequentially(REQUEST, { delay: 5 });
        await page
          .locator('.quick-input-list .monaco-list-row', { hasText: 'your answer' })
          .waitFor({ timeout: 5_000 });
        await page.keyboard.press('Enter');
      },
    ],
    [
      "the agent's question appears as a quick pick and is answered by keyboard",
      async () => {
        const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'hello, flower' });
        await row.waitFor({ timeout: 120_000 });
        await picture('vscode-question.png');
        await page.keyboard.press('ArrowDown'); // "hello, flower"
        await page.keyboard.press('ArrowUp'); // back to "hello": the scripted brief expects it
        await page.keyboard.press('Enter');
        await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 });
      },
    ],
    [
      'the status bar shows the context meter while the run works',
      async () => {
        await meter.waitFor({ timeout: 120_000 });
      },
    ],
    [
      'the run finishes (Flower: Show State says it is not running)',
      async () => {
        const end = Date.now() + 180_000;
        for (;;) {
          if (fs.existsSync(path.join(vs.ws, 'README.md'))) {
            await palette('Flower: Show State');
            const editor = page.locator('.editor-instance .view-lines').first();
            await editor.waitFor({ timeout: 15_000 });
            // biome-ignore lint/performance/useDomNodeTextContent: the lines as rendered, one per line
            const shown = await editor.innerText();
            if (/Running\*\*: no/.test(shown.replace(/\u00a0/g, ' '))) break; // Monaco renders spaces as nbsp
          }
          if (Date.now() > end) throw new Error('the run did not finish within 180 s');
          await page.waitForTimeout(2000);
        }
      },
    ],
    [
      'F1 "Flower: Open Goal" opens 目标.md',
      async () => {
        await palette('Flower: Open Goal');
        await page.locator('.tab.active', { hasText: '目标.md' }).waitFor({ timeout: 15_000 });
        await page
          .locator('.editor-instance .view-lines', { hasText: '判定清单' })
          .first()
          .waitFor({ timeout: 15_000 });
      },
    ],
    [
      'F1 "Flower: Continue" wakes the run: the banner notification and the meter',
      async () => {
        await palette('Flower: Continue');
        const banner = toast('接上上次');
        await banner.waitFor({ timeout: 60_000 });
        await meter.waitFor({ timeout: 60_000 });
        await picture('vscode-banner.png');
      },
    ],
  ];
  try {
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await context.close();
    await vs.stop();
  }
}

// -- main --------------------------------------------------------------------------------------

async function main() {
  if ((KINDS.includes('host') || KINDS.includes('ui')) && !(CODE_SERVER && PLAYWRIGHT)) {
    throw new Error('FLOWER_CODE_SERVER and FLOWER_PLAYWRIGHT_CORE are not set: run scripts/test-vscode.sh');
  }
  const kinds = { unit: runUnit, host: runHost, ui: runUi };
  for (const kind of KINDS) {
    const started = Date.now();
    say(`== ${kind}`);
    try {
      await kinds[kind]();
    } catch (err) {
      record(kind, `the ${kind} tests run`, false, Date.now() - started, err?.stack ?? String(err));
    }
  }
}

let code = 1;
try {
  await main();
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  if (!KEEP && failed === 0) fs.rmSync(root, { recursive: true, force: true });
  else say(`logs kept in ${root}`);
  say(`vscode tests took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  say(`${passed} passed, ${failed} failed`);
  code = failed === 0 && passed > 0 ? 0 : 1;
}
process.exit(code);
