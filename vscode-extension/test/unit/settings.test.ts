// biome-ignore-all lint/suspicious/noTemplateCurlyInString: VS Code's ${...} variables, as a person types them, are what these tests feed in
// The settings module: variables expanded, bad values replaced by the defaults, each folder's
// options keyed by its URI, and which change restarts the server and which is sent to it.
import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { test } from 'node:test';
import {
  DEFAULTS,
  expand,
  type Folder,
  initOptions,
  reaction,
  readSettings,
  type Reader,
} from '../../src/settings';

const folder = (fsPath: string): Folder => ({
  uri: { fsPath, toString: () => `file://${fsPath}` },
  name: fsPath.split('/').pop() ?? '',
});

const reader = (values: Record<string, unknown>): Reader => ({
  get: ((key: string, fallback?: unknown) => (key in values ? values[key] : fallback)) as Reader['get'],
});

test('variables in a path are expanded for the folder', () => {
  const ws = folder('/work/proj');
  const env = { RUNS: '/var/runs' };
  assert.equal(expand('${workspaceFolder}/.runs', ws), '/work/proj/.runs');
  assert.equal(expand('runs-${workspaceFolderBasename}', ws), 'runs-proj');
  assert.equal(expand('~/runs', ws), `${os.homedir()}/runs`);
  assert.equal(expand('${userHome}/r', ws), `${os.homedir()}/r`);
  assert.equal(expand('${env:RUNS}/x', ws, env), '/var/runs/x');
  assert.equal(expand('${env:NOPE}x', ws, env), 'x');
  assert.equal(expand('${workspaceFolder}', undefined), '${workspaceFolder}'); // no folder: nothing to put there
});

test("a folder's settings are read, checked and expanded", () => {
  const ws = folder('/work/proj');
  assert.deepEqual(readSettings(reader({}), ws), DEFAULTS);
  assert.deepEqual(
    readSettings(
      reader({
        runDirectory: '${workspaceFolder}/r',
        questionTimeout: 5,
        contextWindow: 200000,
        sandbox: 'require',
        budget: 2.5,
        roundBudget: 0.5,
        stallRounds: 2,
        notify: '  notify-send flower  ',
        judgeCanRun: true,
        'trace.server': 'verbose',
      }),
      ws,
    ),
    {
      runDirectory: '/work/proj/r',
      questionTimeout: 5,
      contextWindow: 200000,
      sandbox: 'require',
      budget: 2.5,
      roundBudget: 0.5,
      stallRounds: 2,
      notify: 'notify-send flower',
      judgeCanRun: true,
      trace: 'verbose',
    },
  );
  // null is a value of its own (wait forever, infer the window); nonsense falls back
  assert.deepEqual(
    readSettings(reader({ questionTimeout: null, contextWindow: null }), ws),
    DEFAULTS_WITH_NULLS,
  );
  assert.deepEqual(
    readSettings(
      reader({
        runDirectory: '  ',
        questionTimeout: -1,
        contextWindow: 'big',
        sandbox: 'maybe',
        budget: 0, // 0 is no ceiling, as a cleared number field gives
        roundBudget: -1,
        stallRounds: 1.5, // a count of rounds is whole
        notify: 42,
        judgeCanRun: 'yes', // only true turns it on
        'trace.server': 'x',
      }),
      ws,
    ),
    DEFAULTS,
  );
});

test('0 rounds without progress is a value of its own: never ask', () => {
  const ws = folder('/work/proj');
  assert.equal(readSettings(reader({ stallRounds: 0 }), ws).stallRounds, 0);
  assert.equal(readSettings(reader({ stallRounds: -1 }), ws).stallRounds, null);
  assert.equal(readSettings(reader({ stallRounds: null }), ws).stallRounds, null);
});

const DEFAULTS_WITH_NULLS = { ...DEFAULTS, questionTimeout: null, contextWindow: null };

test("initializationOptions carry every folder's own options, the first one's at the top", () => {
  const a = folder('/work/a');
  const b = folder('/work/b');
  const settings: Record<string, Record<string, unknown>> = {
    '/work/a': { questionTimeout: 60 },
    '/work/b': {
      questionTimeout: 2,
      runDirectory: '${workspaceFolder}/.runs',
      sandbox: 'off',
      budget: 3,
      stallRounds: 1,
      notify: 'notify-send flower',
      judgeCanRun: true,
    },
  };
  const options = initOptions([a, b], (f) => reader(f ? settings[f.uri.fsPath] : {}));
  assert.deepEqual(options, {
    run_dir: 'runs',
    timeout_s: 60,
    window: null,
    sandbox: 'auto',
    budget_usd: null,
    round_budget_usd: null,
    stall_rounds: null,
    notify: null,
    judge_can_run: false,
    folders: {
      'file:///work/a': {
        run_dir: 'runs',
        timeout_s: 60,
        window: null,
        sandbox: 'auto',
        budget_usd: null,
        round_budget_usd: null,
        stall_rounds: null,
        notify: null,
        judge_can_run: false,
      },
      'file:///work/b': {
        run_dir: '/work/b/.runs',
        timeout_s: 2,
        window: null,
        sandbox: 'off',
        budget_usd: 3,
        round_budget_usd: null,
        stall_rounds: 1,
        notify: 'notify-send flower',
        judge_can_run: true,
      },
    },
  });
});

test('flower.python restarts the server, its options are sent to it, the trace is left to the client', () => {
  const changed =
    (...names: string[]) =>
    (setting: string) =>
      names.includes(setting);
  assert.equal(reaction(changed('flower.python')), 'restart');
  assert.equal(reaction(changed('flower.store')), 'restart'); // its password is in the server's environment
  assert.equal(reaction(changed('flower.questionTimeout')), 'send');
  assert.equal(reaction(changed('flower.sandbox')), 'send');
  assert.equal(reaction(changed('flower.budget')), 'send');
  assert.equal(reaction(changed('flower.roundBudget')), 'send');
  assert.equal(reaction(changed('flower.stallRounds')), 'send');
  assert.equal(reaction(changed('flower.notify')), 'send');
  assert.equal(reaction(changed('flower.judgeCanRun')), 'send');
  assert.equal(reaction(changed('flower.runDirectory', 'flower.python')), 'restart');
  assert.equal(reaction(changed('flower.trace.server')), 'none');
  assert.equal(reaction(changed('editor.fontSize')), 'none');
});

test("the window's shared store goes at the top and to every folder, without its password", () => {
  const a = folder('/srv/a');
  const b = folder('/srv/b');
  const options = initOptions([a, b], () => reader({ store: 'postgresql://ann:s3cret@db.example/flower' }));
  assert.equal(options.store, 'postgresql://ann@db.example/flower');
  // a folder's own options replace the top-level ones whole on the server: each carries it too
  for (const f of [a, b])
    assert.equal(options.folders?.[f.uri.toString()]?.store, 'postgresql://ann@db.example/flower');
  assert.ok(!JSON.stringify(options).includes('s3cret'));
  assert.equal(initOptions([a], () => reader({})).store, undefined);
});
