// The extension's words in both languages it speaks: every string wrapped in l10n.t is in the
// English bundle (as l10n-dev extracts it now) and in the Chinese one, with the same
// placeholders and code spans; every %key% of package.json is in both nls files; and the Chinese
// pages read as a Chinese user sees them, with flower's fixed names untouched.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import * as l10n from '@vscode/l10n';
import { getL10nJson, type l10nJsonFormat } from '@vscode/l10n-dev';
import { renderState } from '../../src/format';
import type { StateResult } from '../../src/protocol';
import { readProbe, setupGuide } from '../../src/setupText';

// out/test/unit/ -> the extension's folder
const EXT = path.resolve(__dirname, '../../..');
const readJson = (file: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.join(EXT, file), 'utf8'));
const messages = (bundle: l10nJsonFormat | Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(bundle).map(([k, v]) => [
      k,
      typeof v === 'string' ? v : (v as { message: string }).message,
    ]),
  );

/** What a translation must keep: the placeholders, code spans and link targets. */
function kept(text: string): string[] {
  return [...text.matchAll(/\{\d+\}|`[^`]*`|\$\{[^}]+\}|\]\([^)]*\)/g)].map((m) => m[0]).sort();
}

function assertSameKeys(actual: Record<string, unknown>, expected: Record<string, unknown>, what: string) {
  const missing = Object.keys(expected).filter((k) => !(k in actual));
  const stale = Object.keys(actual).filter((k) => !(k in expected));
  assert.deepEqual({ missing, stale }, { missing: [], stale: [] }, what);
}

function assertTranslated(zh: Record<string, string>, en: Record<string, string>, what: string) {
  for (const [key, english] of Object.entries(en)) {
    const chinese = zh[key];
    assert.ok(typeof chinese === 'string' && chinese.trim(), `${what}: "${key}" has no Chinese`);
    assert.notEqual(chinese, english, `${what}: "${key}" is English in the Chinese file`);
    assert.deepEqual(kept(chinese), kept(english), `${what}: "${key}" lost or added a placeholder`);
  }
}

test('every l10n.t string of src/ is in l10n/bundle.l10n.json, and nothing else is', async () => {
  const src = path.join(EXT, 'src');
  const files = fs
    .readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => ({ contents: fs.readFileSync(path.join(src, f), 'utf8'), extension: '.ts' }));
  assert.ok(
    files.some((f) => f.contents.includes('acquireVsCodeApi')),
    "the webview's script is read too",
  );
  const extracted = messages(await getL10nJson(files));
  assert.ok(Object.keys(extracted).length > 50, 'the extraction found the extension strings');
  const base = messages(readJson('l10n/bundle.l10n.json'));
  assertSameKeys(base, extracted, 'l10n/bundle.l10n.json against `npx @vscode/l10n-dev export ./src`');
  assert.deepEqual(base, extracted);
});

test('l10n/bundle.l10n.zh-cn.json translates every string of the English bundle', () => {
  const en = messages(readJson('l10n/bundle.l10n.json'));
  const zh = messages(readJson('l10n/bundle.l10n.zh-cn.json'));
  assertSameKeys(zh, en, 'l10n/bundle.l10n.zh-cn.json');
  assertTranslated(zh, en, 'l10n/bundle.l10n.zh-cn.json');
});

test('every %key% of package.json is in package.nls.json and package.nls.zh-cn.json, and nothing else is', () => {
  const used = new Set(
    [...fs.readFileSync(path.join(EXT, 'package.json'), 'utf8').matchAll(/"%([^%"]+)%"/g)].map((m) => m[1]),
  );
  assert.ok(used.size > 10, 'package.json takes its titles and descriptions from the nls files');
  const en = messages(readJson('package.nls.json'));
  const zh = messages(readJson('package.nls.zh-cn.json'));
  const wanted = Object.fromEntries([...used].map((k) => [k, true]));
  assertSameKeys(en, wanted, 'package.nls.json');
  assertSameKeys(zh, wanted, 'package.nls.zh-cn.json');
  assertTranslated(zh, en, 'package.nls.zh-cn.json');
});

test("the Chinese state page: Chinese labels, flower's names and the run's words untouched", () => {
  l10n.config({ contents: readJson('l10n/bundle.l10n.zh-cn.json') as l10nJsonFormat });
  const state: StateResult = {
    folder: 'file:///w',
    workspace: '/w',
    running: false,
    step: '干活',
    index: 3,
    total: 3,
    round: 1,
    generation: 2,
    used: 71_400,
    window: 200_000,
    near: false,
    handing_off: false,
    cost_usd: 0.5,
    waking: true,
    woke: 2,
    brief: '/w/.flower/notes/需求.md',
    goal: '/w/.flower/notes/目标.md',
    checks: 3,
    run_dir: '/w/runs',
    verdict: null,
    pending: [],
    steps: { 确认需求: 's1', 干活: 's2' },
  };
  const page = renderState(state);
  assert.ok(page.startsWith('# Flower 状态:/w\n'), page);
  assert.ok(page.includes('- **运行中**: 否(步骤 干活,第 3 步,共 3 步)'), page);
  assert.ok(page.includes('- **需求**: /w/.flower/notes/需求.md'), page);
  assert.ok(page.includes('- **目标**: /w/.flower/notes/目标.md(3 项检查)'), page);
  assert.ok(page.includes('- **可以继续**: 是; 已唤醒 2 次'), page);
  assert.ok(page.includes('## 会话\n\n- 确认需求: `s1`\n- 干活: `s2`'), page);
});

test('the Chinese setup page names the commands as the Chinese palette shows them', () => {
  l10n.config({ contents: readJson('l10n/bundle.l10n.zh-cn.json') as l10nJsonFormat });
  const nls = messages(readJson('package.nls.zh-cn.json'));
  const page = setupGuide({ expected: '0.1.0', managedDir: '/env', tried: ['`python3`(默认)找不到'] });
  for (const command of ['install', 'restartServer'])
    assert.ok(page.includes(`**Flower: ${nls[`command.${command}.title`]}**`), page);
  assert.ok(page.startsWith('# 为 Flower 扩展安装 flower 0.1.0\n'), page);
  assert.equal(
    readProbe({ errno: 'ENOENT', exitCode: null, stdout: '', stderr: '' }, '0.1.0').problem,
    '找不到',
  );
});
