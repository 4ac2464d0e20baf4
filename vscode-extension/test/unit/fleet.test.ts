// The Fleet view's tree, built from what the server says of a folder's fleet: the runs grouped
// by state with the waiting ones first, their question beside them, a run's questions and latest
// events under it, and a plain line when there is no fleet to show.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import * as l10n from '@vscode/l10n';
import type { l10nJsonFormat } from '@vscode/l10n-dev';
import {
  CANCELLABLE,
  fleetNodes,
  LATEST_EVENTS,
  runDetailNodes,
  workspaceFleetNodes,
} from '../../src/fleetTree';
import type { FleetRun, FleetRunState, FleetRunsResult, FleetShowResult } from '../../src/protocol';

const FOLDER = 'file:///w';
const WHERE = 'postgresql://flower:***@db/agents';

const run = (id: string, state: FleetRunState, extra: Partial<FleetRun> = {}): FleetRun => ({
  id,
  state,
  state_text: state,
  repository: 'git@host:org/repo',
  ref: 'main',
  request: `写一个 ${id}.py`,
  branch: `flower/${id}`,
  worker: state === 'queued' ? '' : 'a',
  created_at: 1_800_000_000,
  updated_at: 1_800_000_100,
  note: '',
  question: '',
  outcome: null,
  ...extra,
});

const fleet = (runs: FleetRun[], extra: Partial<FleetRunsResult> = {}): FleetRunsResult => ({
  configured: true,
  where: WHERE,
  message: '',
  runs,
  ...extra,
});

test('runs are grouped by state, the waiting ones first and open, the newest first in a group', () => {
  const nodes = fleetNodes(
    FOLDER,
    fleet([
      run('r1', 'finished'),
      run('r2', 'queued'),
      run('r3', 'waiting', { question: 'hello.py 要打印什么?' }),
      run('r4', 'queued'),
      run('r5', 'failed', { note: '流程没走完:no such ref' }),
    ]),
  );
  assert.deepEqual(
    nodes.map((n) => [n.label, n.expanded]),
    [
      ['Waiting for an answer (1)', true],
      ['Queued (2)', true],
      ['Failed (1)', false],
      ['Finished (1)', false],
    ],
  );
  assert.deepEqual(
    nodes[1].children.map((n) => n.run?.id),
    ['r4', 'r2'],
  );
  const waiting = nodes[0].children[0];
  assert.equal(waiting.kind, 'run');
  assert.equal(waiting.label, '写一个 r3.py');
  assert.equal(waiting.description, '? hello.py 要打印什么? · r3');
  assert.deepEqual(waiting.run, { id: 'r3', state: 'waiting', question: 'hello.py 要打印什么?' });
  assert.ok(waiting.tooltip?.includes('Waits for an answer: hello.py 要打印什么?'), waiting.tooltip);
  assert.equal(nodes[2].children[0].description, '流程没走完:no such ref · r5');
  // answered, the run waits until its worker reads the answer
  const [answered] = fleetNodes(FOLDER, fleet([run('r6', 'waiting')]));
  assert.equal(answered.children[0].description, 'answered; its worker reads it next · r6');
  // every id is unique: the tree keeps what was expanded by them
  const ids = nodes.flatMap((n) => [n.id, ...n.children.map((c) => c.id)]);
  assert.equal(new Set(ids).size, ids.length);
});

test('what can be cancelled is what is not over yet', () => {
  assert.deepEqual([...CANCELLABLE].sort(), ['queued', 'running', 'waiting']);
});

test('no store, an unreachable database, an empty fleet: one line that says so', () => {
  const none = fleetNodes(
    FOLDER,
    fleet([], { configured: false, where: '', message: '这个文件夹没配共享库' }),
  );
  assert.deepEqual(
    none.map((n) => [n.kind, n.label, n.icon?.id]),
    [['message', '这个文件夹没配共享库', 'info']],
  );
  const gone = fleetNodes(FOLDER, fleet([], { message: 'x 连不上队列库 postgresql://…' }));
  assert.deepEqual(
    gone.map((n) => [n.kind, n.icon?.id]),
    [['message', 'error']],
  );
  const empty = fleetNodes(FOLDER, fleet([]));
  assert.deepEqual(
    empty.map((n) => n.label),
    [`No runs in the fleet at ${WHERE}`],
  );
});

test('a finished run says where its result is', () => {
  const [group] = fleetNodes(
    FOLDER,
    fleet([
      run('r1', 'finished', {
        outcome: {
          branch: 'flower/r1',
          commit: '0123456789abcdef',
          pushed: true,
          patch: '',
          host: '',
          goal_met: true,
        },
      }),
    ]),
  );
  assert.ok(group.children[0].tooltip?.includes('Result: branch flower/r1 (0123456789)'));
});

test('an opened run: its questions, then its latest events newest first, and how many came before', () => {
  const events = Array.from({ length: LATEST_EVENTS + 3 }, (_, i) => ({
    at: 1_800_000_000 + i,
    worker: 'a',
    text: `line ${i + 1}`,
  }));
  const detail: FleetShowResult = {
    configured: true,
    where: WHERE,
    message: '',
    run: run('r3', 'waiting', { question: 'hello.py 要打印什么?' }),
    events,
    executions: [],
    questions: [
      { id: 1, question: '用哪个版本?', options: [], asked_at: 0, state: 'delivered', answer: '3.12' },
      {
        id: 2,
        question: 'hello.py 要打印什么?',
        options: ['hello'],
        asked_at: 0,
        state: 'waiting',
        answer: '',
      },
    ],
  };
  const nodes = runDetailNodes(FOLDER, 'r3', detail);
  assert.deepEqual(
    nodes.slice(0, 2).map((n) => [n.kind, n.label, n.description]),
    [
      ['question', '用哪个版本?', '→ 3.12'],
      ['question', 'hello.py 要打印什么?', 'waiting for your answer'],
    ],
  );
  const lines = nodes.filter((n) => n.kind === 'event').map((n) => n.label);
  assert.equal(lines.length, LATEST_EVENTS);
  assert.equal(lines[0], `line ${LATEST_EVENTS + 3}`);
  assert.equal(lines.at(-1), 'line 4');
  assert.equal(nodes.at(-1)?.label, '3 earlier events (flower fleet show r3)');
});

test('a run that could not be read says why', () => {
  const nodes = runDetailNodes(FOLDER, 'gone', {
    configured: true,
    where: WHERE,
    message: 'no such run: gone',
    run: null,
    events: [],
    executions: [],
    questions: [],
  });
  assert.deepEqual(
    nodes.map((n) => [n.kind, n.label]),
    [['message', 'no such run: gone']],
  );
});

test('several folders: each its fleet under its name, the database beside it', () => {
  const nodes = workspaceFleetNodes([
    { uri: 'file:///a', name: 'a', fleet: fleet([run('r1', 'running')]) },
    { uri: 'file:///b', name: 'b', fleet: undefined },
  ]);
  assert.deepEqual(
    nodes.map((n) => [n.label, n.description, n.children.map((c) => c.label)]),
    [
      ['a', WHERE, ['Running (1)']],
      ['b', '', []],
    ],
  );
});

test('the Chinese tree: its groups and lines in Chinese, the run’s words untouched', () => {
  const EXT = path.resolve(__dirname, '../../..');
  const zh = JSON.parse(fs.readFileSync(path.join(EXT, 'l10n/bundle.l10n.zh-cn.json'), 'utf8'));
  l10n.config({ contents: zh as l10nJsonFormat });
  try {
    const nodes = fleetNodes(FOLDER, fleet([run('r3', 'waiting', { question: '要打印什么?' })]));
    assert.equal(nodes[0].label, '等人回答(1)');
    assert.equal(nodes[0].children[0].label, '写一个 r3.py');
    assert.ok(nodes[0].children[0].tooltip?.includes('在等回答:要打印什么?'));
  } finally {
    l10n.config({ contents: {} });
  }
});
