// A whole run from the editor: the real server, engine and Claude Code CLI, with flower.sim's
// starter scenario as the model (one clarifying question; the judge rejects round 1 because
// README.md is missing, then accepts round 2; a later Continue wakes the finished run).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { EventParams } from '../../src/protocol';
import { flower, pickAnswer, runEnded, waitFor, workspaceFolder } from './helpers';

const REQUEST = '写一个 hello.py,运行时打印问候语';
const RUN_TIMEOUT = 240_000;

suite('a run from the editor', () => {
  test('Flower: New Run goes through clarify, goal and work; the meter follows, 目标.md shows the rejection then clears; Flower: Continue wakes it', async function () {
    this.timeout(2 * RUN_TIMEOUT + 30_000);
    const api = await flower();
    const { brief, goal } = await api.server.state();
    const events: EventParams[] = [];
    const meterTexts: string[] = [];
    const goalDiagnostics: number[] = [];
    const banners: string[] = [];
    const disposables = [
      api.server.onEvent((e) => events.push(e)),
      api.server.onBanner((b) => banners.push(b.text)),
      api.meter.onDidChange((text) => meterTexts.push(text)),
      vscode.languages.onDidChangeDiagnostics((e) => {
        for (const uri of e.uris)
          if (uri.fsPath === goal) goalDiagnostics.push(vscode.languages.getDiagnostics(uri).length);
      }),
    ];
    try {
      await vscode.commands.executeCommand('flower.newRun', REQUEST);
      const question = await waitFor('the clarifying question', () => api.questions.current, 120_000);
      assert.equal(question.question, 'hello.py 要打印什么?');
      assert.deepEqual(question.options, ['hello', 'hello, flower']);
      await pickAnswer(api, 'hello');

      const end = await waitFor('the run to end', () => runEnded(events, 0), RUN_TIMEOUT, 250);
      assert.equal(end.payload.phase, 'finished', `run ended: ${end.text}`);
      const ws = workspaceFolder().uri.fsPath;
      assert.ok(fs.readFileSync(brief, 'utf8').includes('hello'), 'the brief holds the answer');
      assert.ok(fs.existsSync(goal), 'the goal was written');
      assert.equal(fs.readFileSync(path.join(ws, 'hello.py'), 'utf8'), 'print("hello")\n');
      assert.ok(fs.existsSync(path.join(ws, 'README.md')), 'round 2 added README.md');

      const meters = meterTexts.filter((t) => /^Flower [\d.]+[KM]? \/ [\d.]+[KM]?/.test(t));
      assert.ok(
        new Set(meters).size >= 2,
        `the meter moved as the context grew: ${JSON.stringify(meterTexts)}`,
      );
      assert.ok(
        goalDiagnostics.some((n) => n > 0),
        `diagnostics after the rejection; counts seen: ${JSON.stringify(goalDiagnostics)}`,
      );
      assert.equal(vscode.languages.getDiagnostics(vscode.Uri.file(goal)).length, 0, 'cleared on acceptance');

      const woken = events.length;
      await vscode.commands.executeCommand('flower.continue');
      await waitFor('the resume banner', () => banners.length > 0, 60_000);
      // the server speaks the editor's language (initialize's locale): the seeds' words in Chinese
      const resumed = vscode.env.language.startsWith('zh') ? '接上上次' : 'where it stopped';
      assert.ok(banners[0].includes(resumed), banners[0]);
      const again = await waitFor('the woken run to end', () => runEnded(events, woken), RUN_TIMEOUT, 250);
      assert.equal(again.payload.phase, 'finished', `run ended: ${again.text}`);
    } finally {
      for (const d of disposables) d.dispose();
    }
  });
});
