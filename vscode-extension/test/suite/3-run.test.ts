// A whole run from the editor: the real server, engine and Claude Code CLI, with flower.sim's
// starter scenario as the model (one clarifying question; the judge rejects round 1 because
// README.md is missing, then accepts round 2; a later Continue wakes the finished run).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { EventParams } from '../../src/protocol';
import { flower, pickAnswer, waitFor, workspaceFolder } from './helpers';

const REQUEST = '写一个 hello.py,运行时打印问候语';
const RUN_TIMEOUT = 240_000;

function runEnded(events: EventParams[], from: number): EventParams | undefined {
  return events
    .slice(from)
    .find((e) => e.kind === 'run' && ['finished', 'failed', 'stopped'].includes(String(e.payload?.phase)));
}

suite('a run from the editor', () => {
  const events: EventParams[] = [];
  const meterTexts: string[] = [];
  const goalDiagnostics: number[] = [];
  const disposables: vscode.Disposable[] = [];
  let brief = '';
  let goal = '';

  suiteSetup(async () => {
    const api = await flower();
    ({ brief, goal } = await api.server.state());
    disposables.push(
      api.server.onEvent((e) => events.push(e)),
      api.meter.onDidChange((text) => meterTexts.push(text)),
      vscode.languages.onDidChangeDiagnostics((e) => {
        for (const uri of e.uris)
          if (uri.fsPath === goal) goalDiagnostics.push(vscode.languages.getDiagnostics(uri).length);
      }),
    );
  });
  suiteTeardown(() => {
    for (const d of disposables) d.dispose();
  });

  test('Flower: New Run goes through clarify (answered in the quick pick), goal and work', async function () {
    this.timeout(RUN_TIMEOUT + 30_000);
    const api = await flower();
    const from = events.length;
    await vscode.commands.executeCommand('flower.newRun', REQUEST);

    const question = await waitFor('the clarifying question', () => api.questions.current, 120_000);
    assert.equal(question.question, 'hello.py 要打印什么?');
    assert.deepEqual(question.options, ['hello', 'hello, flower']);
    await pickAnswer(api, 'hello');

    const end = await waitFor('the run to end', () => runEnded(events, from), RUN_TIMEOUT, 250);
    assert.equal(end.payload.phase, 'finished', `run ended: ${end.text}`);
    const ws = workspaceFolder().uri.fsPath;
    assert.ok(fs.readFileSync(brief, 'utf8').includes('hello'), 'the brief holds the answer');
    assert.ok(fs.existsSync(goal), 'the goal was written');
    assert.equal(fs.readFileSync(path.join(ws, 'hello.py'), 'utf8'), 'print("hello")\n');
    assert.ok(fs.existsSync(path.join(ws, 'README.md')), 'round 2 added README.md');
  });

  test("the status bar meter's text changed as the context grew", () => {
    const meters = meterTexts.filter((t) => /^Flower [\d.]+[KM]? \/ [\d.]+[KM]?/.test(t));
    assert.ok(new Set(meters).size >= 2, `meter texts seen: ${JSON.stringify(meterTexts)}`);
  });

  test('diagnostics appeared on 目标.md after the rejection and cleared after the acceptance', () => {
    assert.ok(
      goalDiagnostics.some((n) => n > 0),
      `diagnostic counts seen: ${JSON.stringify(goalDiagnostics)}`,
    );
    assert.equal(vscode.languages.getDiagnostics(vscode.Uri.file(goal)).length, 0);
  });

  test('Flower: Continue wakes the finished run with the banner', async function () {
    this.timeout(RUN_TIMEOUT);
    const api = await flower();
    const banners: string[] = [];
    const sub = api.server.onBanner((b) => banners.push(b.text));
    const from = events.length;
    try {
      await vscode.commands.executeCommand('flower.continue');
      await waitFor('the resume banner', () => banners.length > 0, 60_000);
      assert.ok(banners[0].length > 0);
      const end = await waitFor('the woken run to end', () => runEnded(events, from), RUN_TIMEOUT, 250);
      assert.equal(end.payload.phase, 'finished', `run ended: ${end.text}`);
    } finally {
      sub.dispose();
    }
  });
});

suite('progress', () => {
  test("the running step's progress has Cancel, and Cancel stops the run", async function () {
    this.timeout(90_000);
    const api = await flower();
    const events: EventParams[] = [];
    const sub = api.server.onEvent((e) => events.push(e));
    try {
      // The starter scenario is used up by now: this run only has to live long enough to be cancelled.
      await vscode.commands.executeCommand('flower.newRun', '再写一个 bye.py');
      await waitFor('a progress notification', () => (api.server.progress?.active ?? 0) > 0, 30_000, 50);
      assert.ok(api.server.progress, 'the progress feature is registered');
      api.server.progress.cancelAll(); // what the notification's Cancel button does
      const end = await waitFor('the run to end', () => runEnded(events, 0), 60_000, 100);
      assert.equal(end.payload.phase, 'stopped', `run ended: ${end.text}`);
      await waitFor('the progress to close', () => api.server.progress?.active === 0, 10_000);
    } finally {
      sub.dispose();
    }
  });
});
