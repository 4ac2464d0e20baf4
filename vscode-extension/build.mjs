// Bundle the extension (one CommonJS file, `vscode` left to the host) and the tests.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';

const production = process.argv.includes('--production');
const common = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'warning' };

await build({
  ...common,
  entryPoints: ['src/extension.ts'],
  outfile: 'dist/extension.js',
  external: ['vscode'],
  minify: production,
  sourcemap: production ? false : 'linked',
});

// The test bundles are rebuilt from scratch: a suite renamed or deleted must not run from a stale copy.
rmSync('out/test', { recursive: true, force: true });
// The context chart's page script, for the webview (a browser, no Node).
await build({
  ...common,
  platform: 'browser',
  format: 'iife',
  target: 'chrome120',
  entryPoints: ['src/webview/chart.ts'],
  outfile: 'dist/chart.js',
  minify: production,
  sourcemap: production ? false : 'inline',
});

const tests = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `${dir}/${f}`);
// In-host suites run inside the extension host: mocha is loaded from node_modules there. Each
// folder is one code-server run (suite: flower configured; setup: none anywhere; untrusted).
for (const suites of ['suite', 'setup', 'untrusted'])
  await build({
    ...common,
    entryPoints: tests(`test/${suites}`),
    outdir: `out/test/${suites}`,
    external: ['vscode', 'mocha'],
    sourcemap: 'inline',
  });
// Pure helpers, tested with node's own runner (no VS Code needed).
await build({
  ...common,
  entryPoints: tests('test/unit'),
  outdir: 'out/test/unit',
  external: ['vscode'],
  sourcemap: 'inline',
});
