// The extensionTestsPath module: VS Code loads it inside the extension host and calls run().
// Mocha (tdd) runs the suite file named by $FLOWER_TEST_FILE (test/run.mjs gives every file a
// VS Code, a workspace and a flower.sim of its own), else every *.test.js beside it; the outcome
// of each test is also written as JSON to $FLOWER_TEST_RESULTS for the runner outside the browser.
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

interface Outcome {
  title: string;
  ok: boolean;
  ms: number;
  error?: string;
}

export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', color: false, timeout: 120_000, reporter: 'spec' });
  const only = process.env.FLOWER_TEST_GREP;
  if (only) mocha.grep(only);
  const one = process.env.FLOWER_TEST_FILE;
  const files = fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.test.js') && (!one || f === one))
    .sort();
  if (one && files.length === 0) throw new Error(`no in-host suite ${one} in ${__dirname}`);
  for (const f of files) mocha.addFile(path.join(__dirname, f));

  const outcomes: Outcome[] = [];
  const failures = await new Promise<number>((resolve) => {
    const runner = mocha.run((n) => resolve(n));
    runner.on('pass', (t) => outcomes.push({ title: t.fullTitle(), ok: true, ms: t.duration ?? 0 }));
    runner.on('fail', (t, err: Error) =>
      outcomes.push({
        title: t.fullTitle(),
        ok: false,
        ms: t.duration ?? 0,
        error: err?.stack ?? String(err),
      }),
    );
  });
  const out = process.env.FLOWER_TEST_RESULTS;
  if (out) fs.writeFileSync(out, JSON.stringify(outcomes, null, 2));
  if (failures > 0) throw new Error(`${failures} in-host test(s) failed`);
}
