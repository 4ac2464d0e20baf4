// The Flower view and the context chart in a real VS Code, over the real server, engine and
// Claude Code CLI, with flower.sim's "history" scenario as the model: a clarifying question, two
// rejected rounds, a question in round 2, a handoff in round 2 (the context passes 750K of the 1M
// window), round 3 accepted; a later Continue is accepted at once.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { FlowerApi } from '../../src/extension';
import type { Node } from '../../src/historyTree';
import type { EventParams, HistoryResult } from '../../src/protocol';
import { flower, pickAnswer, runEnded, waitFor } from './helpers';

const REQUEST = '写一个 hello.py,运行时打印问候语';
const WORK_QUESTION = 'README 用中文还是英文写?';
const RUN_TIMEOUT = 240_000;

function all(nodes: readonly Node[]): Node[] {
  return nodes.flatMap((n) => [n, ...all(n.children)]);
}

function one(nodes: readonly Node[], test: (n: Node) => boolean, what: string): Node {
  const found = all(nodes).filter(test);
  assert.equal(found.length, 1, `one ${what}, found ${found.map((n) => n.label).join(', ') || 'none'}`);
  return found[0];
}

/** The step the tree marks as running, if any. */
function runningStep(api: FlowerApi): string | undefined {
  return all(api.history.view.nodes).find((n) => n.kind === 'step' && n.icon?.id === 'sync~spin')?.label;
}

function history(api: FlowerApi): HistoryResult | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
  return folder ? api.history.histories.get(folder) : undefined;
}

async function itemCommand(api: FlowerApi, node: Node): Promise<void> {
  const item = api.history.view.getTreeItem(node);
  assert.ok(item.command, `${node.label} opens something`);
  await vscode.commands.executeCommand(item.command.command, ...(item.command.arguments ?? []));
}

suite('the Flower view', () => {
  test('a run with rejected rounds, a question and a handoff: the tree follows it live, its items open what they name, its actions act', async function () {
    this.timeout(3 * RUN_TIMEOUT);
    const api = await flower();
    const { histories, view, chart } = api.history;
    const events: EventParams[] = [];
    const running: string[] = [];
    const disposables = [
      api.server.onEvent((e) => events.push(e)),
      histories.onDidChange(() => {
        const step = runningStep(api);
        if (step && running[running.length - 1] !== step) running.push(step);
      }),
    ];
    try {
      // nothing has run here: the view is empty and its welcome offers a new run
      await waitFor('the first history', () => histories.state === 'noRun', 60_000);
      assert.equal(view.nodes.length, 0);

      await vscode.commands.executeCommand('flower.newRun', REQUEST);
      await waitFor('the clarifying question', () => api.questions.current, 120_000);
      await pickAnswer(api, 'hello');
      const asked = await waitFor(
        'the question in round 2',
        () => (api.questions.current?.question === WORK_QUESTION ? api.questions.current : undefined),
        RUN_TIMEOUT,
      );
      assert.deepEqual(asked.options, ['中文', 'English']);

      // while it waits: round 2 runs, and the tree says the question waits in it
      const waiting = await waitFor('the waiting question in the tree', () =>
        all(view.nodes).find((n) => n.kind === 'question' && n.label === WORK_QUESTION),
      );
      assert.equal(waiting.description, 'waiting for an answer');
      const live = one(
        view.nodes,
        (n) => n.kind === 'round' && n.description?.startsWith('running') === true,
        'running round',
      );
      assert.equal(live.label, 'Round 2');
      assert.ok(live.children.includes(waiting), 'the question hangs on the running round');
      assert.equal(runningStep(api), '干活');
      await pickAnswer(api, '中文');

      const end = await waitFor('the run to end', () => runEnded(events, 0), RUN_TIMEOUT, 250);
      assert.equal(end.payload.phase, 'finished', `run ended: ${end.text}`);
      await waitFor(
        'the history of the finished run',
        () => history(api)?.live === false && runningStep(api) === undefined,
      );
      assert.deepEqual(running, ['确认需求', '设定目标', '干活'], 'the live step moved through the steps');

      // the tree: wake -> step -> round -> verdict, questions, the handoff
      const [chartEntry, wake] = view.nodes;
      assert.equal(chartEntry.kind, 'chart');
      assert.equal(wake.label, 'Wake 1');
      assert.deepEqual(
        wake.children.map((s) => s.label),
        ['确认需求', '设定目标', '干活'],
      );
      const [clarify, , work] = wake.children;
      assert.deepEqual(
        clarify.children.map((n) => [n.kind, n.label, n.description]),
        [['question', 'hello.py 要打印什么?', '→ hello']],
      );
      assert.deepEqual(
        work.children.map((r) => [r.label, r.description?.split(' · ')[0]]),
        [
          ['Round 1', 'not yet'],
          ['Round 2', 'not yet'],
          ['Round 3', 'achieved'],
        ],
      );
      for (const r of work.children)
        assert.match(r.description ?? '', / · \$\d+\.\d+ · [\d.]+s$/, 'cost and time');
      const [first, second] = work.children;
      const verdict = first.children[0];
      assert.equal(verdict.label, 'Judged: not yet');
      const [failed] = verdict.children;
      assert.equal(failed.label, '工作区根目录有 README.md,写了怎么运行');
      assert.deepEqual(
        second.children.map((n) => [n.kind, n.label]),
        [
          ['verdict', 'Judged: not yet'],
          ['question', WORK_QUESTION],
          ['handoff', 'Handoff → generation 2'],
        ],
      );
      assert.equal(second.children[1].description, '→ 中文');

      // a failed check opens 目标.md at its line
      await itemCommand(api, failed);
      const goalEditor = await waitFor('目标.md open', () =>
        vscode.window.activeTextEditor?.document.fileName.endsWith('目标.md')
          ? vscode.window.activeTextEditor
          : undefined,
      );
      const line = goalEditor.selection.active.line;
      assert.equal(goalEditor.document.lineAt(line).text, `- ${failed.label}`);
      // the handoff opens its document
      const handoff = second.children[2];
      await itemCommand(api, handoff);
      const doc = await waitFor('the handoff document open', () =>
        vscode.window.activeTextEditor?.document.fileName.endsWith('交接-干活#round2.md')
          ? vscode.window.activeTextEditor
          : undefined,
      );
      assert.ok(doc.document.getText().includes('## 下一步'));
      assert.ok(fs.existsSync(handoff.open?.path ?? ''));
      // Open Brief from an item's menu
      await vscode.commands.executeCommand('flower.view.openBrief', wake);
      await waitFor('需求.md open', () =>
        vscode.window.activeTextEditor?.document.fileName.endsWith('需求.md'),
      );
      assert.equal(histories.hasAskAside, true, 'Ask Aside is offered: the server lists flower.aside');

      // the chart, from the tree's entry: every turn drawn, one line per generation, every mark
      await itemCommand(api, chartEntry);
      const drawn = await waitFor(
        'the chart drawn',
        () => (chart.last?.turns ? chart.last : undefined),
        60_000,
      );
      const h = history(api);
      assert.ok(h);
      assert.equal(drawn.turns, h.turns.length);
      assert.equal(drawn.marks, h.marks.length);
      assert.ok(drawn.series >= 4, `确认需求, 设定目标, 干活 twice, the judges: ${drawn.series} series`);
      assert.ok(h.marks.some((m) => m.kind === 'handoff'));

      // Continue from the wake's menu: a second wake appears live, the chart follows it
      const before = drawn.revision;
      const woken = events.length;
      await vscode.commands.executeCommand('flower.view.continue', wake);
      await waitFor('wake 2 running in the tree', () =>
        view.nodes.find((n) => n.label === 'Wake 2' && n.description?.startsWith('running')),
      );
      const again = await waitFor('the woken run to end', () => runEnded(events, woken), RUN_TIMEOUT, 250);
      assert.equal(again.payload.phase, 'finished', `run ended: ${again.text}`);
      await waitFor(
        'the chart to follow the wake',
        () => (chart.last?.revision ?? 0) > before && chart.last?.turns === history(api)?.turns.length,
      );
      const second_wake = await waitFor('wake 2 finished in the tree', () =>
        view.nodes.find((n) => n.label === 'Wake 2' && !n.description?.startsWith('running')),
      );
      const resumed = one(second_wake.children, (n) => n.kind === 'step', 'step');
      assert.deepEqual(
        resumed.children.map((r) => [r.label, r.children.map((n) => n.label)]),
        [['Round 1', ['Judged: achieved']]],
        'the woken work, judged at once',
      );

      // Say and Stop from the menu while a third wake runs
      const third = events.length;
      await vscode.commands.executeCommand('flower.view.continue', second_wake);
      await waitFor('wake 3 running', () => history(api)?.live);
      const said = await vscode.commands.executeCommand<{ ok: boolean; message: string }>(
        'flower.view.say',
        view.nodes[1],
        '先停一下',
      );
      assert.equal(said?.ok, true, said?.message);
      const stopped = await vscode.commands.executeCommand<{ ok: boolean; message: string }>(
        'flower.view.stop',
        view.nodes[1],
      );
      assert.equal(stopped?.ok, true, stopped?.message);
      const ended = await waitFor('the stopped run to end', () => runEnded(events, third), 60_000, 250);
      assert.equal(ended.payload.phase, 'stopped');
      await waitFor(
        'the tree to show nothing running',
        () => history(api)?.live === false && runningStep(api) === undefined,
      );
      const ws = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
      assert.ok(fs.existsSync(path.join(ws, 'hello.py')));
    } finally {
      for (const d of disposables) d.dispose();
    }
  });
});
