// src/protocol.ts must be exactly what the server's protocol module generates.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '../../../..'); // out/test/unit -> the repository;
const python = process.env.FLOWER_PYTHON ?? path.join(root, '.venv/bin/python');

test('src/protocol.ts equals `python -m flower_lsp.protocol --typescript`', () => {
  const generated = execFileSync(python, ['-m', 'flower_lsp.protocol', '--typescript'], { encoding: 'utf8' });
  const committed = fs.readFileSync(path.join(root, 'vscode-extension/src/protocol.ts'), 'utf8');
  assert.equal(
    committed,
    generated,
    'regenerate: python -m flower_lsp.protocol --typescript > vscode-extension/src/protocol.ts',
  );
});
