import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

const LOCALE = process.env.FLOWER_TEST_LOCALE ?? '';

suite(`VS Code in ${LOCALE}`, () => {
  test('the display language is the one code-server was given', () => {
    assert.equal(vscode.env.language, LOCALE);
  });
});
