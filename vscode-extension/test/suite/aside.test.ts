// Side questions from the editor: "Flower: Ask Aside" through the real server and engine, with
// flower.sim's starter scenario as the model (its oracle gives one answer to any question).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AsideResult } from '../../src/protocol';
import { flower, workspaceFolder } from './helpers';

// flower.sim.scenarios.ASIDE_ANSWER
const ANSWER = '现在在干活这一步:coder 写好了 hello.py,判定者在核对 README.md。';

suite('side questions from the editor', () => {
  test('Flower: Ask Aside answers where it was asked, from books of its own, leaving the run books alone', async function () {
    this.timeout(120_000);
    await flower();
    const result = await vscode.commands.executeCommand<AsideResult>('flower.askAside', '现在到哪一步了?');
    assert.ok(result, 'the command returns the answer');
    assert.equal(result.ok, true, result.message);
    assert.equal(result.answer, ANSWER);
    assert.ok((result.cost_usd ?? 0) > 0, `cost ${result.cost_usd}`);
    // the server speaks the editor's language (initialize's locale)
    const [head, undisturbed] = vscode.env.language.startsWith('zh')
      ? ['旁路($', '没有打扰正在跑的运行']
      : ['aside ($', 'the running run was not disturbed'];
    assert.ok(result.message.startsWith(head) && result.message.includes(undisturbed), result.message);

    const runs = path.join(workspaceFolder().uri.fsPath, 'runs');
    const rows = JSON.parse(fs.readFileSync(path.join(runs, 'aside', 'manifest.json'), 'utf8'));
    assert.deepEqual(
      rows.map((r: { step: string }) => r.step),
      ['旁路问答'],
    );
    assert.equal(rows[0].cost_usd, result.cost_usd);
    assert.ok(!fs.existsSync(path.join(runs, 'manifest.json')), "the folder's own manifest is untouched");
  });

  test('an empty question asks nothing', async () => {
    await flower();
    assert.equal(await vscode.commands.executeCommand('flower.askAside', '   '), undefined);
  });
});
