// Work-done progress in a real VS Code: a run's notification has Cancel, and Cancel stops the run.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { EventParams } from '../../src/protocol';
import { flower, runEnded, waitFor } from './helpers';

suite('progress', () => {
  test("the running step's progress has Cancel, and Cancel stops the run", async function () {
    this.timeout(90_000);
    const api = await flower();
    const events: EventParams[] = [];
    const sub = api.server.onEvent((e) => events.push(e));
    try {
      // The run only has to live long enough to be cancelled: it waits on its first question.
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
