// Flower's settings, typed, per workspace folder, with `${workspaceFolder}`-style variables
// expanded, and as the server takes them: InitOptions, sent as initializationOptions at start
// and with workspace/didChangeConfiguration on every change (the server applies them from the
// next run and says so). No `vscode` value import: plain Node tests run this module.
import * as os from 'node:os';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { type InitOptions, SETTINGS_SECTION } from './protocol';
import { splitStore } from './store';

export const SECTION = 'flower';

export type Trace = 'off' | 'messages' | 'verbose';

export type Sandbox = NonNullable<InitOptions['sandbox']>;
const SANDBOX_MODES: readonly Sandbox[] = ['auto', 'require', 'off'];

/** One folder's settings, as package.json declares them. */
export interface FlowerSettings {
  /** flower.runDirectory: where a folder's runs live (relative to the folder, or absolute). */
  runDirectory: string;
  /** flower.questionTimeout: seconds a question waits; 0 = never wait, null = forever. */
  questionTimeout: number | null;
  /** flower.contextWindow: the model's context window for handoffs; null = from the model. */
  contextWindow: number | null;
  /** flower.sandbox: how the agents' Bash commands are confined. */
  sandbox: Sandbox;
  /** flower.budget: dollars a run may spend; null = no ceiling. */
  budget: number | null;
  /** flower.roundBudget: dollars each round may spend; null = no ceiling. */
  roundBudget: number | null;
  /** flower.stallRounds: rounds without progress before the run stops and asks; 0 = never, null = the server's default (3). */
  stallRounds: number | null;
  /** flower.notify: a command run with each notice as JSON on stdin; '' = none. */
  notify: string;
  /** flower.judgeCanRun: the judge may run commands to check the work (it can then change the workspace too). */
  judgeCanRun: boolean;
  /** flower.trace.server: the LSP trace; the language client applies it itself, live. */
  trace: Trace;
}

export const DEFAULTS: FlowerSettings = {
  runDirectory: 'runs',
  questionTimeout: 1800,
  contextWindow: null,
  sandbox: 'auto',
  budget: null,
  roundBudget: null,
  stallRounds: null,
  notify: '',
  judgeCanRun: false,
  trace: 'off',
};

/** The settings the server takes (InitOptions): a change is sent to it, no restart. */
export const SERVER_SETTINGS = [
  'runDirectory',
  'questionTimeout',
  'contextWindow',
  'sandbox',
  'budget',
  'roundBudget',
  'stallRounds',
  'notify',
  'judgeCanRun',
] as const;
/** The settings whose change restarts the server (another interpreter runs it then). */
export const RESTART_SETTINGS = ['python', 'store'] as const;
/** The settings the language client applies itself. */
export const CLIENT_SETTINGS = ['trace.server'] as const;

/** What the settings need of a workspace folder. */
export interface Folder {
  uri: { toString(): string; fsPath: string };
  name: string;
}

/** Where the settings are read from (vscode.WorkspaceConfiguration, scoped to a folder). */
export type Reader = Pick<vscode.WorkspaceConfiguration, 'get'>;

/** `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function expand(value: string, folder: Folder | undefined, env = process.env): string {
  let out = value.trim();
  if (out === '~' || out.startsWith('~/')) out = os.homedir() + out.slice(1);
  out = out.replace(/\$\{userHome\}/g, os.homedir());
  out = out.replace(/\$\{env:([^}]+)\}/g, (_, name: string) => env[name] ?? '');
  if (folder) {
    out = out.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
    out = out.replace(/\$\{workspaceFolderBasename\}/g, path.basename(folder.uri.fsPath) || folder.name);
  }
  return out;
}

const number = (value: unknown, fallback: number | null): number | null =>
  value === null
    ? null
    : typeof value === 'number' && Number.isFinite(value) && value >= 0
      ? value
      : fallback;

// a count of rounds: a whole number from 0, anything else the server's default
const rounds = (value: unknown): number | null =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;

// a ceiling in dollars: a positive number, anything else (0, null, a string) none
const dollars = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null;

/** One folder's settings (or the window's, without a folder), checked and expanded. */
export function readSettings(config: Reader, folder: Folder | undefined): FlowerSettings {
  const runDirectory = config.get<unknown>('runDirectory', DEFAULTS.runDirectory);
  const trace = config.get<unknown>('trace.server', DEFAULTS.trace);
  const sandbox = config.get<unknown>('sandbox', DEFAULTS.sandbox);
  const notify = config.get<unknown>('notify', DEFAULTS.notify);
  return {
    runDirectory:
      typeof runDirectory === 'string' && runDirectory.trim()
        ? expand(runDirectory, folder)
        : DEFAULTS.runDirectory,
    questionTimeout: number(config.get<unknown>('questionTimeout'), DEFAULTS.questionTimeout),
    contextWindow: number(config.get<unknown>('contextWindow'), DEFAULTS.contextWindow),
    sandbox: SANDBOX_MODES.find((mode) => mode === sandbox) ?? DEFAULTS.sandbox,
    budget: dollars(config.get<unknown>('budget')),
    roundBudget: dollars(config.get<unknown>('roundBudget')),
    stallRounds: rounds(config.get<unknown>('stallRounds')),
    notify: typeof notify === 'string' ? notify.trim() : DEFAULTS.notify,
    judgeCanRun: config.get<unknown>('judgeCanRun') === true,
    trace: trace === 'messages' || trace === 'verbose' ? trace : 'off',
  };
}

/** The server's options for one folder's settings. */
export function toOptions(s: FlowerSettings): InitOptions {
  return {
    run_dir: s.runDirectory,
    timeout_s: s.questionTimeout,
    window: s.contextWindow === null ? null : Math.round(s.contextWindow),
    sandbox: s.sandbox,
    budget_usd: s.budget,
    round_budget_usd: s.roundBudget,
    stall_rounds: s.stallRounds,
    notify: s.notify || null,
    judge_can_run: s.judgeCanRun,
  };
}

/**
 * initializationOptions for these folders: each folder's own options under `folders` (keyed by
 * its URI, as the client names it to the server), the first folder's also at the top level,
 * with the window's shared store at the top and in each folder's.
 */
export function initOptions<F extends Folder>(
  folders: readonly F[],
  read: (folder: F | undefined) => Reader,
): InitOptions {
  // flower.store is the window's, read by the server once, without its password (the server has
  // that in its environment, PGPASSWORD: see server.ts); in every folder's options too, since a
  // folder's own entry replaces the top-level options whole
  const store = splitStore(read(undefined).get<string>('store', ''));
  const shared = store ? { store: store.url } : {};
  const top = toOptions(readSettings(read(folders[0]), folders[0]));
  const own: Record<string, InitOptions> = {};
  for (const folder of folders)
    own[folder.uri.toString()] = { ...toOptions(readSettings(read(folder), folder)), ...shared };
  return { ...top, ...shared, folders: own };
}

/** workspace/didChangeConfiguration's params for these options. */
export function changeParams(options: InitOptions): { settings: Record<string, InitOptions> } {
  return { settings: { [SETTINGS_SECTION]: options } };
}

/** How a configuration change reaches the server: a restart, a push of the options, or neither. */
export function reaction(affects: (setting: string) => boolean): 'restart' | 'send' | 'none' {
  const full = (names: readonly string[]) => names.map((n) => `${SECTION}.${n}`);
  if (full(RESTART_SETTINGS).some(affects)) return 'restart';
  if (full(SERVER_SETTINGS).some(affects)) return 'send';
  return 'none';
}
