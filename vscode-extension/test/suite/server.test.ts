// The extension starts the real language server with the configured Python and leaves the
// server's commands to the language client.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { COMMANDS } from '../../src/protocol';
import { CHOOSE, INSTALL, SHOW_HOW } from '../../src/setup';
import { EXTENSION_ID, flower, waitFor } from './helpers';

suite('language server', () => {
  test('starts python -m flower_lsp with the interpreter from the flower.python setting', async () => {
    const api = await flower();
    assert.equal(api.server.problem, undefined);
    assert.ok(api.server.running, 'the language client is running');
    const configured = vscode.workspace.getConfiguration('flower').get<string>('python');
    assert.deepEqual(api.server.interpreter, { command: configured, source: 'setting' });
  });

  test("the server's commands are registered once, by the language client", async () => {
    const api = await flower();
    const listed =
      api.server.languageClient?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    assert.deepEqual(
      [...listed].sort(),
      [...COMMANDS].sort(),
      'executeCommandProvider lists the protocol commands',
    );
    const all = new Set(await vscode.commands.getCommands(true));
    for (const id of COMMANDS) assert.ok(all.has(id), `${id} is a command in VS Code`);
    // The palette shows flower.continue and flower.stop through contributes only.
    const extension = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(extension, `${EXTENSION_ID} is installed`);
    const contributed = (extension.packageJSON.contributes.commands as { command: string }[]).map(
      (c) => c.command,
    );
    assert.deepEqual(contributed.filter((c) => (COMMANDS as readonly string[]).includes(c)).sort(), [
      'flower.continue',
      'flower.stop',
    ]);
  });

  test('Flower: Show State opens the state of the folder', async () => {
    const api = await flower();
    await vscode.commands.executeCommand('flower.showState');
    const editor = await waitFor('the state document', () =>
      vscode.window.activeTextEditor?.document.uri.scheme === 'flower'
        ? vscode.window.activeTextEditor
        : undefined,
    );
    const text = editor.document.getText();
    assert.match(text, /^# Flower state: /);
    assert.match(text, /\*\*Running\*\*: no/);
    assert.ok(text.includes('需求.md'), 'names the brief');
    assert.ok(api.meter.item.text.startsWith('Flower'), `meter: ${api.meter.item.text}`);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  test('Flower: Say with nothing running is refused with the reason', async () => {
    await flower();
    const result = await vscode.commands.executeCommand<{ ok: boolean; message: string }>(
      'flower.sayPrompt',
      '先别动 README',
    );
    assert.equal(result?.ok, false);
    assert.match(result?.message ?? '', /^Nothing is running in /);
  });

  test('the meter takes the warning colour near the handoff threshold', async () => {
    const { meter } = await flower();
    const ctx = {
      folder: 'file:///w',
      used: 850_000,
      window: 1_000_000,
      warn_at: 800_000,
      at: 900_000,
      step: '干活',
      round: 2,
      generation: 1,
      cost_usd: 3.2,
      near: false,
      handing_off: false,
    };
    try {
      meter.update(ctx);
      assert.equal(meter.item.text, 'Flower 850K / 1M');
      assert.equal(meter.item.backgroundColor, undefined);
      meter.update({ ...ctx, near: true });
      assert.equal(
        (meter.item.backgroundColor as unknown as { id: string } | undefined)?.id,
        'statusBarItem.warningBackground',
      );
      assert.match(String(meter.item.tooltip), /step 干活 · round 2 · generation 1/);
    } finally {
      meter.update(undefined);
    }
  });

  test('a Python without flower gives the reason and the offer to set flower up, and the server comes back', async () => {
    const api = await flower();
    const config = vscode.workspace.getConfiguration('flower');
    const good = config.get<string>('python', '');
    const bad = process.env.FLOWER_TEST_BARE_PYTHON ?? '/usr/bin/python3';
    await config.update('python', bad, vscode.ConfigurationTarget.Global);
    try {
      const problem = await waitFor('the missing-flower reason', () => api.server.problem);
      assert.ok(
        problem.includes(`${bad} (the flower.python setting) cannot import flower's server`),
        problem,
      );
      const offer = await waitFor('the offer', () => api.setup.notice);
      assert.equal(offer.kind, 'missing');
      assert.deepEqual(offer.actions, [INSTALL, CHOOSE, SHOW_HOW]);
      assert.equal(api.server.running, false);
      assert.equal(api.meter.item.text, '$(warning) Flower');
    } finally {
      await config.update('python', good, vscode.ConfigurationTarget.Global);
    }
    await waitFor('the server to run again', () => api.server.running && !api.server.problem);
    assert.equal(api.meter.item.command, 'flower.showContextChart'); // a click opens the context chart
  });
});
