// Workspace trust on, and this folder not trusted; no flower anywhere, and the workspace holds
// flower_lsp/ and flower/ packages that would append to $FLOWER_TEST_MARKER if imported.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { FlowerApi } from '../../src/extension';
import { activated } from '../suite/helpers';

const MARKER = process.env.FLOWER_TEST_MARKER ?? '';

function assertNothingHappened(api: FlowerApi): void {
  assert.equal(api.server.running, false, 'no language server');
  assert.equal(api.server.interpreter, undefined, 'no interpreter was even chosen');
  assert.deepEqual(
    api.setup.shown.filter((n) => n.kind !== 'refused'),
    [],
    'no offer to install',
  );
  assert.ok(!fs.existsSync(api.setup.env.dir), `nothing installed in ${api.setup.env.dir}`);
  assert.ok(MARKER && !fs.existsSync(MARKER), "the workspace's own flower never ran");
}

suite('an untrusted workspace', () => {
  test('activation offers nothing, installs nothing and starts no server', async () => {
    assert.equal(vscode.workspace.isTrusted, false, 'workspace trust is on and this folder is not trusted');
    const api = await activated();
    assert.equal(api.meter.item.text, '$(shield) Flower');
    assertNothingHappened(api);
  });

  test('Flower: Install and Flower: Restart Server do nothing there', async () => {
    const api = await activated();
    await vscode.commands.executeCommand('flower.install');
    await vscode.commands.executeCommand('flower.restartServer');
    assertNothingHappened(api);
  });

  test('the setup itself refuses, and says so', async () => {
    const api = await activated();
    assert.equal(await api.setup.install(), false);
    assert.deepEqual(api.setup.notice, {
      kind: 'refused',
      text: 'Flower installs nothing in an untrusted workspace.',
      actions: [],
    });
    assertNothingHappened(api);
  });
});
