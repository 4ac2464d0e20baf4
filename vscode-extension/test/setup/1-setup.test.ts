// A first run with no flower anywhere: no flower.python, and the python3 first on the PATH has
// no flower. The workspace holds flower_lsp/ and flower/ packages that would append to
// $FLOWER_TEST_MARKER if anything imported them. The notification's buttons are pressed with
// VS Code's own "accept the primary action" command, as a keyboard user would.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import * as vscode from 'vscode';
import type { FlowerApi } from '../../src/extension';
import type { EventParams } from '../../src/protocol';
import { CHOOSE, INSTALL, type Notice, RETRY, SHOW_HOW, SHOW_LOG, UPDATE } from '../../src/setup';
import { activated, pickAnswer, waitFor, workspaceFolder } from '../suite/helpers';

const MARKER = process.env.FLOWER_TEST_MARKER ?? '';
const OLD_WHEEL = process.env.FLOWER_TEST_OLD_WHEEL ?? '';
const INSTALL_TIMEOUT = 240_000;

/** Presses the first button of the newest notification. */
async function pressFirstButton(): Promise<void> {
  await vscode.commands.executeCommand('notification.acceptPrimaryAction');
}

function noticeOf(api: FlowerApi, kind: Notice['kind'], after: number): Notice | undefined {
  return api.setup.shown.slice(after).find((n) => n.kind === kind);
}

function assertWorkspaceCodeNeverRan(): void {
  assert.ok(MARKER, 'FLOWER_TEST_MARKER is set');
  assert.ok(
    !fs.existsSync(MARKER),
    `the workspace's own flower ran: ${fs.existsSync(MARKER) ? fs.readFileSync(MARKER, 'utf8') : ''}`,
  );
}

/** The flower version the managed environment's pip installed, and from where. */
function installedFlower(api: FlowerApi): { version: string; url: string } {
  const site = path.join(api.setup.env.dir, 'lib');
  const [pyDir] = fs.readdirSync(site);
  const dist = path.join(site, pyDir, 'site-packages');
  const info = fs.readdirSync(dist).find((d) => /^flower_agents-.*\.dist-info$/.test(d));
  assert.ok(info, `a flower_agents dist-info in ${dist}`);
  const version = info.slice('flower_agents-'.length, -'.dist-info'.length);
  const direct = JSON.parse(fs.readFileSync(path.join(dist, info, 'direct_url.json'), 'utf8'));
  return { version, url: direct.url };
}

suite('setting flower up where there is none', () => {
  test('activation shows one offer with three choices, and starts no server', async () => {
    assert.ok(vscode.workspace.isTrusted, 'this run trusts its folder');
    const api = await activated();
    const offer = await waitFor('the offer', () => api.setup.notice, 60_000);
    assert.equal(offer.kind, 'missing');
    assert.deepEqual(offer.actions, [INSTALL, CHOOSE, SHOW_HOW]);
    assert.match(
      offer.text,
      /^Flower: no Python here has flower \d+\.\d+\.\d+: python3 \(the default\) cannot import flower's server \(ModuleNotFoundError: No module named 'flower(_lsp)?'\)\.$/,
    );
    assert.equal(api.server.running, false);
    assert.match(api.server.problem ?? '', /^Flower: no Python can run flower /);
    // Starting again while the offer is open shows no second one.
    await api.server.start();
    assert.equal(api.setup.shown.length, 1, JSON.stringify(api.setup.shown));
    assert.ok(!fs.existsSync(api.setup.env.dir), 'no environment before the user says so');
    assertWorkspaceCodeNeverRan();
  });

  test('an install without a reachable package index says what failed and leaves nothing behind', async function () {
    this.timeout(INSTALL_TIMEOUT);
    const api = await activated();
    const before = api.setup.shown.length;
    // Offline as far as pip can tell: its only index is a loopback port nobody listens on.
    const closed = await closedPort();
    const saved = { ...process.env };
    Object.assign(process.env, {
      PIP_CONFIG_FILE: '/dev/null',
      PIP_INDEX_URL: `http://127.0.0.1:${closed}/simple`,
      PIP_RETRIES: '1',
    });
    delete process.env.PIP_NO_INDEX;
    delete process.env.PIP_FIND_LINKS;
    delete process.env.PIP_EXTRA_INDEX_URL;
    try {
      await pressFirstButton(); // "Install flower into an environment managed by the extension"
      const failed = await waitFor('the failure', () => noticeOf(api, 'failed', before), INSTALL_TIMEOUT);
      assert.match(
        failed.text,
        /^Flower: installing flower \S+ into the managed environment failed: pip exited with code 1: No matching distribution found for \S+\. pip could not reach the package index \(\[Errno 111\] Connection refused\): is this machine offline, or does it need a proxy\? The Flower log has every line\.$/,
      );
      assert.deepEqual(failed.actions, [RETRY, SHOW_LOG, SHOW_HOW]);
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
    assert.ok(!fs.existsSync(api.setup.env.dir), 'the half-made environment was removed');
    assert.equal(api.server.running, false);
  });

  test('Retry creates the managed environment from the bundled wheel, and the server starts on it', async function () {
    this.timeout(INSTALL_TIMEOUT);
    const api = await activated();
    const before = api.setup.shown.length;
    const started = Date.now();
    await pressFirstButton(); // "Retry"
    await waitFor('the server on the managed environment', () => api.server.running, INSTALL_TIMEOUT, 250);
    console.log(`[setup] install and server start took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    assert.deepEqual(api.server.interpreter, { command: api.setup.env.python, source: 'managed' });
    const wheel = api.setup.env.bundledWheel();
    assert.ok(wheel, 'the extension carries the wheel');
    const installed = installedFlower(api);
    assert.equal(installed.version, api.setup.expected);
    assert.equal(installed.url, pathToFileURL(wheel).href, 'pip installed the wheel inside the extension');
    assert.equal(
      noticeOf(api, 'installed', before)?.text.startsWith(
        `Flower: flower ${api.setup.expected} is installed`,
      ),
      true,
    );
    assertWorkspaceCodeNeverRan();
  });

  test('a scripted run completes on the managed flower', async function () {
    this.timeout(300_000);
    const api = await activated();
    const events: EventParams[] = [];
    const sub = api.server.onEvent((e) => events.push(e));
    try {
      await vscode.commands.executeCommand('flower.newRun', '写一个 hello.py,运行时打印问候语');
      await waitFor('the clarifying question', () => api.questions.current, 120_000);
      await pickAnswer(api, 'hello');
      const end = await waitFor(
        'the run to end',
        () =>
          events.find(
            (e) => e.kind === 'run' && ['finished', 'failed', 'stopped'].includes(String(e.payload?.phase)),
          ),
        240_000,
        250,
      );
      assert.equal(end.payload.phase, 'finished', `run ended: ${end.text}`);
    } finally {
      sub.dispose();
    }
    const ws = workspaceFolder().uri.fsPath;
    assert.equal(fs.readFileSync(path.join(ws, 'hello.py'), 'utf8'), 'print("hello")\n');
    assertWorkspaceCodeNeverRan();
  });

  test('a managed environment with another flower is offered an update, and Update brings it in line', async function () {
    this.timeout(INSTALL_TIMEOUT);
    const api = await activated();
    assert.ok(OLD_WHEEL && fs.existsSync(OLD_WHEEL), `the older wheel is at ${OLD_WHEEL}`);
    await promisify(execFile)(api.setup.env.python, [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--no-deps',
      '--force-reinstall',
      OLD_WHEEL,
    ]);
    assert.equal(installedFlower(api).version, '0.0.1');
    const before = api.setup.shown.length;
    await vscode.commands.executeCommand('flower.restartServer');
    const offer = await waitFor('the update offer', () => noticeOf(api, 'mismatch', before), 60_000);
    assert.equal(
      offer.text,
      `Flower: the environment the extension manages has flower 0.0.1, and this extension needs ${api.setup.expected}.`,
    );
    assert.deepEqual(offer.actions, [UPDATE, CHOOSE, SHOW_HOW]);
    assert.equal(api.server.running, false, 'no server on a flower of another version');

    await pressFirstButton(); // "Update flower in the managed environment"
    await waitFor('the server after the update', () => api.server.running, INSTALL_TIMEOUT, 250);
    assert.equal(installedFlower(api).version, api.setup.expected);
    assert.equal(api.server.interpreter?.source, 'managed');
    assertWorkspaceCodeNeverRan();
  });

  test('"Show me how" names the bundled wheel and the managed folder', async () => {
    const api = await activated();
    await api.setup.showHow();
    const editor = await waitFor('the guide', () =>
      vscode.window.activeTextEditor?.document.uri.scheme === 'flower-setup'
        ? vscode.window.activeTextEditor
        : undefined,
    );
    const text = editor.document.getText();
    assert.match(text, /^# Setting up flower /);
    assert.ok(text.includes(`pipx install ${api.setup.env.bundledWheel()}`));
    assert.ok(text.includes(api.setup.env.dir));
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});

/** A loopback port that was free a moment ago and has no listener now. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}
