// The Python environment the extension manages: a venv in its global storage into which pip
// installs the wheel that ships inside the extension (or, in a build without one, flower-agents
// by name and version from the package index). Every line pip says goes to the log.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as l10n from '@vscode/l10n';
import type * as vscode from 'vscode';
import { SAFE_PATH } from './python';
import { pipFailure, pipProgress } from './setupText';

/** A failed install step; the message is the sentence the user is shown. */
export class SetupError extends Error {}

export interface InstallHooks {
  log: vscode.LogOutputChannel;
  /** A short line for the progress notification. */
  progress(message: string): void;
  token: vscode.CancellationToken;
}

export class ManagedEnv {
  constructor(
    /** The venv's folder. */
    readonly dir: string,
    private readonly extensionDir: string,
    readonly expected: string,
  ) {}

  get python(): string {
    return process.platform === 'win32'
      ? path.join(this.dir, 'Scripts', 'python.exe')
      : path.join(this.dir, 'bin', 'python');
  }

  exists(): boolean {
    return fs.existsSync(this.python);
  }

  /** The wheel of this version inside the extension, when its build put one there. */
  bundledWheel(): string | undefined {
    const wheel = path.join(this.extensionDir, 'wheels', `flower_agents-${this.expected}-py3-none-any.whl`);
    return fs.existsSync(wheel) ? wheel : undefined;
  }

  /** What pip installs: the bundled wheel, else the package by name and version. */
  requirement(): string {
    return this.bundledWheel() ?? `flower-agents==${this.expected}`;
  }

  /**
   * Creates the venv with `base` (unless `reuse` and a venv is there), then installs flower into
   * it with pip. A venv this call created is removed again when the install fails.
   */
  async install(base: string | undefined, reuse: boolean, hooks: InstallHooks): Promise<void> {
    const cwd = path.dirname(this.dir);
    fs.mkdirSync(cwd, { recursive: true });
    let created = false;
    if (!(reuse && this.exists())) {
      if (!base)
        throw new SetupError(l10n.t('no Python 3.11 or newer was found to create the environment with.'));
      fs.rmSync(this.dir, { recursive: true, force: true });
      hooks.progress(l10n.t('creating the environment'));
      const venv = await run(base, [SAFE_PATH, '-m', 'venv', this.dir], cwd, hooks);
      if (venv.code !== 0 || !this.exists()) {
        fs.rmSync(this.dir, { recursive: true, force: true });
        throw new SetupError(
          venv.cancelled
            ? l10n.t('cancelled while creating the environment.')
            : l10n.t('`{0} -m venv` failed (exit code {1}): {2}', base, String(venv.code), tail(venv.lines)),
        );
      }
      created = true;
    }
    const requirement = this.requirement();
    hooks.progress(`pip install ${path.basename(requirement)}`);
    const pip = await run(
      this.python,
      [
        SAFE_PATH,
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--no-input',
        '--progress-bar',
        'off',
        requirement,
      ],
      cwd,
      hooks,
    );
    if (pip.code === 0) return;
    if (created) fs.rmSync(this.dir, { recursive: true, force: true });
    throw new SetupError(
      pip.cancelled ? l10n.t('cancelled while pip was installing.') : pipFailure(pip.lines, pip.code),
    );
  }
}

interface Ran {
  code: number | null;
  lines: string[];
  cancelled: boolean;
}

/** Runs a command, logging each output line and passing pip's milestones to the progress. */
function run(command: string, args: string[], cwd: string, hooks: InstallHooks): Promise<Ran> {
  hooks.log.info(`[setup] $ ${[command, ...args].join(' ')}`);
  return new Promise((resolve) => {
    const lines: string[] = [];
    let cancelled = false;
    const child = spawn(command, args, { cwd, env: process.env, windowsHide: true });
    const onCancel = hooks.token.onCancellationRequested(() => {
      cancelled = true;
      child.kill();
    });
    const take = (stream: NodeJS.ReadableStream) => {
      let rest = '';
      stream.on('data', (chunk: Buffer) => {
        const parts = (rest + chunk.toString()).split(/\r?\n/);
        rest = parts.pop() ?? '';
        for (const line of parts) see(line);
      });
      stream.on('end', () => rest && see(rest));
    };
    const see = (line: string) => {
      lines.push(line);
      hooks.log.info(`[setup] ${line}`);
      const milestone = pipProgress(line);
      if (milestone) hooks.progress(milestone);
    };
    take(child.stdout);
    take(child.stderr);
    child.on('error', (err) => see(String(err)));
    child.on('close', (code) => {
      onCancel.dispose();
      hooks.log.info(`[setup] exit code ${code}`);
      resolve({ code, lines, cancelled });
    });
  });
}

function tail(lines: string[]): string {
  const said = lines.map((l) => l.trim()).filter(Boolean);
  return said.slice(-3).join(' ') || l10n.t('no output');
}
