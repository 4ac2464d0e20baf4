// The setup's words: what an interpreter's answer means, what a failed pip run comes down to.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { pipFailure, pipProgress, readProbe, setupGuide } from '../../src/setupText';

const answer = (fields: Record<string, string>) => ({
  exitCode: 0,
  stdout: `${JSON.stringify(fields)}\n`,
  stderr: '',
});

test('an interpreter with the expected flower can run the server', () => {
  assert.deepEqual(
    readProbe(answer({ python: '3.11.7', base: '/usr/bin/python3.11', flower: '0.1.0' }), '0.1.0'),
    {
      pythonVersion: '3.11.7',
      base: '/usr/bin/python3.11',
      flower: '0.1.0',
    },
  );
});

test('another flower version is a mismatch that names both versions', () => {
  const r = readProbe(answer({ python: '3.12.1', flower: '0.0.1' }), '0.1.0');
  assert.equal(r.flower, '0.0.1');
  assert.equal(r.problem, 'has flower 0.0.1, and this extension needs 0.1.0');
});

test('an interpreter without flower says which import failed, and still counts as a Python to build on', () => {
  const r = readProbe(
    answer({ python: '3.11.7', error: "ModuleNotFoundError: No module named 'flower_lsp'" }),
    '0.1.0',
  );
  assert.equal(r.pythonVersion, '3.11.7');
  assert.equal(
    r.problem,
    "cannot import flower's server (ModuleNotFoundError: No module named 'flower_lsp')",
  );
});

test('a Python older than 3.11 is recognised by its refusal of -P', () => {
  const r = readProbe(
    { exitCode: 2, stdout: '', stderr: 'Unknown option: -P\nusage: python3.10 [option] ...\n' },
    '0.1.0',
  );
  assert.deepEqual(r, { problem: 'is older than Python 3.11, and flower needs 3.11 or newer' });
});

test('a missing interpreter, a hung one and one that printed nonsense each say so', () => {
  assert.equal(
    readProbe({ errno: 'ENOENT', exitCode: null, stdout: '', stderr: '' }, '1').problem,
    'was not found',
  );
  assert.equal(
    readProbe({ errno: 'timeout', exitCode: null, stdout: '', stderr: '' }, '1').problem,
    'did not answer within 30 s',
  );
  assert.equal(
    readProbe({ exitCode: 1, stdout: '', stderr: 'Fatal Python error: init_fs_encoding\n' }, '1').problem,
    'did not answer (exit code 1: Fatal Python error: init_fs_encoding)',
  );
});

test('an offline pip run says what it could not find and that the index was unreachable', () => {
  const lines = [
    'Processing /ext/wheels/flower_agents-0.1.0-py3-none-any.whl',
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/aiohttp/",
    'ERROR: Could not find a version that satisfies the requirement aiohttp>=3.10 (from flower-agents) (from versions: none)',
    'ERROR: No matching distribution found for aiohttp>=3.10',
  ];
  assert.equal(
    pipFailure(lines, 1),
    'pip exited with code 1: No matching distribution found for aiohttp>=3.10. ' +
      'pip could not reach the package index ([Errno 111] Connection refused): is this machine offline, or does it need a proxy?',
  );
});

test('any other pip failure gives its last error line, or its last line', () => {
  assert.equal(
    pipFailure(
      ['ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device'],
      1,
    ),
    'pip exited with code 1: Could not install packages due to an OSError: [Errno 28] No space left on device.',
  );
  assert.equal(pipFailure(['Killed'], null), 'pip exited with code null: Killed.');
});

test("pip's milestones become progress lines; the rest stays in the log", () => {
  assert.equal(
    pipProgress('Collecting pygls==2.1.1 (from flower-agents)'),
    'Collecting pygls==2.1.1 (from flower-agents)',
  );
  assert.equal(pipProgress('  Downloading x.whl (1 kB)'), 'Downloading x.whl (1 kB)');
  assert.equal(pipProgress('Requirement already satisfied: six'), undefined);
  assert.ok(pipProgress(`Installing collected packages: ${'a, '.repeat(60)}`)?.endsWith('...'));
});

test('the guide names the bundled wheel, the managed folder and every interpreter tried', () => {
  const page = setupGuide({
    expected: '0.1.0',
    wheel: '/ext/wheels/flower_agents-0.1.0-py3-none-any.whl',
    managedDir: '/storage/env',
    tried: ["`python3` (the default) cannot import flower's server (...)"],
  });
  assert.match(page, /^# Setting up flower 0\.1\.0/);
  assert.ok(page.includes('pipx install /ext/wheels/flower_agents-0.1.0-py3-none-any.whl'));
  assert.ok(page.includes('/storage/env'));
  assert.ok(page.includes("- `python3` (the default) cannot import flower's server (...)"));
  const byName = setupGuide({ expected: '0.1.0', managedDir: '/s', tried: [] });
  assert.ok(byName.includes('pip install flower-agents==0.1.0'));
});
