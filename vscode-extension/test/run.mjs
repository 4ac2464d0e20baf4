#!/usr/bin/env node
// Runs every test of the extension and prints `N passed, M failed` last:
//   dist       make dist's checks on the wheel and sdist that make vsix just built (one result
//              per check of scripts/dist.sh)
//   unit       pure helpers (node:test)
//   host       Mocha inside the extension host of a real VS Code (code-server), real language
//              server, engine and Claude Code CLI, flower.sim as the model
//   setup      the same, with no flower anywhere (no flower.python, a python3 without flower):
//              the offer, the managed environment from the bundled wheel, a run, an update;
//              a planted flower_lsp/ in the workspace must never run
//   untrusted  the same, with workspace trust on and the folder untrusted: nothing installed
//   l10n       VS Code set to each display language the extension speaks (zh-cn, en): the
//              in-host suite of test/l10n/, then the packaged .vsix's offer and palette as seen
//              by a person
//   ui         headless Chromium driving that VS Code as a person would, with the packaged .vsix;
//              its screenshots stay with the run's logs, and replace docs/*.png only with --screenshots
// Every in-host suite file gets a VS Code, a workspace and a flower.sim of its own, so no suite
// depends on another's order or leftovers.
// Expects the toolchain's environment (scripts/test-vscode.sh sets it up):
//   FLOWER_CODE_SERVER, FLOWER_PLAYWRIGHT_CORE, FLOWER_CHROMIUM, FLOWER_PYTHON (default .venv),
//   FLOWER_WHEELHOUSE (the wheel's dependencies, so that installs need no network).
// Usage: node test/run.mjs [--only dist,unit,host,setup,untrusted,l10n,ui] [--file NAME.test.js] [--walk NAME] [--keep] [--verbose] [--screenshots]
// (--file: of the in-host suites, only that file; --walk: of the UI walks, only that one:
// main, first-run, history, rewind, evidence, fleet)
import { spawn, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import * as readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { format, promisify } from 'node:util';

const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.dirname(EXT);
const PYTHON = process.env.FLOWER_PYTHON || path.join(REPO, '.venv/bin/python');
const CODE_SERVER = process.env.FLOWER_CODE_SERVER;
const PLAYWRIGHT = process.env.FLOWER_PLAYWRIGHT_CORE;
const CHROMIUM = process.env.FLOWER_CHROMIUM || '/usr/bin/chromium';
const VERSION = JSON.parse(fs.readFileSync(path.join(EXT, 'package.json'), 'utf8')).version;
const VSIX = path.join(REPO, `dist/flower-${VERSION}.vsix`);
const WHEELHOUSE = process.env.FLOWER_WHEELHOUSE;
const DOCS = path.join(REPO, 'docs');
const REQUEST = '写一个 hello.py,运行时打印问候语';
// VS Code's display languages the extension has strings for (l10n/, package.nls*.json).
const LOCALES = ['zh-cn', 'en'];

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const onlyArg = argv.find((_, i) => argv[i - 1] === '--only');
const KINDS = (onlyArg ?? 'dist,unit,host,setup,untrusted,l10n,ui').split(',');
const FILE = argv.find((_, i) => argv[i - 1] === '--file');
const WALK = argv.find((_, i) => argv[i - 1] === '--walk');
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
async function startSim(dir, scenario = 'starter') {
  const proc = startGroup(
    PYTHON,
    [
      '-m',
      'flower.sim',
      'serve',
      '--scenario',
      scenario,
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

/**
 * One code-server with isolated XDG folders, user data, extensions and a sim of its own.
 * `flowerPython: false` leaves flower.python unset; `trust: true` turns workspace trust on (the
 * folder is then untrusted); `locale` is VS Code's display language, set where "Configure
 * Display Language" puts it (argv.json in the user data); `env` adds to the environment;
 * `prepare(ws)` fills the workspace.
 */
async function startVSCode(
  name,
  {
    vscodeOptions = [],
    install,
    flowerPython = true,
    trust = false,
    locale,
    env: extraEnv = {},
    prepare,
    scenario,
  } = {},
) {
  const dir = path.join(root, name);
  const ws = path.join(dir, 'workspace');
  for (const d of ['xdg-config', 'xdg-data', 'xdg-cache', 'user-data/User', 'extensions', 'workspace'])
    fs.mkdirSync(path.join(dir, d), { recursive: true });
  const settings = { ...USER_SETTINGS, ...(flowerPython ? { 'flower.python': PYTHON } : {}) };
  if (trust)
    Object.assign(settings, {
      'security.workspace.trust.enabled': true,
      'security.workspace.trust.startupPrompt': 'never',
      'security.workspace.trust.emptyWindow': false,
    });
  fs.writeFileSync(path.join(dir, 'user-data/User/settings.json'), JSON.stringify(settings, null, 2));
  if (locale) fs.writeFileSync(path.join(dir, 'user-data/User/argv.json'), JSON.stringify({ locale }));
  await prepare?.(ws);
  const port = await freePort();
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);

  const sim = await startSim(dir, scenario);
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
  const pack = locale ? await displayLanguage(locale) : undefined;
  for (const vsix of [install, pack?.vsix].filter(Boolean)) {
    const { stdout } = await promisify(execFile)(CODE_SERVER, [...common, '--install-extension', vsix], {
      env,
    });
    if (VERBOSE) say(indent(stdout.trim(), `  [${name}] `));
  }
  if (pack) pack.register(path.join(dir, 'user-data'), path.join(dir, 'extensions'));
  const args = [
    '--config',
    config,
    ...common,
    '--disable-telemetry',
    '--disable-update-check',
    ...(trust ? [] : ['--disable-workspace-trust']),
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

/**
 * What makes `locale` selectable as VS Code's display language: English is built in; any other
 * needs a language pack installed, or VS Code falls back to English (vscode.env.language too).
 * The tests fetch nothing from a marketplace, so this packs one that only declares the language
 * (VS Code's own words stay English; the extension's l10n bundles are what is tested).
 */
const languagePacks = new Map();
function displayLanguage(locale) {
  if (locale === 'en') return undefined;
  if (!languagePacks.has(locale))
    languagePacks.set(
      locale,
      (async () => {
        const dir = path.join(root, `language-pack-${locale}`);
        fs.mkdirSync(path.join(dir, 'translations'), { recursive: true });
        const manifest = {
          name: `test-language-pack-${locale}`,
          publisher: 'flower-tests',
          version: '1.0.0',
          engines: { vscode: '^1.91.0' },
          categories: ['Language Packs'],
          contributes: {
            localizations: [
              {
                languageId: locale,
                languageName: locale,
                translations: [{ id: 'vscode', path: './translations/main.i18n.json' }],
              },
            ],
          },
        };
        fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
        fs.writeFileSync(path.join(dir, 'README.md'), `Declares ${locale} as a display language.\n`);
        fs.writeFileSync(
          path.join(dir, 'translations/main.i18n.json'),
          JSON.stringify({ version: '1.0.0', contents: {} }),
        );
        const vsix = path.join(root, `language-pack-${locale}.vsix`);
        await promisify(execFile)(
          path.join(EXT, 'node_modules/.bin/vsce'),
          ['package', '--allow-missing-repository', '--skip-license', '--out', vsix],
          { cwd: dir },
        );
        // VS Code lists the installed packs in languagepacks.json when it installs one itself;
        // code-server's --install-extension does not, so write the entry VS Code would.
        const id = `${manifest.publisher}.${manifest.name}`;
        const register = (userData, extensions) => {
          const folder = path.join(extensions, `${id}-${manifest.version}`);
          if (!fs.existsSync(folder)) throw new Error(`the language pack is not installed in ${folder}`);
          const hash = createHash('md5').update(id).update(manifest.version).digest('hex');
          const entry = {
            hash,
            extensions: [{ extensionIdentifier: { id }, version: manifest.version }],
            translations: { vscode: path.join(folder, 'translations/main.i18n.json') },
            label: locale,
          };
          fs.writeFileSync(path.join(userData, 'languagepacks.json'), JSON.stringify({ [locale]: entry }));
        };
        return { vsix, register };
      })(),
    );
  return languagePacks.get(locale);
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

// -- dist ----------------------------------------------------------------------------------

/** make dist's checks, on the artifacts make vsix built: one result per "[dist] ok/FAIL" line. */
async function runDist() {
  const env = { ...process.env, ...(WHEELHOUSE ? { FLOWER_WHEELHOUSE: WHEELHOUSE } : {}) };
  const child = spawn('bash', [path.join(REPO, 'scripts/dist.sh'), '--check-only'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let last = Date.now();
  let failing; // the FAIL line's title, while its indented output follows
  let detail = [];
  const flush = () => {
    if (failing) record('dist', failing, false, Date.now() - last, detail.join('\n'));
    failing = undefined;
    detail = [];
  };
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    const lines = buf.split('\n');
    buf = lines.pop();
    for (const line of lines) {
      const m = /^\[dist\] (ok|FAIL): (.*)$/.exec(line);
      if (m?.[1] === 'ok') {
        record('dist', m[2], true, Date.now() - last);
        last = Date.now();
      } else if (m) {
        flush();
        failing = m[2];
      } else if (failing) detail.push(line);
    }
  });
  child.stderr.on('data', (d) => VERBOSE && process.stdout.write(indent(String(d), '  [dist] ')));
  const [code] = await once(child, 'close');
  flush();
  if (code !== 0 && !results.some((r) => r.kind === 'dist' && !r.ok))
    record('dist', 'scripts/dist.sh --check-only', false, Date.now() - last, `exit code ${code}`);
}

// -- in-host -----------------------------------------------------------------------------------

/** Each Mocha suite file of out/test/<suites>/, inside the extension host of a code-server of its own. */
async function runInHost(kind, suites, options = {}) {
  const files = fs
    .readdirSync(path.join(EXT, 'out/test', suites))
    .filter((f) => f.endsWith('.test.js') && (!FILE || f === FILE))
    .sort();
  if (files.length === 0) throw new Error(`no in-host suites in out/test/${suites}: build the tests first`);
  for (const file of files) await runInHostFile(kind, suites, file, options);
}

// The scenario flower.sim plays for a suite file, when it is not the starter run.
const SUITE_SCENARIOS = { 'history.test.js': 'history' };

async function runInHostFile(kind, suites, file, options) {
  const started = Date.now();
  const vs = await startVSCode(`${kind}-${path.basename(file, '.test.js')}`, {
    scenario: SUITE_SCENARIOS[file],
    ...options,
    env: { ...options.env, FLOWER_TEST_FILE: file },
    vscodeOptions: ['enable-smoke-test-driver'],
  });
  const authority = `127.0.0.1:${vs.port}`;
  const payload = [
    ['extensionDevelopmentPath', `vscode-remote://${authority}${EXT}`],
    ['extensionTestsPath', `vscode-remote://${authority}${EXT}/out/test/${suites}/index.js`],
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
    if (VERBOSE) say(indent(text, `  [${kind}] `));
  });
  await page.exposeFunction('codeAutomationExit', (code) => exit(code));
  await page.goto(url);
  const limit = Number(process.env.FLOWER_HOST_TIMEOUT_S || 420) * 1000;
  const code = await Promise.race([exited, sleep(limit).then(() => 'timeout')]);
  await context.close();
  await vs.stop();
  const resultsFile = vs.env.FLOWER_TEST_RESULTS;
  const outcomes = fs.existsSync(resultsFile) ? JSON.parse(fs.readFileSync(resultsFile, 'utf8')) : [];
  for (const o of outcomes) record(kind, o.title, o.ok, o.ms, o.error);
  if (code === 'timeout' || outcomes.length === 0 || (code !== 0 && outcomes.every((o) => o.ok))) {
    const why =
      code === 'timeout'
        ? `no exit after ${limit / 1000} s`
        : `exit code ${code}, ${outcomes.length} results`;
    record(
      kind,
      `the ${kind} suite ${file} completes`,
      false,
      Date.now() - started,
      `${why}; logs: ${vs.dir}`,
    );
  }
}

/** flower configured in flower.python; python3 on the PATH, the one a bad setting falls back to, has none. */
async function runHost() {
  const bare = await barePython('host');
  await runInHost('host', 'suite', {
    env: { PATH: `${path.dirname(bare)}${path.delimiter}${process.env.PATH}`, FLOWER_TEST_BARE_PYTHON: bare },
  });
}

/** A venv of its own without flower (nor pip); returns its python3. */
async function barePython(kind) {
  const venv = path.join(root, `${kind}-python`, 'venv');
  await promisify(execFile)(PYTHON, ['-m', 'venv', '--without-pip', venv]);
  return path.join(venv, 'bin', 'python3');
}

/**
 * A workspace whose flower_lsp/ and flower/ packages would append to `marker` when imported, and
 * a python3 (first on the PATH) without flower: no flower anywhere but what the extension sets up.
 */
async function noFlowerAnywhere(kind) {
  const python3 = await barePython(kind);
  const marker = path.join(root, kind, 'shadow-marker.txt');
  const plant = (ws) => {
    for (const pkg of ['flower_lsp', 'flower']) {
      const code = `open(${JSON.stringify(marker)}, "a").write(${JSON.stringify(`${pkg} ran from the workspace\n`)})\n`;
      fs.mkdirSync(path.join(ws, pkg), { recursive: true });
      fs.writeFileSync(path.join(ws, pkg, '__init__.py'), code);
      fs.writeFileSync(path.join(ws, pkg, '__main__.py'), code);
    }
  };
  const env = {
    PATH: `${path.dirname(python3)}${path.delimiter}${process.env.PATH}`,
    FLOWER_TEST_MARKER: marker,
    // pip in the managed environment takes the wheel's dependencies from the wheelhouse only.
    ...(WHEELHOUSE ? { PIP_NO_INDEX: '1', PIP_FIND_LINKS: WHEELHOUSE } : {}),
  };
  return { flowerPython: false, env, prepare: plant, python3 };
}

/** The same wheel as make dist's, but an older version: a managed flower to be updated. */
async function buildOlderWheel(version) {
  const src = path.join(root, `flower-${version}`);
  for (const part of ['pyproject.toml', 'README.md', 'LICENSE', 'engine', 'server', 'plugin'])
    fs.cpSync(path.join(REPO, part), path.join(src, part), {
      recursive: true,
      filter: (f) => !f.includes('__pycache__'),
    });
  const init = path.join(src, 'engine/flower/__init__.py');
  fs.writeFileSync(
    init,
    fs.readFileSync(init, 'utf8').replace(/^__version__ = ".*"$/m, `__version__ = "${version}"`),
  );
  const out = path.join(root, 'wheels');
  await promisify(execFile)(PYTHON, [
    '-m',
    'pip',
    'wheel',
    '--quiet',
    '--no-deps',
    '--no-build-isolation',
    '--wheel-dir',
    out,
    src,
  ]);
  return path.join(out, `flower_agents-${version}-py3-none-any.whl`);
}

async function runSetup() {
  const options = await noFlowerAnywhere('setup');
  options.env.FLOWER_TEST_OLD_WHEEL = await buildOlderWheel('0.0.1');
  await runInHost('setup', 'setup', options);
}

/**
 * VS Code in each display language the extension speaks: the in-host suite with flower
 * configured, then the packaged .vsix as a person meets it there (runL10nUi).
 */
async function runL10n() {
  for (const locale of LOCALES) {
    await runInHost(`l10n-${locale}`, 'l10n', { locale, env: { FLOWER_TEST_LOCALE: locale } });
    await runL10nUi(locale);
  }
}

// What a person reads of the extension's own words in each language: the setup's offer (a
// notification and its buttons) and a command title in the palette.
const L10N_UI = {
  'zh-cn': {
    offer: 'Flower:这里没有装有 flower',
    buttons: ['把 flower 安装到扩展托管的环境', '选择解释器', '告诉我怎么做'],
    command: 'Flower: 显示状态',
  },
  en: {
    offer: 'Flower: no Python here has flower',
    buttons: [
      'Install flower into an environment managed by the extension',
      'Choose an interpreter',
      'Show me how',
    ],
    command: 'Flower: Show State',
  },
};

/** The packaged .vsix in VS Code set to `locale`, in a folder with a run and no flower anywhere. */
async function runL10nUi(locale) {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  const kind = `l10n-${locale}`;
  const words = L10N_UI[locale];
  const options = await noFlowerAnywhere(`${kind}-ui`);
  const { python3, prepare, ...rest } = options;
  const vs = await startVSCode(`${kind}-ui`, {
    ...rest,
    locale,
    install: VSIX,
    prepare: (ws) => {
      prepare(ws);
      fs.mkdirSync(path.join(ws, '.flower/notes'), { recursive: true });
      fs.writeFileSync(path.join(ws, '.flower/notes/需求.md'), '# 需求\n\n写一个 hello.py\n');
    },
  });
  const { page, step, palette, toast, open, close } = await uiSession(kind, vs);
  try {
    // each step needs the one before it: the first failure ends the walk
    const steps = [
      [
        `opening a folder with a run and no flower shows the offer in ${locale}, with its buttons`,
        async () => {
          await open();
          const offer = toast(words.offer);
          await offer.waitFor({ timeout: 60_000 });
          for (const label of words.buttons)
            await offer.locator('.monaco-button', { hasText: label }).waitFor({ timeout: 5_000 });
          await page.waitForTimeout(700); // toasts fade in
          await page.screenshot({ path: path.join(vs.dir, 'offer.png') });
        },
      ],
      [`F1 lists "${words.command}"`, () => palette(words.command, { key: 'Escape' })],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
  }
}

async function runUntrusted() {
  await runInHost('untrusted', 'untrusted', { ...(await noFlowerAnywhere('untrusted')), trust: true });
}

// -- UI ----------------------------------------------------------------------------------------

/** Fill `input` with `value` and retype while something else rewrites it (10 s at most). */
async function expectValue(input, value) {
  const end = Date.now() + 10_000;
  for (;;) {
    await input.fill(value);
    await input.page().waitForTimeout(300);
    if ((await input.inputValue()) === value) return;
    if (Date.now() > end) throw new Error(`the field kept being rewritten: ${await input.inputValue()}`);
  }
}

/** A browser page on `vs` with the person-like helpers the UI tests share. */
async function uiSession(kind, vs) {
  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const step = async (title, fn) => {
    const started = Date.now();
    try {
      await fn();
      record(kind, title, true, Date.now() - started);
      return true;
    } catch (err) {
      const shot = path.join(vs.dir, `failed-${results.length}.png`);
      await page.screenshot({ path: shot }).catch(() => undefined);
      record(kind, title, false, Date.now() - started, `${err?.stack ?? err}\nscreenshot: ${shot}`);
      return false;
    }
  };
  // F1, type the title, Enter (or, with `key: 'Escape'`, only see it listed and close the
  // palette). Right after the workbench shows, installed extensions' commands may not be listed
  // yet: like a person, close the palette and try again.
  const palette = async (title, { key = 'Enter' } = {}) => {
    const end = Date.now() + 30_000;
    for (;;) {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(`>${title}`);
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
      try {
        await row.waitFor({ timeout: 2_000 });
        await page.keyboard.press(key);
        return;
      } catch (err) {
        await page.keyboard.press('Escape');
        if (Date.now() > end) throw err;
        await page.waitForTimeout(500);
      }
    }
  };
  const toast = (text) => page.locator('.notification-toast', { hasText: text }).first();
  const open = async () => {
    await page.goto(`${vs.base}/?folder=${encodeURIComponent(vs.ws)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    await page.locator('.statusbar').waitFor({ timeout: 30_000 });
  };
  return { page, step, palette, toast, open, close: () => context.close() };
}

async function runUi() {
  const walks = {
    main: runUiMain,
    'first-run': runUiFirstRun,
    history: runUiHistory,
    rewind: runUiRewind,
    evidence: runUiEvidence,
    fleet: runUiFleet,
  };
  if (WALK && !(WALK in walks)) throw new Error(`no UI walk ${WALK}: ${Object.keys(walks).join(', ')}`);
  for (const [name, walk] of Object.entries(walks)) if (!WALK || WALK === name) await walk();
}

/** The first run as a person does it: the offer, the request, the question, the meter, a Continue. */
async function runUiMain() {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  const vs = await startVSCode('ui', { install: VSIX });
  const { page, step, palette, toast, open, close } = await uiSession('ui', vs);
  const picture = async (name) => {
    await page.mouse.move(640, 500); // no hover tooltip in the picture
    await page.waitForTimeout(700); // toasts fade in
    const dir = SCREENSHOTS ? DOCS : vs.dir;
    fs.mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, name) });
  };
  const meter = page.locator('.statusbar-item', { hasText: /^Flower [\d.]+[KM]? \/ [\d.]+[KM]?/ }).first();

  try {
    // each step needs the one before it: the first failure ends the walk
    const steps = [
      ['the workbench opens the folder', open],
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
              // Read this answer, not the page an earlier look left open: close it first, or
              // the answer still on its way opens over the next palette and closes it.
              const editor = page.locator('.editor-instance .view-lines').first();
              if (await editor.isVisible()) {
                await palette('View: Close All Editors');
                await editor.waitFor({ state: 'hidden', timeout: 15_000 });
              }
              await palette('Flower: Show State');
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
        'a hover on a checklist line of 目标.md says how the last verdict judged it and what backs it',
        async () => {
          // the pointer on the check's own text (past the end of a line Monaco hovers nothing)
          await page
            .locator('.editor-instance .view-line span span', { hasText: 'README.md' })
            .first()
            .hover();
          const hover = page.locator('.monaco-hover', { hasText: 'judge round' }).first();
          await hover.waitFor({ timeout: 30_000 });
          // biome-ignore lint/performance/useDomNodeTextContent: the lines as rendered, one per line
          const said = (await hover.innerText()).replace(/\u00a0/g, ' ');
          for (const want of ['judge round 2: passed', 'read README.md'])
            if (!said.includes(want)) throw new Error(`the hover has no "${want}":\n${said}`);
          await page.keyboard.press('Escape');
          await hover.waitFor({ state: 'hidden', timeout: 10_000 });
        },
      ],
      [
        'F1 "Flower: Continue" wakes the run: the banner notification and the meter',
        async () => {
          await palette('Flower: Continue');
          // code-server runs in English here: the server's banner speaks it too
          const banner = toast('where it stopped');
          await banner.waitFor({ timeout: 60_000 });
          await meter.waitFor({ timeout: 60_000 });
          await picture('vscode-banner.png');
        },
      ],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
  }
}

/**
 * A folder whose 20-round run (a handoff at round 15, under a 200K window) the `flower` command
 * did in a terminal: the real CLI against flower.sim's "twenty-rounds" scenario, its questions
 * answered on stdin. Returns what the engine reads back from it, for the checks.
 */
async function runTwentyRounds(ws, dir, env) {
  await runInTerminal(ws, dir, env, 'twenty-rounds', ['--rounds', '20']);
  const read =
    'import json, sys\n' +
    'from flower.workflow.history import read_history\n' +
    'h = read_history(sys.argv[1])\n' +
    'print(json.dumps({"turns": len(h.turns), "marks": len(h.marks), "rounds": sum(len(s.rounds) for w in h.wakes for s in w.steps if s.name == "干活"), "handoffs": [r.number for w in h.wakes for s in w.steps for r in s.rounds if r.handoffs]}))';
  const { stdout } = await promisify(execFile)(PYTHON, ['-c', read, ws], { env: { ...process.env, ...env } });
  return JSON.parse(stdout);
}

/** `flower go` in a terminal in `ws`, against flower.sim's `scenario`, its questions answered "1";
 * it must exit with `code` (1: the run ended short of its goal). */
async function runInTerminal(ws, dir, env, scenario, flags = [], code = 0) {
  const sim = await startSim(dir, scenario);
  try {
    const { env: cliEnv, remove } = await simEnv(sim.url, dir);
    const childEnv = { ...process.env, ...cliEnv, ...env };
    for (const v of remove) if (!(v in env)) delete childEnv[v];
    const child = spawn(PYTHON, ['-m', 'flower', 'go', '写一个 hello.py', ...flags, '-r', 'runs'], {
      cwd: ws,
      env: childEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const log = fs.createWriteStream(path.join(dir, 'flower-go.log'));
    let buf = '';
    child.stdout.on('data', (d) => {
      log.write(d);
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop();
      // a question is printed as "  ? <question>" with numbered options: take the first
      for (const line of lines) if (/^\s+\? /.test(line)) child.stdin.write('1\n');
    });
    child.stderr.on('data', (d) => log.write(d));
    const [exited] = await once(child, 'exit');
    log.end();
    if (exited !== code)
      throw new Error(`flower go exited with ${exited}, not ${code} (see ${dir}/flower-go.log)`);
  } finally {
    await sim.stop();
  }
}

/**
 * The judge's evidence on 目标.md, as a person finds it the morning after: a run the terminal left
 * short of its goal (one round; the judge, allowed to run commands, ran hello.py, read README.md
 * and hello.py, and failed the README check), then the editor opened on that folder.
 */
async function runUiEvidence() {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  const dir = path.join(root, 'ui-evidence');
  const vs = await startVSCode('ui-evidence', {
    install: VSIX,
    prepare: (ws) => runInTerminal(ws, dir, {}, 'judge-runs', ['--rounds', '1', '--judge-can-run'], 1),
  });
  const { page, step, palette, open, close } = await uiSession('ui', vs);
  const README_CHECK = '工作区根目录有 README.md';
  const shown = async (locator) =>
    // biome-ignore lint/performance/useDomNodeTextContent: the lines as rendered, one per line
    (await locator.innerText()).replace(/\u00a0/g, ' '); // Monaco renders spaces as nbsp
  try {
    const steps = [
      ['the workbench opens the folder of a run that ended short of its goal', open],
      [
        'F1 "Flower: Open Goal" opens 目标.md with the failed check marked',
        async () => {
          await palette('Flower: Open Goal');
          await page.locator('.tab.active', { hasText: '目标.md' }).waitFor({ timeout: 15_000 });
          // the marks come from the folder's history: nothing runs in this editor
          await page.locator('.editor-instance .squiggly-warning').first().waitFor({ timeout: 60_000 });
        },
      ],
      [
        "the failed check's problem links to the file the judge read; a click opens it",
        async () => {
          await palette('View: Focus Problems (Errors, Warnings, Infos)');
          const problem = page.locator('.markers-panel .monaco-list-row', { hasText: README_CHECK }).first();
          await problem.waitFor({ timeout: 15_000 });
          const said = await shown(problem);
          if (!said.includes('Judge round 1, not passed')) throw new Error(`the problem says:\n${said}`);
          const read = page
            .locator('.markers-panel .monaco-list-row', { hasText: 'judge read lines 1' })
            .first();
          await read.waitFor({ timeout: 15_000 });
          const where = await shown(read);
          if (!where.includes('README.md')) throw new Error(`the related line is not README.md:\n${where}`);
          await read.click();
          await page.locator('.tab.active', { hasText: 'README.md' }).waitFor({ timeout: 15_000 });
        },
      ],
      [
        'a hover on the first check shows the command the judge ran and its exit code',
        async () => {
          await palette('Flower: Open Goal');
          await page.locator('.tab.active', { hasText: '目标.md' }).waitFor({ timeout: 15_000 });
          await page.locator('.editor-instance .view-line span span', { hasText: 'python3' }).first().hover();
          const hover = page.locator('.monaco-hover', { hasText: 'judge round' }).first();
          await hover.waitFor({ timeout: 30_000 });
          const said = await shown(hover);
          for (const want of ['judge round 1: passed', 'ran python3 hello.py, exit code 0', 'hello'])
            if (!said.includes(want)) throw new Error(`the hover has no "${want}":\n${said}`);
          await page.keyboard.press('Escape');
        },
      ],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
  }
}

/** The Flower view and the context chart of that 20-round run, as a person opens them. */
async function runUiHistory() {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  // a 200K window, as the run had: the server draws the window the folder's runs are configured with
  const env = { ANTHROPIC_MODEL: 'claude-haiku-4-5' };
  let story;
  const vs = await startVSCode('ui-history', {
    install: VSIX,
    env,
    prepare: async (ws) => {
      story = await runTwentyRounds(ws, path.join(root, 'ui-history'), env);
    },
  });
  const { page, step, palette, open, close } = await uiSession('ui', vs);
  const picture = async (name) => {
    // the resume banner's toast would cover the view: the pictures show what the view shows
    for (const button of await page.locator('.notification-toast .codicon-notifications-clear').all())
      await button.click().catch(() => undefined);
    await page.waitForTimeout(700); // hovers fade in
    const dir = SCREENSHOTS ? DOCS : vs.dir;
    fs.mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, name) });
  };
  const row = (text) => page.locator('.monaco-list-row', { hasText: text }).first();
  const chartFrame = () => page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
  try {
    const steps = [
      ['the workbench opens the folder of a finished 20-round run', open],
      [
        'the Flower icon in the activity bar opens the view: the wake, its steps, the 20 judged rounds',
        async () => {
          if (story.rounds !== 20 || story.handoffs.length !== 1)
            throw new Error(`the prepared run is not what the scenario scripts: ${JSON.stringify(story)}`);
          await page.locator('.activitybar .action-item a[aria-label^="Flower"]').first().click();
          await row('Wake 1').waitFor({ timeout: 60_000 });
          await row('Context growth').waitFor({ timeout: 10_000 });
          // a wider side bar, as a person reading the story would drag it
          const bar = await page.locator('.part.sidebar').boundingBox();
          if (bar) {
            await page.mouse.move(bar.x + bar.width + 1, bar.y + 300);
            await page.mouse.down();
            await page.mouse.move(bar.x + 470, bar.y + 300, { steps: 5 });
            await page.mouse.up();
          }
          await row('确认需求').click(); // its question and answer
          await row('hello.py 要打印什么?').waitFor({ timeout: 10_000 });
          await row('干活').click(); // the work, round by round
          await row('Round 20').waitFor({ timeout: 10_000 });
          await row(`Round ${story.handoffs[0]}`).click();
          await row('Handoff → generation 2').waitFor({ timeout: 10_000 });
          // a failed check opens 目标.md at its line
          await page
            .locator('.monaco-list-row', { hasText: 'README.md 写明了 Python 的最低版本' })
            .first()
            .click();
          await page.locator('.tab.active', { hasText: '目标.md' }).waitFor({ timeout: 15_000 });
          await page.mouse.move(1000, 700);
          await picture('vscode-history.png');
        },
      ],
      [
        'the chart draws every turn, its marks, the window and the threshold; a point shows its tooltip',
        async () => {
          await page.locator('a.action-label[aria-label="Show Context Chart"]').first().click();
          const frame = chartFrame();
          await frame.locator('svg.chart').waitFor({ timeout: 60_000 });
          const points = await frame.locator('svg.chart circle.point').count();
          const marks = await frame.locator('svg.chart g.mark').count();
          if (points !== story.turns || marks !== story.marks)
            throw new Error(
              `drawn ${points} points and ${marks} marks, the history has ${story.turns} and ${story.marks}`,
            );
          await frame.locator('svg.chart line.window').waitFor({ state: 'attached' });
          await frame.locator('svg.chart line.threshold').waitFor({ state: 'attached' });
          const legend = await frame.locator('#legend').textContent();
          if (!/generation 2/.test(legend ?? ''))
            throw new Error(`the legend has no second generation: ${legend}`);
          const point = frame.locator('svg.chart circle.point.c2').nth(12);
          await point.hover();
          const tip = frame.locator('#tooltip');
          await tip.waitFor({ state: 'visible', timeout: 5_000 });
          const said = (await tip.textContent()) ?? '';
          if (!/^Turn \d+ · 干活/.test(said)) throw new Error(`the tooltip says: ${said}`);
          await picture('vscode-context-chart.png');
        },
      ],
      [
        'the status-bar meter opens the chart too',
        async () => {
          await palette('View: Close All Editors');
          await page
            .locator('.tab', { hasText: 'Context ·' })
            .waitFor({ state: 'detached', timeout: 10_000 });
          await page
            .locator('.statusbar-item', { hasText: /^Flower/ })
            .first()
            .click();
          await page.locator('.tab', { hasText: 'Context ·' }).waitFor({ timeout: 15_000 });
          await chartFrame().locator('svg.chart').waitFor({ timeout: 30_000 });
        },
      ],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
  }
}

/** The files of a workspace outside flower's own folders: relative path -> contents. */
function workspaceFiles(ws) {
  const out = {};
  for (const rel of fs.readdirSync(ws, { recursive: true, encoding: 'utf8' }).sort()) {
    if (['.flower', 'runs', '.git'].includes(rel.split(path.sep)[0])) continue;
    const file = path.join(ws, rel);
    if (fs.statSync(file).isFile()) out[rel] = fs.readFileSync(file, 'utf8');
  }
  return out;
}

/**
 * Fork here and Rewind here on round 1 of a finished two-round run (the starter scenario through
 * the real CLI in a terminal: round 1 writes hello.py, round 2 README.md), as a person does them:
 * the round's context menu, the modal that lists the files, its button, the result's toast.
 */
async function runUiRewind() {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  const ROUND_1 = { 'hello.py': 'print("hello")\n' }; // what round 1 left, as the scenario scripts it
  const MINE = '我自己写的\n';
  let finished;
  const vs = await startVSCode('ui-rewind', {
    install: VSIX,
    prepare: async (ws) => {
      await runInTerminal(ws, path.join(root, 'ui-rewind'), {}, 'starter');
      finished = workspaceFiles(ws);
      fs.writeFileSync(path.join(ws, 'mine.txt'), MINE); // the person's own file, after the run
    },
  });
  const { page, step, toast, open, close } = await uiSession('ui', vs);
  const row = (text) => page.locator('.monaco-list-row', { hasText: text }).first();
  const dialog = page.locator('.monaco-dialog-box');
  /** Right-click round 1, choose `action`, see the modal ask `question` with `lines`, accept with `button`. */
  const roundAction = async (action, question, lines, button) => {
    await row('Round 1').click({ button: 'right' });
    // the pointer on the item focuses it, Enter runs it (as a person may, and as the menu takes it)
    const item = page.locator('.monaco-menu .action-item', { hasText: action }).first();
    await item.hover();
    await page.locator('.monaco-menu .action-item.focused', { hasText: action }).waitFor({ timeout: 5_000 });
    await page.keyboard.press('Enter');
    await dialog.waitFor({ timeout: 60_000 });
    // biome-ignore lint/performance/useDomNodeTextContent: the lines as rendered, one per line
    const said = (await dialog.innerText()).replace(/\u00a0/g, ' ');
    const shown = said.split('\n').map((l) => l.trim());
    for (const line of [question, ...lines].map((l) => l.trim()))
      if (!shown.some((l) => l.startsWith(line)))
        throw new Error(`the confirmation has no "${line}":\n${said}`);
    await page.waitForTimeout(300); // the modal fades in
    await page.screenshot({ path: path.join(vs.dir, `${button.toLowerCase()}-confirmation.png`) });
    await dialog.locator('.monaco-button', { hasText: new RegExp(`^${button}$`) }).click();
    await dialog.waitFor({ state: 'hidden', timeout: 10_000 });
  };
  try {
    const steps = [
      [
        'the Flower view of a finished two-round run shows its judged rounds',
        async () => {
          if (finished['hello.py'] !== ROUND_1['hello.py'] || !finished['README.md'])
            throw new Error(`the prepared run is not what the scenario scripts: ${JSON.stringify(finished)}`);
          await open();
          await page.locator('.activitybar .action-item a[aria-label^="Flower"]').first().click();
          await row('Wake 1').waitFor({ timeout: 60_000 });
          await row('干活').click();
          await row('Round 2').waitFor({ timeout: 10_000 });
        },
      ],
      [
        'Fork here on round 1: the modal names the new folder and its files; accepted, the fork is made and the folder untouched',
        async () => {
          const before = fs.readdirSync(vs.dir);
          await roundAction(
            'Fork here',
            'Fork a new run from the end of round 1?',
            [
              `New workspace: ${vs.ws}-fork-r1-`,
              'It gets the files as they were after round 1:',
              '  hello.py',
            ],
            'Fork',
          );
          await toast('Forked a new run from round 1').waitFor({ timeout: 60_000 });
          const made = fs
            .readdirSync(vs.dir)
            .filter((d) => !before.includes(d) && fs.statSync(path.join(vs.dir, d)).isDirectory());
          if (made.length !== 1 || !made[0].startsWith('workspace-fork-r1-'))
            throw new Error(`the fork made ${JSON.stringify(made)} beside the workspace`);
          const forked = workspaceFiles(path.join(vs.dir, made[0]));
          if (JSON.stringify(forked) !== JSON.stringify(ROUND_1))
            throw new Error(
              `the fork holds ${JSON.stringify(forked)}, round 1 had ${JSON.stringify(ROUND_1)}`,
            );
          if (!fs.existsSync(path.join(vs.dir, made[0], 'runs', 'lineage.json')))
            throw new Error('the fork has no run folder of its own');
          const now = workspaceFiles(vs.ws);
          if (JSON.stringify(now) !== JSON.stringify({ ...finished, 'mine.txt': MINE }))
            throw new Error(`the original changed: ${JSON.stringify(now)}`);
        },
      ],
      [
        'Rewind here on round 1: the modal lists what goes and your own file that stays; accepted, the files are round 1 again',
        async () => {
          const removed = Object.keys(finished).filter((f) => !(f in ROUND_1));
          await roundAction(
            'Rewind here',
            'Rewind to the end of round 1?',
            [
              'Removed (made after round 1):',
              ...removed.map((f) => `  ${f}`),
              'Your own edits, kept as they are:',
              '  mine.txt',
            ],
            'Rewind',
          );
          await toast("rewound to after round 1's verdict").waitFor({ timeout: 60_000 });
          const now = workspaceFiles(vs.ws);
          if (JSON.stringify(now) !== JSON.stringify({ ...ROUND_1, 'mine.txt': MINE }))
            throw new Error(`after the rewind the workspace holds ${JSON.stringify(now)}`);
        },
      ],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
  }
}

/**
 * test/fleet_rig.py: a real PostgreSQL with a fleet in it (a run waiting for an answer, a queued
 * one); `ask(line)` sends it a command and resolves to its JSON answer. Stopped at the end.
 */
async function startFleetRig(dir) {
  const child = spawn(PYTHON, [path.join(EXT, 'test', 'fleet_rig.py')], {
    stdio: ['pipe', 'pipe', fs.openSync(path.join(dir, 'fleet-rig.log'), 'w')],
  });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const line = await lines.next();
    if (line.done) throw new Error(`the fleet rig ended (see ${dir}/fleet-rig.log)`);
    return JSON.parse(line.value);
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.stdin.end();
    await exited;
  };
  cleanups.push(stop);
  const made = await next();
  const ask = async (line) => {
    child.stdin.write(`${line}\n`);
    return next();
  };
  return { made, ask, stop };
}

/** The Fleet view as a person uses it: the runs by state, Answer… on the waiting one, Cancel on the queued one. */
async function runUiFleet() {
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: package the extension first`);
  const dir = path.join(root, 'ui-fleet');
  fs.mkdirSync(dir, { recursive: true });
  const rig = await startFleetRig(dir);
  const { made } = rig;
  const vs = await startVSCode('ui-fleet', {
    install: VSIX,
    prepare: (ws) => {
      fs.mkdirSync(path.join(ws, '.vscode'), { recursive: true });
      fs.writeFileSync(path.join(ws, '.vscode/settings.json'), JSON.stringify({ 'flower.store': made.url }));
    },
  });
  const { page, step, toast, open, close } = await uiSession('ui', vs);
  const row = (text) => page.locator('.monaco-list-row', { hasText: text }).first();
  const dialog = page.locator('.monaco-dialog-box');
  /** Right-click the row of `text` and run `action` from its menu. */
  const menu = async (text, action) => {
    await row(text).click({ button: 'right' });
    const item = page.locator('.monaco-menu .action-item', { hasText: action }).first();
    await item.hover();
    await page.locator('.monaco-menu .action-item.focused', { hasText: action }).waitFor({ timeout: 5_000 });
    await page.keyboard.press('Enter');
  };
  try {
    const steps = [
      [
        'the Fleet view shows the store’s runs by state, the waiting one with its question',
        async () => {
          await open();
          await page.locator('.activitybar .action-item a[aria-label^="Flower"]').first().click();
          // the section starts folded (a folder without a store has no fleet): open it
          await page.locator('.pane-header', { hasText: 'Fleet' }).click();
          await row('Waiting for an answer (1)').waitFor({ timeout: 90_000 });
          await row(`? ${made.question}`).waitFor({ timeout: 10_000 });
          await row('Queued (1)').waitFor({ timeout: 10_000 });
          await page.screenshot({ path: path.join(vs.dir, 'fleet.png') });
        },
      ],
      [
        'Answer… on the waiting run: the input box shows its question; the answer reaches the run',
        async () => {
          await menu('写一个 hello.py', 'Answer…');
          const input = page.locator('.quick-input-widget input');
          await input.waitFor({ state: 'visible', timeout: 10_000 });
          await page.locator('.quick-input-widget', { hasText: made.question }).waitFor({ timeout: 5_000 });
          await input.fill('print hello');
          await page.keyboard.press('Enter');
          await toast(`answered run ${made.asks}'s question`).waitFor({ timeout: 60_000 });
          const shown = await rig.ask(`show ${made.asks}`);
          if (JSON.stringify(shown.questions) !== JSON.stringify([['answered', 'print hello']]))
            throw new Error(`the fleet holds ${JSON.stringify(shown)}`);
          await row('answered; its worker reads it next').waitFor({ timeout: 10_000 });
        },
      ],
      [
        'Cancel on the queued run: a modal asks; accepted, the run is cancelled',
        async () => {
          await menu('写一个 bye.py', 'Cancel');
          await dialog.waitFor({ timeout: 10_000 });
          // biome-ignore lint/performance/useDomNodeTextContent: the lines as rendered
          const said = await dialog.innerText();
          if (!said.includes(`Cancel run ${made.queued}?`)) throw new Error(`the modal says:\n${said}`);
          await dialog.locator('.monaco-button', { hasText: /^Cancel the Run$/ }).click();
          await dialog.waitFor({ state: 'hidden', timeout: 10_000 });
          await toast(`run ${made.queued} cancelled`).waitFor({ timeout: 60_000 });
          const shown = await rig.ask(`show ${made.queued}`);
          if (shown.state !== 'cancelled') throw new Error(`the fleet holds ${JSON.stringify(shown)}`);
          await row('Cancelled (1)').waitFor({ timeout: 10_000 });
        },
      ],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
    await rig.stop();
  }
}

/**
 * The packaged .vsix where there is no flower at all, as a person meets it: a folder with a run
 * activates the extension at startup; the offer's Install button is clicked.
 */
async function runUiFirstRun() {
  const options = await noFlowerAnywhere('ui-first-run');
  const prepare = options.prepare;
  options.prepare = (ws) => {
    prepare(ws);
    fs.mkdirSync(path.join(ws, '.flower/notes'), { recursive: true });
    fs.writeFileSync(path.join(ws, '.flower/notes/需求.md'), '# 需求\n\n写一个 hello.py\n');
  };
  const { python3, ...vscodeOptions } = options;
  const vs = await startVSCode('ui-first-run', { ...vscodeOptions, install: VSIX });
  const { page, step, palette, toast, open, close } = await uiSession('ui', vs);
  const managed = path.join(vs.dir, 'user-data/User/globalStorage/flower-agents.flower/env');
  try {
    // each step needs the one before it: the first failure ends the walk
    const steps = [
      [
        'with no flower anywhere, opening a folder with a run shows the offer',
        async () => {
          await open();
          const offer = toast('no Python here has flower');
          await offer.waitFor({ timeout: 60_000 });
          for (const label of [
            'Install flower into an environment managed by the extension',
            'Choose an interpreter',
            'Show me how',
          ])
            await offer.locator('.monaco-button', { hasText: label }).waitFor({ timeout: 5_000 });
          await page.waitForTimeout(700); // toasts fade in
          await page.screenshot({ path: path.join(vs.dir, 'offer.png') });
        },
      ],
      [
        '"Choose an interpreter" with a Python without flower says why it cannot',
        async () => {
          await toast('no Python here has flower')
            .locator('.monaco-button', { hasText: 'Choose an interpreter' })
            .click();
          // code-server's own file dialog: a quick input that takes a path.
          const input = page.locator('.quick-input-widget input');
          await input.waitFor({ state: 'visible', timeout: 15_000 });
          // It fills in the folder it starts from once it has listed it; type after that.
          await page.waitForFunction(
            () => document.querySelector('.quick-input-widget input')?.value.endsWith('/'),
            undefined,
            { timeout: 15_000 },
          );
          // The dialog may still write the folder it lists over what was typed: type again
          // until the field holds the path, as a person would.
          await expectValue(input, python3);
          // It follows a typed path into its folder and lists the file; Enter then takes it.
          await page
            .locator('.quick-input-list .monaco-list-row', { hasText: path.basename(python3) })
            .first()
            .waitFor({ timeout: 15_000 });
          await page.keyboard.press('Enter');
          await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 15_000 });
          await toast(`${python3} cannot import flower's server`).waitFor({ timeout: 30_000 });
        },
      ],
      [
        '"Install" there shows the progress, then says flower is installed',
        async () => {
          await toast(`${python3} cannot import flower's server`)
            .locator('.monaco-button', {
              hasText: 'Install flower into an environment managed by the extension',
            })
            .click();
          await toast('installing flower').waitFor({ timeout: 30_000 });
          await toast('is installed in the environment the extension manages').waitFor({ timeout: 240_000 });
        },
      ],
      [
        'pip installed the wheel from inside the installed .vsix',
        async () => {
          const site = path.join(
            managed,
            'lib',
            fs.readdirSync(path.join(managed, 'lib'))[0],
            'site-packages',
          );
          const info = fs.readdirSync(site).find((d) => d === `flower_agents-${VERSION}.dist-info`);
          if (!info) throw new Error(`no flower_agents-${VERSION}.dist-info in ${site}`);
          const { url } = JSON.parse(fs.readFileSync(path.join(site, info, 'direct_url.json'), 'utf8'));
          const shipped = path.join(vs.dir, 'extensions', `flower-agents.flower-${VERSION}`, 'wheels');
          if (!url.startsWith(`file://${shipped}/`))
            throw new Error(`pip installed ${url}, not a wheel in ${shipped}`);
        },
      ],
      [
        'F1 "Flower: Show State" answers from the server on the managed flower',
        async () => {
          await palette('Flower: Show State');
          await page
            .locator('.editor-instance .view-lines', { hasText: 'Flower state' })
            .first()
            .waitFor({ timeout: 30_000 });
          if (fs.existsSync(options.env.FLOWER_TEST_MARKER))
            throw new Error(
              `the workspace's flower ran: ${fs.readFileSync(options.env.FLOWER_TEST_MARKER, 'utf8')}`,
            );
        },
      ],
    ];
    for (const [title, fn] of steps) if (!(await step(title, fn))) break;
  } finally {
    await close();
    await vs.stop();
  }
}

// -- main --------------------------------------------------------------------------------------

async function main() {
  const kinds = {
    dist: runDist,
    unit: runUnit,
    host: runHost,
    setup: runSetup,
    untrusted: runUntrusted,
    l10n: runL10n,
    ui: runUi,
  };
  const unknown = KINDS.filter((k) => !(k in kinds));
  if (unknown.length) throw new Error(`unknown test kinds: ${unknown.join(', ')}`);
  if (
    KINDS.some((k) => ['host', 'setup', 'untrusted', 'l10n', 'ui'].includes(k)) &&
    !(CODE_SERVER && PLAYWRIGHT)
  ) {
    throw new Error('FLOWER_CODE_SERVER and FLOWER_PLAYWRIGHT_CORE are not set: run scripts/test-vscode.sh');
  }
  for (const kind of KINDS) {
    const started = Date.now();
    say(`== ${kind}`);
    try {
      await kinds[kind]();
    } catch (err) {
      record(kind, `the ${kind} tests run`, false, Date.now() - started, err?.stack ?? String(err));
    }
    say(`   ${kind}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
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
