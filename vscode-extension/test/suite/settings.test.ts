// The folder's flower settings reach the server, live: a run directory with ${workspaceFolder}
// is where the server keeps the runs, and a short question timeout makes the next run's question
// give up by itself, with nobody answering.
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { EventParams } from '../../src/protocol';
import { flower, runEnded, waitFor, workspaceFolder } from './helpers';

const REQUEST = '写一个 hello.py,运行时打印问候语';
const HERE = vscode.ConfigurationTarget.WorkspaceFolder;

suite('settings', () => {
  test('flower.runDirectory, the folder variable expanded, is where the server keeps the runs', async () => {
    const api = await flower();
    const folder = workspaceFolder();
    const config = vscode.workspace.getConfiguration('flower', folder.uri);
    const expected = path.join(folder.uri.fsPath, '.flower-runs');
    try {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the VS Code variable, as a person types it
      await config.update('runDirectory', '${workspaceFolder}/.flower-runs', HERE);
      await waitFor('the server to take the new run directory', async () => {
        return (await api.server.state()).run_dir === expected;
      });
      assert.equal(api.server.options?.folders?.[folder.uri.toString()]?.run_dir, expected);
    } finally {
      await config.update('runDirectory', undefined, HERE);
    }
    await waitFor('the default again', async () => (await api.server.state()).run_dir !== expected);
  });

  test('a short flower.questionTimeout takes effect: the next question gives up by itself', async function () {
    this.timeout(300_000);
    const api = await flower();
    const folder = workspaceFolder();
    const config = vscode.workspace.getConfiguration('flower', folder.uri);
    const events: EventParams[] = [];
    const listening = api.server.onEvent((e) => events.push(e));
    try {
      await config.update('questionTimeout', 2, HERE);
      await waitFor('the setting to be sent', () => api.server.options?.timeout_s === 2);

      await vscode.commands.executeCommand('flower.newRun', REQUEST);
      const question = await waitFor('the clarifying question', () => api.questions.current, 120_000);
      assert.equal(question.timeout_s, 2);
      // nobody answers: the engine stops waiting, and the server takes the question off the screen
      const gaveUp = await waitFor(
        'the question to time out',
        () => events.find((e) => e.kind === 'ask' && e.payload.state === 'timeout'),
        60_000,
      );
      assert.equal(gaveUp.payload.id, question.id);
      await waitFor('the quick pick to close', () => api.questions.current === undefined, 30_000);

      // stopped here, or over already: either way the run ends
      await vscode.commands.executeCommand('flower.stop');
      await waitFor('the run to end', () => runEnded(events, 0), 180_000);
    } finally {
      listening.dispose();
      await config.update('questionTimeout', undefined, HERE);
    }
  });
});
