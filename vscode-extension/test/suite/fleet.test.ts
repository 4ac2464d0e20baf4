// The Fleet view in a real VS Code over the real server, with a real PostgreSQL holding a fleet:
// test/fleet_rig.py, on the Python the server runs on, starts the database, submits runs and
// has one ask a question, through the fleet's own API, as workers on other machines would.
// What a person checks: the runs appear by state once flower.store names the database, the
// waiting run shows its question, Answer… reaches the run, and a run submitted elsewhere shows up
// by itself.
import * as assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import * as vscode from 'vscode';
import type { FlowerApi } from '../../src/extension';
import type { FleetNode } from '../../src/fleetTree';
import { EXTENSION_ID, flower, waitFor, workspaceFolder } from './helpers';

class Rig {
  private readonly lines: AsyncIterableIterator<string>;
  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    this.lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }
  /** test/fleet_rig.py on `python`: a database with a waiting run and a queued one. */
  static start(python: string, extension: string): Rig {
    return new Rig(spawn(python, [path.join(extension, 'test', 'fleet_rig.py')], { stdio: 'pipe' }));
  }
  async next<T>(): Promise<T> {
    const line = await this.lines.next();
    assert.ok(!line.done, 'the fleet rig ended early');
    return JSON.parse(line.value) as T;
  }
  say(command: string): void {
    this.child.stdin.write(`${command}\n`);
  }
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    await exited;
  }
}

function all(nodes: readonly FleetNode[]): FleetNode[] {
  return nodes.flatMap((n) => [n, ...all(n.children)]);
}

function runNode(api: FlowerApi, id: string): FleetNode | undefined {
  return all(api.fleet.nodes).find((n) => n.run?.id === id);
}

suite('the Fleet view', () => {
  test('the runs of the store by state, a waiting run answered, a run submitted elsewhere shows up', async function () {
    this.timeout(300_000);
    const api = await flower();
    const python = api.server.interpreter?.command;
    assert.ok(python, 'the server runs on a Python with flower');
    const folder = workspaceFolder();
    const config = vscode.workspace.getConfiguration('flower', folder.uri);

    // no store yet: the view says so, no error
    await waitFor(
      'the fleet without a store',
      () => api.fleet.get(folder.uri.toString())?.configured === false,
    );
    assert.deepEqual(
      api.fleet.nodes.map((n) => n.kind),
      ['message'],
    );

    const extension = vscode.extensions.getExtension(EXTENSION_ID)?.extensionPath;
    assert.ok(extension, 'the extension is installed');
    const rig = Rig.start(python, extension);
    try {
      const made = await rig.next<{
        url: string;
        password: string;
        asks: string;
        queued: string;
        question: string;
      }>();
      await config.update('store', made.url, vscode.ConfigurationTarget.Workspace);
      // the store restarts the server (its password goes in the server's environment), and the
      // view reads the fleet again by itself
      await waitFor(
        'the waiting and the queued run',
        () => api.fleet.nodes.map((n) => n.label).join(' | ') === 'Waiting for an answer (1) | Queued (1)',
        120_000,
      );
      const fleet = api.fleet.get(folder.uri.toString());
      assert.ok(fleet && !fleet.where.includes(made.password), fleet?.where);
      const waiting = runNode(api, made.asks);
      assert.ok(waiting, 'the waiting run is in the tree');
      assert.equal(waiting.description, `? ${made.question} · ${made.asks}`);
      assert.equal(api.fleet.getTreeItem(waiting).contextValue, 'flower.fleet.run.waiting');
      const children = await api.fleet.getChildren(waiting);
      assert.deepEqual(
        children.filter((n) => n.kind === 'question').map((n) => [n.label, n.description]),
        [[made.question, 'waiting for your answer']],
      );

      // Answer… with the words given (the menu asks for them in an input box)
      const done = await vscode.commands.executeCommand<{ ok: boolean; message: string }>(
        'flower.fleet.answer',
        waiting,
        'hello',
      );
      assert.ok(done?.ok, done?.message);
      assert.ok(done.message.includes(made.question), done.message);
      const answered = await waitFor('the answered run', () => {
        const node = runNode(api, made.asks);
        return node?.run?.question === '' ? node : undefined;
      });
      assert.equal(answered.description, `answered; its worker reads it next · ${made.asks}`);
      const after = await api.fleet.getChildren(answered);
      assert.deepEqual(
        after.filter((n) => n.kind === 'question').map((n) => n.description),
        ['→ hello'],
      );

      // a run submitted on another machine: the server's flower/fleetUpdate brings it, no refresh
      rig.say('submit');
      const later = await rig.next<{ run: string }>();
      await waitFor('the run submitted elsewhere', () => runNode(api, later.run), 60_000);
      assert.ok(api.fleet.nodes.some((n) => n.label === 'Queued (2)'));
    } finally {
      await config.update('store', undefined, vscode.ConfigurationTarget.Workspace);
      await rig.stop();
    }
  });
});
