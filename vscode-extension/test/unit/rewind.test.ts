// The confirmations of Rewind here and Fork here, as the modal shows them: built from the
// server's previews (flower.rewind / flower.fork with preview: true).
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ForkResult, RewindResult } from '../../src/protocol';
import { type Confirmation, forkConfirmation, rewindConfirmation, SHOWN } from '../../src/rewindText';

/** The modal's question, its button, and the lines under it. */
function assertAsks(ask: Confirmation, message: string, accept: string, lines: string[]): void {
  assert.deepEqual([ask.message, ask.accept, ask.detail.split('\n')], [message, accept, lines]);
}

const rewindPreview = (over: Partial<RewindResult> = {}): RewindResult => ({
  ok: true,
  message: '退回到第 1 轮判定之后:改回 1 个文件,删掉 1 个,你自己改过的 1 个保留原样',
  round: 1,
  changed: ['a.txt'],
  removed: ['b.txt'],
  kept: ['mine.txt'],
  restored_edits: [],
  session_cut: false,
  rounds: [1, 2],
  ...over,
});

test('the rewind confirmation lists the files put back, the ones removed, and your own edits that are kept', () => {
  assertAsks(rewindConfirmation(rewindPreview()), 'Rewind to the end of round 1?', 'Rewind', [
    'Put back as they were after round 1:',
    '  a.txt',
    '',
    'Removed (made after round 1):',
    '  b.txt',
    '',
    'Your own edits, kept as they are:',
    '  mine.txt',
    '',
    "The work step's conversation goes back to the end of round 1 too; Continue goes on from there.",
  ]);
});

test('a rewind that changes no file says so; a long list is cut and counted', () => {
  const none = rewindConfirmation(rewindPreview({ changed: [], removed: [], kept: [] }));
  assert.match(none.detail, /^No file changes: the files are as they were after round 1\.\n/);
  const many = Array.from({ length: SHOWN + 3 }, (_, i) => `f${i}.txt`);
  const long = rewindConfirmation(rewindPreview({ changed: many, removed: [], kept: [] })).detail.split('\n');
  assert.equal(long.filter((l) => /^ {2}f\d+\.txt$/.test(l)).length, SHOWN);
  assert.ok(long.includes('  … and 3 more'), long.join('\n'));
});

test('the fork confirmation says where the new run goes, the files it gets, and that this folder stays', () => {
  const preview: ForkResult = {
    ok: true,
    message: '',
    round: 2,
    workspace: '/p/w-fork-r2-20261202-170000',
    run_dir: '/p/w-fork-r2-20261202-170000/runs',
    worktree: true,
    files: ['a.txt', 'hello.py'],
    session_cut: true,
    rounds: [1, 2],
  };
  assertAsks(forkConfirmation(preview), 'Fork a new run from the end of round 2?', 'Fork', [
    'New workspace (a git worktree): /p/w-fork-r2-20261202-170000',
    'Its run folder: /p/w-fork-r2-20261202-170000/runs',
    '',
    'It gets the files as they were after round 2:',
    '  a.txt',
    '  hello.py',
    '',
    'This folder and its run stay as they are.',
  ]);
});
