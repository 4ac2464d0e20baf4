// The history the client holds (updates applied in order), the Flower view's tree built from it,
// and the context chart's SVG: the pure parts behind the view and the webview.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { chartSvg, seriesOf, summary, turnTooltip, yTicks } from '../../src/chart';
import { applyUpdate, formatCost, formatDuration, newer } from '../../src/history';
import { folderNodes, type Node, workspaceNodes } from '../../src/historyTree';
import type {
  HistoryEvidence,
  HistoryResult,
  HistoryRound,
  HistoryStep,
  HistoryTurn,
  HistoryVerdict,
  HistoryWake,
} from '../../src/protocol';

const FOLDER = 'file:///w';
const GOAL = '/w/.flower/notes/目标.md';

const turn = (used: number, step: string, lane: string, generation = 1, wake = 1): HistoryTurn => ({
  at: 1_800_000_000 + used / 1000,
  used,
  session_id: `${lane}-${generation}`,
  step,
  lane,
  generation,
  wake,
});

const round = (over: Partial<HistoryRound>): HistoryRound => ({
  number: 1,
  step: '干活',
  status: 'done',
  session_id: 'work-1',
  retired: [],
  started_at: 1_800_000_000,
  ended_at: 1_800_000_010,
  duration_s: 10,
  cost_usd: 0.5,
  num_turns: 2,
  attempts: 1,
  errors: [],
  error: null,
  resumed: false,
  verdict: null,
  judge_error: null,
  handoffs: [],
  questions: [],
  ...over,
});

const verdict = (state: HistoryVerdict['state'], failed: string[] = []): HistoryVerdict => ({
  state,
  reason: state === 'achieved' ? '都齐了。' : '少了 README。\n细节在后面。',
  failed: failed.map((text, i) => ({ text, line: 4 + i })),
  round: 1,
  step: '干活·判定#1',
  session_id: 'judge-1',
  at: 1_800_000_011,
  cost_usd: 0.02,
  num_turns: 1,
  duration_s: 1,
  evidence: [],
  trail: [],
  unproven: [],
  claimed: state,
});

const step = (name: string, rounds: HistoryRound[], live = false): HistoryStep => ({
  name,
  rounds,
  sessions: ['s'],
  cost_usd: rounds.reduce((sum, r) => sum + r.cost_usd + (r.verdict?.cost_usd ?? 0), 0),
  num_turns: 3,
  duration_s: 12,
  live,
});

const wake = (number: number, steps: HistoryStep[], live = false): HistoryWake => ({
  number,
  run: `r${number}`,
  started_at: 1_800_000_000,
  ended_at: live ? 0 : 1_800_000_100,
  cost_usd: steps.reduce((sum, s) => sum + s.cost_usd, 0),
  num_turns: 9,
  duration_s: 100,
  live,
  steps,
});

function history(over: Partial<HistoryResult> = {}): HistoryResult {
  const clarify = round({
    step: '确认需求',
    questions: [
      {
        id: 'q1',
        question: '用哪个?\n第二行',
        options: ['a', 'b'],
        state: 'answered',
        answer: 'a',
        asked_at: 1_800_000_001,
        waited_s: 1.5,
      },
    ],
  });
  const first = round({ verdict: verdict('not_yet', ['工作区根目录有 README.md', 'hello.py 只用标准库']) });
  const second = round({
    number: 2,
    step: '干活#round2',
    session_id: 'work-2',
    retired: ['work-1'],
    attempts: 3,
    errors: ['API Error: overloaded', 'API Error: 529'],
    verdict: verdict('achieved'),
    handoffs: [
      {
        step: '干活#round2',
        retired: 'work-1',
        successor: 'work-2',
        generation: 2,
        at: 1_800_000_020,
        used: 152_300,
        path: '/w/.flower/notes/交接-干活#round2.md',
        uri: 'file:///w/.flower/notes/%E4%BA%A4.md',
        degraded: false,
      },
    ],
  });
  return {
    folder: FOLDER,
    revision: 5,
    workspace: '/w',
    run_dir: '/w/runs',
    brief: '/w/.flower/notes/需求.md',
    goal: GOAL,
    brief_uri: 'file:///w/b',
    goal_uri: 'file:///w/g',
    brief_exists: true,
    goal_exists: true,
    checks: [{ line: 4, text: '工作区根目录有 README.md' }],
    woke: 2,
    sessions: { 干活: 'work-2' },
    wakes: [
      wake(1, [step('确认需求', [clarify]), step('干活', [first, second])]),
      wake(2, [step('干活', [round({ step: '干活', session_id: 'work-2', status: 'running' })], true)], true),
    ],
    turns: [
      turn(13_000, '确认需求', '确认需求'),
      turn(30_000, '干活', '干活'),
      turn(13_500, '干活·判定#1', '干活·判定'),
      turn(150_000, '干活#round2', '干活'),
      turn(30_000, '干活#round2', '干活', 2),
      turn(13_600, '干活·判定#2', '干活·判定', 2),
      turn(45_000, '干活', '干活', 2, 2),
    ],
    marks: [
      { kind: 'verdict', turn: 2, label: '干活', state: 'not_yet' },
      { kind: 'handoff', turn: 3, label: '干活#round2', state: '' },
      { kind: 'verdict', turn: 5, label: '干活#round2 <x>', state: 'achieved' },
      { kind: 'wake', turn: 6, label: 'wake 2', state: '' },
    ],
    window: 200_000,
    at: 150_000,
    warn_at: 130_000,
    cost_usd: 1.57,
    num_turns: 18,
    duration_s: 200,
    live: true,
    live_step: '干活',
    elsewhere: '',
    earlier: 0,
    problems: [],
    ...over,
  };
}

function find(nodes: readonly Node[], test: (n: Node) => boolean): Node {
  for (const n of nodes) {
    if (test(n)) return n;
    const below = findOrUndefined(n.children, test);
    if (below) return below;
  }
  throw new Error('no such node');
}

function findOrUndefined(nodes: readonly Node[], test: (n: Node) => boolean): Node | undefined {
  try {
    return find(nodes, test);
  } catch {
    return undefined;
  }
}

test('an update replaces an older history, appends the next turn, and says when one was missed', () => {
  const held = history({ revision: 5 });
  const next = turn(50_000, '干活', '干活', 2, 2);
  const appended = applyUpdate(held, { folder: FOLDER, revision: 6, turn: next });
  assert.equal(appended.applied, 'appended');
  assert.equal(appended.history?.revision, 6);
  assert.deepEqual(appended.history?.turns.at(-1), next);
  assert.equal(held.turns.length, 7, 'the history held before is left as it was');
  assert.equal(applyUpdate(held, { folder: FOLDER, revision: 5, turn: next }).applied, 'stale');
  assert.equal(applyUpdate(held, { folder: FOLDER, revision: 8, turn: next }).applied, 'missed');
  assert.equal(applyUpdate(undefined, { folder: FOLDER, revision: 1, turn: next }).applied, 'missed');
  const whole = history({ revision: 3, live: false });
  const replaced = applyUpdate(held, { folder: FOLDER, revision: 9, history: whole });
  assert.equal(replaced.applied, 'replaced');
  assert.equal(replaced.history?.revision, 9);
  assert.equal(applyUpdate(held, { folder: FOLDER, revision: 4, history: whole }).applied, 'stale');
  assert.equal(newer(held, history({ revision: 4 })), held, 'an answer older than the updates is dropped');
});

test('costs and times read like people write them', () => {
  assert.deepEqual(
    [formatCost(0), formatCost(0.004), formatCost(0.281), formatCost(12.4)],
    ['$0', '$0.004', '$0.28', '$12.40'],
  );
  assert.deepEqual(
    [formatDuration(0.8), formatDuration(12.4), formatDuration(252), formatDuration(3790)],
    ['0.8s', '12s', '4m 12s', '1h 3m'],
  );
});

test('the tree: the chart entry, then the wakes latest first, with steps, rounds, verdicts and what hangs on them', () => {
  const nodes = folderNodes(history());
  assert.deepEqual(
    nodes.map((n) => [n.kind, n.label]),
    [
      ['chart', 'Context growth'],
      ['wake', 'Wake 2'],
      ['wake', 'Wake 1'],
    ],
  );
  assert.equal(nodes[0].description, '45K of 200K · 7 turns · 1 handoff');
  const [, live, first] = nodes;
  assert.ok(live.live && live.expanded && live.description?.startsWith('running · '));
  assert.equal(live.icon?.id, 'sync~spin');
  assert.deepEqual(
    first.children.map((s) => s.label),
    ['确认需求', '干活'],
  );
  // a step run once without a judge shows what happened in it directly
  const [clarify, work] = first.children;
  assert.deepEqual(
    clarify.children.map((n) => [n.kind, n.label, n.description]),
    [['question', '用哪个?', '→ a']],
  );
  assert.deepEqual(
    work.children.map((n) => [n.label, n.description]),
    [
      ['Round 1', 'not yet · $0.52 · 11s'],
      ['Round 2', 'achieved · $0.52 · 11s'],
    ],
  );
  const [judged] = work.children[0].children;
  assert.equal(judged.label, 'Judged: not yet');
  assert.equal(judged.description, '少了 README。');
  assert.deepEqual(
    judged.children.map((f) => [f.label, f.description, f.open]),
    [
      ['工作区根目录有 README.md', '目标.md:5', { path: GOAL, line: 4 }],
      ['hello.py 只用标准库', '目标.md:6', { path: GOAL, line: 5 }],
    ],
  );
  const second = work.children[1];
  assert.deepEqual(
    second.children.map((n) => [n.kind, n.label]),
    [
      ['verdict', 'Judged: achieved'],
      ['handoff', 'Handoff → generation 2'],
      ['retries', '2 retries'],
    ],
  );
  const handoff = second.children[1];
  assert.equal(handoff.description, 'at 152.3K · 交接-干活#round2.md');
  assert.deepEqual(handoff.open, { path: '/w/.flower/notes/交接-干活#round2.md' });
  assert.deepEqual(
    second.children[2].children.map((e) => e.label),
    ['API Error: overloaded', 'API Error: 529'],
  );
});

test('node ids stay put when a turn arrives, so the tree keeps what was expanded', () => {
  const before = history();
  const after = applyUpdate(before, {
    folder: FOLDER,
    revision: 6,
    turn: turn(60_000, '干活', '干活', 2, 2),
  }).history;
  assert.ok(after);
  const ids = (nodes: readonly Node[]): string[] => nodes.flatMap((n) => [n.id, ...ids(n.children)]);
  assert.deepEqual(ids(folderNodes(after)), ids(folderNodes(before)));
  assert.equal(folderNodes(after)[0].description, '60K of 200K · 8 turns · 1 handoff');
});

test('a waiting question and a failed round say so', () => {
  const h = history();
  h.wakes[1].steps[0].rounds[0].questions.push({
    id: 'q1',
    question: '继续吗?',
    options: [],
    state: 'asked',
    answer: '',
    asked_at: 1_800_000_050,
    waited_s: null,
  });
  h.wakes[0].steps[1].rounds[0] = round({
    status: 'failed',
    error: 'API error 401: invalid x-api-key\nmore',
  });
  const nodes = folderNodes(h);
  const waiting = find(nodes, (n) => n.label === '继续吗?');
  assert.equal(waiting.description, 'waiting for an answer');
  assert.ok(waiting.live);
  const failed = find(nodes, (n) => n.kind === 'error');
  assert.equal(failed.label, 'API error 401: invalid x-api-key');
});

test('several folders: one node each, and a folder without a run says what to do', () => {
  const nodes = workspaceNodes([
    { uri: FOLDER, name: 'w', history: history() },
    {
      uri: 'file:///v',
      name: 'v',
      history: history({ folder: 'file:///v', wakes: [], turns: [], marks: [] }),
    },
    { uri: 'file:///u', name: 'u' },
  ]);
  assert.deepEqual(
    nodes.map((n) => [n.label, n.children.map((c) => c.label)]),
    [
      ['w', ['Context growth', 'Wake 2', 'Wake 1']],
      ['v', ['No run in this folder']],
      ['u', ['Reading the history…']],
    ],
  );
});

test('the chart: a line per generation of each step, a judge as points, the limits and the marks', () => {
  const h = history();
  const series = seriesOf(h.turns);
  assert.deepEqual(
    series.map((s) => [s.key, s.points, s.scatter]),
    [
      ['确认需求#1', [0], false],
      ['干活#1', [1, 3], false],
      ['干活·判定', [2, 5], true],
      ['干活#2', [4, 6], false],
    ],
  );
  const svg = chartSvg(h, { width: 800, height: 400 });
  assert.equal(svg.match(/<circle /g)?.length, h.turns.length);
  assert.equal(
    svg.match(/<path class="line /g)?.length,
    2,
    'a line for each generation of 干活 with two points',
  );
  for (const limit of ['window', 'threshold', 'warn'])
    assert.ok(svg.includes(`<line class="${limit}"`), `the ${limit} line is drawn`);
  assert.ok(svg.includes('data-tokens="150000"') && svg.includes('handoff at 150K'));
  assert.equal(svg.match(/class="mark /g)?.length, h.marks.length);
  assert.ok(svg.includes('干活#round2 &lt;x&gt;'), 'labels are escaped');
  assert.ok(!svg.includes('<x>'));
  // the threshold sits above every point below it, the window above the threshold
  const y = (cls: string) => Number(svg.match(new RegExp(`<line class="${cls}"[^>]* y1="([\\d.]+)"`))?.[1]);
  assert.ok(y('window') < y('threshold') && y('threshold') < y('warn'));
});

test('a turn’s tooltip says which step, how much of the window, and what happened there', () => {
  const h = history();
  assert.deepEqual(turnTooltip(h, 3).slice(0, 3), [
    'Turn 4 · 干活#round2',
    '150,000 tokens (150K, 75% of 200K)',
    '干活 · generation 1 · wake 1',
  ]);
  assert.ok(turnTooltip(h, 3).includes('干活#round2: handed over to a fresh session'));
  assert.equal(
    summary(h),
    'running · context 45K of 200K · handoff at 150K · 7 turns · 2 judged rounds · 1 handoff · 2 wakes',
  );
});

test('the y axis is marked at round figures', () => {
  assert.deepEqual(yTicks(208_000), [0, 50_000, 100_000, 150_000, 200_000]);
  assert.deepEqual(yTicks(1_040_000), [0, 200_000, 400_000, 600_000, 800_000, 1_000_000]);
  assert.deepEqual(yTicks(14_000), [0, 2_500, 5_000, 7_500, 10_000, 12_500]);
});

test('a flower working in a terminal shows its wake as running elsewhere', () => {
  const h = history({ live: false, elsewhere: 'flower go 写个脚本(pid 4242,从 12-01 11:00:00 开始)' });
  h.wakes[1].live = false;
  const latest = folderNodes(h)[1];
  assert.equal(latest.description?.split(' · ')[0], 'running elsewhere');
  assert.ok(latest.tooltip?.includes('pid 4242'));
  assert.equal(latest.icon?.id, 'sync~spin');
});

test('a judged round carries its checkpoint number: the rounds counted across wakes, from the round a rewind went back to', () => {
  const judged = (n: number) => round({ number: n, verdict: verdict('not_yet') });
  const h = history({
    wakes: [
      wake(1, [
        step('确认需求', [round({ step: '确认需求' })]),
        step('干活', [judged(1), judged(2), judged(3)]),
      ]),
      wake(2, [step('干活', [judged(1)])]), // the judge's count restarts; the checkpoints' goes on: 4
      wake(3, [step('干活', [judged(1), round({ number: 2, status: 'failed' })])]), // after a rewind to 2: 3
    ],
    branches: [{ kind: 'rewind', round: 2, from_round: 4, at: 1_800_000_200, remark: '', after_wake: 2 }],
    live: false,
  });
  const rounds = (label: string) =>
    find(folderNodes(h), (n) => n.kind === 'wake' && n.label === label)
      .children.flatMap((s) => s.children)
      .filter((n) => n.kind === 'round')
      .map((n) => [n.label, n.checkpoint]);
  assert.deepEqual(rounds('Wake 1'), [
    ['Round 1', 1],
    ['Round 2', 2],
    ['Round 3', 3],
  ]);
  assert.deepEqual(
    find(folderNodes(h), (n) => n.label === 'Wake 2').children[0].children.map((n) => n.checkpoint),
    [4],
  );
  assert.deepEqual(rounds('Wake 3'), [
    ['Round 1', 3],
    ['Round 2', undefined], // never judged: nothing to go back to
  ]);
});

test('a wake that stopped short says which stop it was and what continuing will do', () => {
  const h = history({ live: false });
  h.wakes[1].live = false;
  h.wakes[0].stopped = 'budget';
  h.wakes[0].stop_line = 'stopped: budget —— spent $0.50 of $0.50; to go on, run again with a new budget';
  h.wakes[1].stopped = 'no_progress';
  h.wakes[1].stop_line =
    'stopped: no progress —— 2 rounds without progress. Run flower to go on, change the goal, or stop';
  const [, latest, earlier] = folderNodes(h);
  assert.equal(latest.description?.split(' · ')[0], 'stopped: no progress');
  assert.ok(latest.tooltip?.includes('change the goal'));
  assert.equal(latest.icon?.id, 'debug-stop');
  assert.equal(earlier.description?.split(' · ')[0], 'stopped: budget');
  assert.ok(earlier.tooltip?.includes('a new budget'));
});

const evidence = (over: Partial<HistoryEvidence>): HistoryEvidence => ({
  check: '',
  kind: 'none',
  command: '',
  exit_code: null,
  excerpt: '',
  path: '',
  line: null,
  end_line: null,
  pattern: '',
  hits: null,
  backed: false,
  basis: '',
  check_line: null,
  state: 'no_evidence',
  ...over,
});

test('a verdict shows every check: the state the server gave it and what backs it; a read file opens at its line', () => {
  const v: HistoryVerdict = {
    ...verdict('not_yet', ['hello.py 只用标准库']),
    evidence: [
      evidence({
        check: 'pytest 全绿',
        kind: 'command',
        command: 'pytest -q',
        exit_code: 0,
        backed: true,
        excerpt: '3 passed',
        check_line: 3,
        state: 'passed',
      }),
      evidence({
        check: 'hello.py 只用标准库',
        kind: 'read',
        path: 'hello.py',
        line: 1,
        end_line: 12,
        backed: true,
        check_line: 4,
        state: 'failed',
      }),
      evidence({
        check: '有 README',
        kind: 'search',
        pattern: 'README',
        path: '.',
        hits: 1,
        backed: true,
        state: 'passed',
      }),
      evidence({ check: '文档写清楚', kind: 'none', check_line: 6 }),
      evidence({
        check: '在 Windows 上能跑',
        kind: 'unverifiable',
        basis: '[此环境无法验证:没有 Windows]',
        state: 'unverifiable',
      }),
    ],
  };
  const nodes = folderNodes(history({ wakes: [wake(1, [step('干活', [round({ verdict: v })])])] }));
  const judged = find(nodes, (n) => n.kind === 'verdict');
  const checks = judged.children.filter((n) => n.kind === 'evidence');
  assert.deepEqual(
    checks.map((n) => [n.label, n.description]),
    [
      ['pytest 全绿', 'passed · ran pytest -q, exit code 0'],
      ['hello.py 只用标准库', 'not passed · read hello.py:1-12'],
      ['有 README', 'passed · searched README in .: 1 hits'],
      ['文档写清楚', 'no evidence'],
      ['在 Windows 上能跑', 'cannot be verified here'],
    ],
  );
  assert.deepEqual(checks[1].open, { path: '/w/hello.py', line: 0 });
  assert.deepEqual(checks[0].open, { path: GOAL, line: 3 });
  assert.match(checks[0].tooltip ?? '', /3 passed/);
  assert.match(checks[4].tooltip ?? '', /此环境无法验证/);
});
