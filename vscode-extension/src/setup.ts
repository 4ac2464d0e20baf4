// Finding a Python that runs this extension's flower, and setting flower up when there is none:
// one notification that offers the environment the extension manages, an interpreter of the
// user's choice, or instructions. Nothing happens without a click, and nothing in an untrusted
// workspace.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { candidatePythons, describeSource, type Probe, probePython, type Python } from './python';
import { ManagedEnv, SetupError } from './setupEnv';
import { setupGuide } from './setupText';

// The buttons, in VS Code's display language (the module loads after the extension's bundle).
export const INSTALL = vscode.l10n.t('Install flower into an environment managed by the extension');
export const UPDATE = vscode.l10n.t('Update flower in the managed environment');
export const CHOOSE = vscode.l10n.t('Choose an interpreter');
export const SHOW_HOW = vscode.l10n.t('Show me how');
export const RETRY = vscode.l10n.t('Retry');
export const SHOW_LOG = vscode.l10n.t('Show Log');

const GUIDE_URI = vscode.Uri.from({
  scheme: 'flower-setup',
  path: `/${vscode.l10n.t('Setting up flower')}.md`,
});

/** A notification the setup showed: what it said and which buttons it had. */
export interface Notice {
  kind: 'missing' | 'mismatch' | 'failed' | 'installed' | 'unsuitable' | 'refused';
  text: string;
  actions: string[];
}

/** An interpreter that runs this extension's flower. */
export interface Found {
  python: Python;
  flower: string;
}

/** Why no interpreter can: every one tried, with its probe. */
export interface Missing {
  probes: Probe[];
  /** The sentence the server's "not running" state shows. */
  summary: string;
}

export class FlowerSetup implements vscode.Disposable {
  /** The flower version this extension was built with (its own version: one source of truth). */
  readonly expected: string;
  readonly env: ManagedEnv;
  /** Where every probe and pip runs: never the workspace. */
  readonly workDir: string;
  private lastProbes: Probe[] = [];
  private pending: Promise<boolean> | undefined;
  private installing: Promise<boolean> | undefined;
  /** Every notification the setup showed, oldest first (the tests read them). */
  readonly shown: Notice[] = [];
  private readonly registration: vscode.Disposable;

  constructor(
    context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.expected = String(context.extension.packageJSON.version);
    this.workDir = context.globalStorageUri.fsPath;
    this.env = new ManagedEnv(path.join(this.workDir, 'env'), context.extensionUri.fsPath, this.expected);
    this.registration = vscode.workspace.registerTextDocumentContentProvider('flower-setup', {
      provideTextDocumentContent: () => this.guide(),
    });
  }

  /** The last notification shown, if any. */
  get notice(): Notice | undefined {
    return this.shown.at(-1);
  }

  /** The first interpreter that runs this extension's flower, or why none does. Starts nothing. */
  async find(folder: vscode.WorkspaceFolder | undefined): Promise<Found | Missing> {
    fs.mkdirSync(this.workDir, { recursive: true });
    const candidates = await candidatePythons(folder, this.env.exists() ? this.env.python : undefined);
    const probes: Probe[] = [];
    for (const python of candidates) {
      const probe = await probePython(python, this.workDir, this.expected);
      probes.push(probe);
      if (probe.problem) {
        this.log.info(`${python.command} (${describeSource(python.source)}) ${probe.problem}`);
        continue;
      }
      this.lastProbes = probes;
      const setting = probes.find((p) => p.python.source === 'setting');
      if (setting && setting !== probe)
        void vscode.window.showWarningMessage(
          vscode.l10n.t(
            'Flower: the flower.python setting ({0}) {1}; using {2} ({3}) instead.',
            setting.python.command,
            setting.problem ?? '',
            python.command,
            describeSource(python.source),
          ),
        );
      return { python, flower: probe.flower ?? this.expected };
    }
    this.lastProbes = probes;
    return {
      probes,
      summary: vscode.l10n.t(
        'Flower: no Python can run flower {0}: {1}.',
        this.expected,
        tried(probes).join('; '),
      ),
    };
  }

  /**
   * The one notification for a failed `find`, and whatever the click leads to. Resolves true
   * when flower was installed and the server should start; false otherwise (including when the
   * user chose an interpreter: changing flower.python restarts the server by itself).
   */
  offer(missing: Missing): Promise<boolean> {
    this.pending ??= this.offerOnce(missing).finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async offerOnce(missing: Missing): Promise<boolean> {
    const managed = missing.probes.find((p) => p.python.source === 'managed');
    const stale = managed?.flower !== undefined && managed.flower !== this.expected;
    const choice = stale
      ? await this.notify(
          'mismatch',
          vscode.l10n.t(
            'Flower: the environment the extension manages has flower {0}, and this extension needs {1}.',
            managed?.flower ?? '',
            this.expected,
          ),
          [UPDATE, CHOOSE, SHOW_HOW],
        )
      : await this.notify(
          'missing',
          vscode.l10n.t(
            'Flower: no Python here has flower {0}: {1}.',
            this.expected,
            tried(missing.probes).join('; '),
          ),
          [INSTALL, CHOOSE, SHOW_HOW],
        );
    return this.act(choice);
  }

  private async act(choice: string | undefined): Promise<boolean> {
    switch (choice) {
      case INSTALL:
      case UPDATE:
      case RETRY:
        return this.install();
      case CHOOSE:
        return this.choose();
      case SHOW_HOW:
        await this.showHow();
        return false;
      case SHOW_LOG:
        this.log.show();
        return false;
      default:
        return false;
    }
  }

  /**
   * Creates the managed environment if needed and installs this extension's flower into it, with
   * progress and every line of pip's output in the log. Resolves true when the environment then
   * has flower `expected`; a failure says what failed and offers to retry.
   */
  install(): Promise<boolean> {
    this.installing ??= this.installUntilDone().finally(() => (this.installing = undefined));
    return this.installing;
  }

  private async installUntilDone(): Promise<boolean> {
    if (!vscode.workspace.isTrusted) {
      void this.notify('refused', vscode.l10n.t('Flower installs nothing in an untrusted workspace.'), []);
      return false;
    }
    for (;;) {
      const failure = await this.installOnce();
      if (failure === undefined) break;
      this.log.error(`[setup] failed: ${failure}`);
      const choice = await this.notify(
        'failed',
        vscode.l10n.t(
          'Flower: installing flower {0} into the managed environment failed: {1} The Flower log has every line.',
          this.expected,
          failure,
        ),
        [RETRY, SHOW_LOG, SHOW_HOW],
      );
      if (choice !== RETRY) return this.act(choice);
    }
    this.log.info(`[setup] flower ${this.expected} is installed in ${this.env.dir}`);
    void this.notify(
      'installed',
      vscode.l10n.t(
        'Flower: flower {0} is installed in the environment the extension manages ({1}).',
        this.expected,
        this.env.dir,
      ),
      [SHOW_LOG],
    ).then((c) => this.act(c));
    return true;
  }

  /** One attempt; resolves with what failed, or undefined when flower is in place. */
  private async installOnce(): Promise<string | undefined> {
    const requirement = this.env.requirement();
    this.log.info(
      `[setup] installing flower ${this.expected} into ${this.env.dir} from ${requirement}` +
        (this.env.bundledWheel() ? ' (the wheel inside the extension)' : ' (the package index)'),
    );
    return vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: vscode.l10n.t('Flower: installing flower {0}', this.expected),
        cancellable: true,
      },
      async (progress, token) => {
        const hooks = { log: this.log, token, progress: (message: string) => progress.report({ message }) };
        try {
          const reuse = this.env.exists() && (await this.probeManaged()).pythonVersion !== undefined;
          await this.env.install(reuse ? undefined : await this.basePython(), reuse, hooks);
          progress.report({ message: vscode.l10n.t('checking the environment') });
          const probe = await this.probeManaged();
          return probe.problem
            ? vscode.l10n.t('after pip finished, the environment {0}.', probe.problem)
            : undefined;
        } catch (err) {
          if (err instanceof SetupError) return err.message;
          throw err;
        }
      },
    );
  }

  private probeManaged(): Promise<Probe> {
    return probePython({ command: this.env.python, source: 'managed' }, this.workDir, this.expected);
  }

  /**
   * The interpreter that creates the venv: the base of the first candidate that is Python 3.11+,
   * skipping any inside a workspace folder (the environment serves every workspace).
   */
  private async basePython(): Promise<string | undefined> {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath + path.sep);
    const usable = (probes: Probe[]) =>
      probes
        .filter((p) => p.python.source !== 'managed' && p.pythonVersion !== undefined)
        .map((p) => p.base ?? p.python.command)
        .find((base) => !folders.some((f) => base.startsWith(f)));
    const known = usable(this.lastProbes);
    if (known) return known;
    const candidates = await candidatePythons(vscode.workspace.workspaceFolders?.[0], undefined);
    const probes = await Promise.all(candidates.map((c) => probePython(c, this.workDir, this.expected)));
    return usable(probes);
  }

  /** Lets the user pick an interpreter; one that has flower becomes the flower.python setting. */
  async choose(): Promise<boolean> {
    const picked = await vscode.window.showOpenDialog({
      title: vscode.l10n.t('Flower: the Python interpreter that has flower {0}', this.expected),
      openLabel: vscode.l10n.t('Use this Python'),
      canSelectFiles: true,
      canSelectFolders: false,
      canSelectMany: false,
    });
    const command = picked?.[0]?.fsPath;
    if (!command) return false;
    const probe = await probePython({ command, source: 'setting' }, this.workDir, this.expected);
    if (probe.problem) {
      const choice = await this.notify('unsuitable', `Flower: ${command} ${probe.problem}.`, [
        INSTALL,
        CHOOSE,
        SHOW_HOW,
      ]);
      return this.act(choice);
    }
    const config = vscode.workspace.getConfiguration('flower');
    if (config.get<string>('python') === command) return true; // no change event would restart it
    await config.update('python', command, vscode.ConfigurationTarget.Global);
    return false;
  }

  /** Opens the "Show me how" page. */
  async showHow(): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(GUIDE_URI);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private guide(): string {
    return setupGuide({
      expected: this.expected,
      wheel: this.env.bundledWheel(),
      managedDir: this.env.dir,
      tried: tried(this.lastProbes).map((line) => line.replace(/^(\S+)/, '`$1`')),
    });
  }

  private notify(kind: Notice['kind'], text: string, actions: string[]): Thenable<string | undefined> {
    this.shown.push({ kind, text, actions });
    const show =
      kind === 'failed' || kind === 'unsuitable'
        ? vscode.window.showErrorMessage
        : kind === 'installed'
          ? vscode.window.showInformationMessage
          : vscode.window.showWarningMessage;
    return show(text, ...actions);
  }

  dispose(): void {
    this.registration.dispose();
  }
}

/** "python3 (the default) cannot import flower's server (...)", one per probe. */
function tried(probes: readonly Probe[]): string[] {
  return probes.map((p) =>
    vscode.l10n.t('{0} ({1}) {2}', p.python.command, describeSource(p.python.source), p.problem ?? ''),
  );
}
