// The pure text helpers behind the meter, the event log, the state page and the quick pick.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ASIDE_SHOWN,
  answerRows,
  asideText,
  countdownText,
  eventLine,
  formatCountdown,
  formatTokens,
  limitWaitOf,
  meterText,
  meterTooltip,
  renderState,
} from '../../src/format';
import type { ContextParams, EventKind, StateResult } from '../../src/protocol';

const ctx = (over: Partial<ContextParams> = {}): ContextParams => ({
  folder: 'file:///w',
  used: 80_200,
  window: 1_000_000,
  warn_at: 800_000,
  at: 900_000,
  step: '干活',
  round: 3,
  generation: 2,
  cost_usd: 0.4217,
  near: false,
  handing_off: false,
  ...over,
});

test('token counts read like the status bar sample: 80.2K / 1M', () => {
  assert.equal(meterText(ctx()), 'Flower 80.2K / 1M');
  assert.equal(formatTokens(512), '512');
  assert.equal(formatTokens(200_000), '200K');
  assert.equal(formatTokens(999_960), '1M');
  assert.equal(formatTokens(1_500_000), '1.5M');
  assert.equal(meterText(undefined), 'Flower');
});

test('the tooltip tells step, round, generation and cost', () => {
  const tip = meterTooltip(ctx({ near: true }));
  assert.ok(tip.includes('80,200 of 1,000,000 tokens (8%)'), tip);
  assert.ok(tip.includes('step 干活 · round 3 · generation 2'), tip);
  assert.ok(tip.includes('$0.42'), tip);
  assert.ok(tip.includes('Near the handoff threshold: a fresh session takes over at 900K.'), tip);
  assert.ok(meterTooltip(ctx({ handing_off: true })).includes('Handing off'));
});

test('event log lines: failures are errors, retries and rejections are warnings', () => {
  const ev = (kind: EventKind, payload: Record<string, unknown> = {}) =>
    eventLine({ folder: 'f', kind, text: 'x', payload });
  assert.deepEqual(ev('step'), { level: 'info', line: '[step] x' });
  assert.equal(ev('retry').level, 'warn');
  assert.equal(ev('verdict', { state: 'not_yet' }).level, 'warn');
  assert.equal(ev('verdict', { state: 'achieved' }).level, 'info');
  assert.equal(ev('run', { phase: 'failed' }).level, 'error');
  assert.equal(ev('error').level, 'error');
});

test('the state page shows progress, the verdict and waiting questions', () => {
  const state: StateResult = {
    folder: 'file:///w',
    workspace: '/w',
    run_dir: '/w/runs',
    waking: true,
    brief: '/w/需求.md',
    goal: '/w/目标.md',
    checks: 3,
    woke: 2,
    steps: { 澄清: 's1', 干活: 's2' },
    running: true,
    step: '干活',
    index: 3,
    total: 3,
    round: 2,
    generation: 1,
    used: 71_400,
    window: 200_000,
    cost_usd: 1.5,
    near: false,
    handing_off: false,
    verdict: {
      state: 'not_yet',
      reason: '没有 README.md',
      failed: ['有 README.md'],
      round: 1,
      goal_path: '/w/目标.md',
    },
    pending: [
      {
        folder: 'file:///w',
        id: 'a',
        question: '继续吗?',
        options: ['是', '否'],
        free_text: true,
        timeout_s: null,
      },
    ],
  };
  const page = renderState(state);
  assert.ok(page.startsWith('# Flower state: /w\n'));
  assert.ok(page.includes('- **Running**: yes (step 干活, 3 of 3)'), page);
  assert.ok(page.includes('- **Context**: 71.4K / 200K'), page);
  assert.ok(page.includes('- **Goal**: /w/目标.md (3 checks)'), page);
  assert.ok(page.includes('## Last verdict (round 1): not_yet'), page);
  assert.ok(page.includes('- [ ] 有 README.md'), page);
  assert.ok(page.includes('- 继续吗? (是 / 否)'), page);
  assert.ok(page.includes('- 干活: `s2`'), page);
});

test('quick-pick rows: typed text comes first when free text is allowed', () => {
  assert.deepEqual(answerRows(['a', 'b'], '', true), [
    { label: 'a', custom: false },
    { label: 'b', custom: false },
  ]);
  assert.deepEqual(answerRows(['a', 'b'], ' mine ', true)[0], { label: 'mine', custom: true });
  assert.equal(answerRows(['a', 'b'], 'a', true).length, 2, 'typing an option does not duplicate it');
  assert.equal(answerRows(['a', 'b'], 'mine', false).length, 2, 'no typed row without free text');
});

test('the answer to a side question: its cost, then the answer on one line, long ones cut', () => {
  const answer = { ok: true, message: 'm', answer: '在干活。\n  判定者在核对 README.md。', cost_usd: 0.0123 };
  assert.equal(
    asideText(answer),
    'Flower, aside ($0.0123, the run was not disturbed): 在干活。 判定者在核对 README.md。',
  );
  const long = asideText({ ...answer, answer: 'x'.repeat(1000) });
  assert.ok(long.endsWith(`${'x'.repeat(ASIDE_SHOWN - 1)}…`), long);
});

test('a limit wait is read from its event and counted down', () => {
  const ev = (payload: Record<string, unknown>, kind: EventKind = 'retry') => ({
    folder: 'file:///w',
    kind,
    text: 'waiting',
    payload,
  });
  const wait = limitWaitOf(ev({ subtype: 'limit', phase: 'wait', limit: 'usage', until: 1_000 }));
  assert.deepEqual(wait, { phase: 'wait', limit: 'usage', until: 1_000 });
  assert.equal(limitWaitOf(ev({ phase: 'offline' })), undefined);
  assert.equal(limitWaitOf(ev({ subtype: 'limit', phase: 'wait', limit: 'usage' })), undefined);
  assert.equal(limitWaitOf(ev({ subtype: 'limit', phase: 'wait', until: 1 }, 'handoff')), undefined);
  assert.equal(
    countdownText({ phase: 'wait', limit: 'usage', until: 1_000 }, 701),
    '$(clock) Flower: usage limit · resumes in 4:59',
  );
  assert.equal(
    countdownText({ phase: 'wait', limit: 'rate', until: 10 }, 2.5),
    '$(clock) Flower: rate limited · resumes in 0:08',
  );
  assert.equal(
    countdownText({ phase: 'wait', limit: 'overloaded', until: 4_000 }, 0),
    '$(clock) Flower: model overloaded · resumes in 1:06:40',
  );
  assert.equal(formatCountdown(-5), '0:00');
});
