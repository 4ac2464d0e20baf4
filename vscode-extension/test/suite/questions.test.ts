// Questions from the agent as quick picks: answered, typed, dismissed, queued, withdrawn.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { AskParams } from '../../src/protocol';
import { closeQuickPick, flower, pickAnswer, waitFor } from './helpers';

const ask = (id: string, over: Partial<AskParams> = {}): AskParams => ({
  folder: 'file:///tmp',
  id,
  question: `question ${id}?`,
  options: ['yes', 'no'],
  free_text: false,
  timeout_s: null,
  ...over,
});

suite('questions', () => {
  test('the option picked in the quick pick is the answer', async () => {
    const api = await flower();
    const { questions } = api;
    const answer = questions.ask(ask('q1'), new vscode.CancellationTokenSource().token);
    await waitFor('the quick pick', () => questions.current?.id === 'q1');
    assert.deepEqual(
      questions.activePick?.items.map((i) => i.label),
      ['yes', 'no'],
    );
    assert.equal(questions.activePick?.placeholder, 'question q1?');
    await pickAnswer(api, 'no');
    assert.deepEqual(await answer, { answer: 'no' });
    assert.equal(questions.current, undefined);
  });

  test('dismissing the quick pick declines the question', async () => {
    const { questions } = await flower();
    const answer = questions.ask(ask('q2'), new vscode.CancellationTokenSource().token);
    await waitFor('the quick pick', () => questions.current?.id === 'q2');
    await closeQuickPick();
    assert.deepEqual(await answer, { dismissed: true });
  });

  test('a second question waits, counted in the status bar, and opens after the first', async () => {
    const api = await flower();
    const { questions } = api;
    const never = new vscode.CancellationTokenSource().token;
    const first = questions.ask(ask('q3'), never);
    const second = questions.ask(ask('q4', { options: ['red', 'green'] }), never);
    await waitFor('the first quick pick', () => questions.current?.id === 'q3');
    assert.equal(questions.waiting, 1);
    assert.equal(questions.waitingItem.text, '$(question) Flower: 1 question waiting');
    await pickAnswer(api, 'yes');
    assert.deepEqual(await first, { answer: 'yes' });
    await waitFor('the second quick pick', () => questions.current?.id === 'q4');
    assert.equal(questions.waiting, 0);
    await pickAnswer(api, 'green');
    assert.deepEqual(await second, { answer: 'green' });
  });

  test('a question the server withdraws (timeout, stop) is taken off the screen', async () => {
    const { questions } = await flower();
    const source = new vscode.CancellationTokenSource();
    const answer = questions.ask(ask('q5'), source.token);
    await waitFor('the quick pick', () => questions.current?.id === 'q5');
    source.cancel();
    assert.deepEqual(await answer, { dismissed: true });
    await waitFor('the quick pick to close', () => questions.current === undefined);
  });
});
