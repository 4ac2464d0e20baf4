// The extension in VS Code set to each display language it speaks ($FLOWER_TEST_LOCALE): its own
// words (status bar, state page, contributed command titles) are in that language, and the
// language server is told the language in initialize so that it can speak it too.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { EXTENSION_ID, flower, waitFor } from '../suite/helpers';

const LOCALE = process.env.FLOWER_TEST_LOCALE ?? '';

interface Words {
  tooltip: string;
  title: string;
  running: string;
  command: string;
  chart: string;
}

const WORDS: Record<string, Words> = {
  'zh-cn': {
    tooltip: 'Flower:还没有运行报告它的上下文。点击查看上下文图表。',
    title: '# Flower 状态:',
    running: '- **运行中**: 否',
    command: '显示状态',
    chart: '上下文 · workspace',
  },
  en: {
    tooltip: 'Flower: no run has reported its context yet. Click for the context chart.',
    title: '# Flower state: ',
    running: '- **Running**: no',
    command: 'Show State',
    chart: 'Context · workspace',
  },
};

suite(`VS Code in ${LOCALE}`, () => {
  const words = WORDS[LOCALE];

  test('the display language is the one VS Code was set to', () => {
    assert.ok(words, `no expected words for ${LOCALE}`);
    assert.equal(vscode.env.language, LOCALE);
  });

  test("the language server was told that language in initialize's locale", async () => {
    const api = await flower();
    assert.equal(api.server.running, true, api.server.problem);
    assert.equal(api.server.locale, LOCALE);
  });

  test("the meter's tooltip and the state page are in that language", async () => {
    const api = await flower();
    assert.equal(api.meter.item.tooltip, words.tooltip);
    await vscode.commands.executeCommand('flower.showState');
    const editor = await waitFor('the state page', () =>
      vscode.window.activeTextEditor?.document.uri.scheme === 'flower'
        ? vscode.window.activeTextEditor
        : undefined,
    );
    const page = editor.document.getText();
    assert.ok(page.startsWith(words.title), page);
    assert.ok(page.includes(words.running), page);
    // flower's fixed names stay as the seeds write them, in every language
    assert.ok(page.includes('.flower/notes/需求.md'), page);
  });

  test("the context chart's tab is titled in that language, and its page draws with that bundle", async () => {
    const api = await flower();
    const { chart } = api.history;
    // the page script reports each drawing: it ran, with the bundle the panel gave it
    const drawn = new Promise((resolve) => chart.onDidRender(resolve));
    await vscode.commands.executeCommand('flower.showContextChart');
    await drawn;
    const tab = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .find((t) => t.input instanceof vscode.TabInputWebview);
    assert.equal(tab?.label, words.chart);
  });

  test('the contributed command titles come from the nls file of that language', () => {
    const manifest = vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON;
    const command = manifest.contributes.commands.find(
      (c: { command: string }) => c.command === 'flower.showState',
    );
    // a translated title comes as { value, original }: the palette also matches the English one
    const title = typeof command.title === 'string' ? command.title : command.title.value;
    assert.equal(title, words.command);
  });
});
