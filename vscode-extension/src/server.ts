// The language server's lifecycle: find a Python with this extension's flower (or have the
// setup offer one), start `python -P -m flower_lsp` over stdio outside the workspace with the
// folders' settings, declare the flower extensions handled here, and wire flower's custom
// notifications and requests.
import * as vscode from 'vscode';
import {
  type ClientCapabilities,
  DidChangeConfigurationNotification,
  type FeatureState,
  type InitializeParams,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { onNotification, onRequest, request } from './calls';
import { eventLine } from './format';
import { CancellableProgress } from './progress';
import type { Meter } from './meter';
import {
  ASK,
  BANNER,
  type BannerParams,
  type CommandResult,
  CONTEXT,
  EVENT,
  type EventParams,
  EXPERIMENTAL_KEY,
  type FlowerCapabilities,
  type InitOptions,
  START,
  STATE,
  type StateResult,
} from './protocol';
import { describeSource, hasPythonExtension, type Python, SAFE_PATH } from './python';
import { splitStore } from './store';
import type { Questions } from './questions';
import { changeParams, initOptions, SECTION } from './settings';
import type { FlowerSetup } from './setup';

/**
 * The flower extensions this client handles (docs/protocol.md): every one but `offer`, which it
 * leaves to the server's own message request.
 */
export const EXTENSIONS: FlowerCapabilities = {
  ask: true,
  banner: true,
  context: true,
  event: true,
  results: true,
  history: true,
  fleet: true,
};

/**
 * Declares EXTENSIONS under initialize's capabilities.experimental, and keeps the locale the
 * client sends (vscode.env.language): the server speaks that language to the person.
 */
class FlowerExtensions implements StaticFeature {
  locale: string | undefined;
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object), [EXPERIMENTAL_KEY]: EXTENSIONS };
  }
  fillInitializeParams(params: InitializeParams): void {
    this.locale = params.locale;
  }
  getState(): FeatureState {
    return { kind: 'static' };
  }
  initialize(): void {}
  clear(): void {}
}

/** The folders' settings as the server takes them, read now. */
function currentOptions(): InitOptions {
  return initOptions(vscode.workspace.workspaceFolders ?? [], (folder) =>
    vscode.workspace.getConfiguration(SECTION, folder?.uri),
  );
}

export class FlowerServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private progressFeature: CancellableProgress | undefined;
  private extensionsFeature: FlowerExtensions | undefined;
  private starting: Promise<void> | undefined;
  private python: Python | undefined;
  private problemText: string | undefined;
  /** The setup's offer while it is open: a second start must not answer it twice. */
  private offering: Promise<void> | undefined;
  /** The options last sent to the running server (initializationOptions, then each change). */
  private sentOptions: InitOptions | undefined;
  private readonly banners = new vscode.EventEmitter<BannerParams>();
  private readonly events = new vscode.EventEmitter<EventParams>();
  /** Banners and events as they arrive (the UI shows them; tests also listen). */
  readonly onBanner = this.banners.event;
  readonly onEvent = this.events.event;
  /** Parts that wire themselves into every client this server starts (features, handlers). */
  private readonly parts: ((client: LanguageClient) => void)[] = [];

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly meter: Meter,
    private readonly questions: Questions,
    private readonly setup: FlowerSetup,
  ) {}

  /** Add a part to every language client started from now on (before it starts). */
  extend(part: (client: LanguageClient) => void): void {
    this.parts.push(part);
  }

  get languageClient(): LanguageClient | undefined {
    return this.client;
  }

  /** The running step's progress notifications (Cancel stops the run). */
  get progress(): CancellableProgress | undefined {
    return this.progressFeature;
  }

  get interpreter(): Python | undefined {
    return this.python;
  }

  /** Why the server is not running, when it is not. */
  get problem(): string | undefined {
    return this.problemText;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The display language the running server was told in initialize (`locale`). */
  get locale(): string | undefined {
    return this.running ? this.extensionsFeature?.locale : undefined;
  }

  /** The options the server was last given. */
  get options(): InitOptions | undefined {
    return this.sentOptions;
  }

  /** Send the folders' settings as they are now; the server applies them from the next run. */
  async sendSettings(): Promise<void> {
    const client = this.client;
    if (!client || !this.running) return;
    const options = currentOptions();
    await client.sendNotification(DidChangeConfigurationNotification.type, changeParams(options));
    this.sentOptions = options;
    this.log.info('settings sent to the language server (it says below what changed and when it applies)');
  }

  /** Start unless started; concurrent callers share one attempt. Never rejects: failures are shown. */
  start(): Promise<void> {
    if (this.client && !this.starting) return Promise.resolve();
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    void vscode.commands.executeCommand('setContext', 'flower.serverReady', false);
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.log.warn(`stopping the language server: ${String(err)}`);
      }
      await client.dispose();
    }
  }

  async state(): Promise<StateResult> {
    return request(await this.ready(), STATE, {});
  }

  /** The running client, or an error that says why there is none. */
  async ready(): Promise<LanguageClient> {
    await this.starting;
    if (this.client && this.running) return this.client;
    throw new Error(
      this.problemText ??
        vscode.l10n.t('The Flower language server is not running. Run "Flower: Restart Server".'),
    );
  }

  private async doStart(): Promise<void> {
    this.problemText = undefined;
    const folder = vscode.workspace.workspaceFolders?.[0];
    const found = await this.setup.find(folder);
    if (!('python' in found)) {
      // The setup's notification is the one message; the meter keeps the reason on hover.
      this.python = undefined;
      this.problemText = found.summary;
      this.log.error(found.summary);
      this.meter.problem(found.summary);
      this.offering ??= this.setup.offer(found).then((installed) => {
        this.offering = undefined;
        if (installed) void this.restart();
      });
      return;
    }
    const python = found.python;
    this.python = python;

    // A shared session store (`flower.store`): its URL in the options (settings.ts), its password
    // only in the server's environment, never in a message the client could trace.
    const store = splitStore(vscode.workspace.getConfiguration(SECTION).get<string>('store', ''));
    const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: '1' };
    if (store?.password !== undefined) env.PGPASSWORD = store.password;
    // -P and a working directory outside the workspace: nothing there can stand in for flower_lsp.
    const serverOptions: ServerOptions = {
      command: python.command,
      args: [SAFE_PATH, '-m', 'flower_lsp'],
      options: { cwd: this.setup.workDir, env },
    };
    const clientOptions: LanguageClientOptions = {
      // 目标.md and 需求.md: the server publishes verdict diagnostics and code actions on them.
      documentSelector: [{ scheme: 'file', language: 'markdown' }],
      outputChannel: this.log,
      initializationOptions: () => {
        this.sentOptions = currentOptions();
        return this.sentOptions;
      },
      middleware: {
        // Every flower command answers a CommandResult, which the palette would drop.
        executeCommand: async (command, args, next) => {
          const result = await next(command, args);
          this.report(command, result as CommandResult | undefined);
          return result;
        },
      },
      // The server decides what a crash means for the run; the client only restarts it a few times.
      initializationFailedHandler: (err) => {
        this.log.error(`initialize failed: ${String(err)}`);
        return false;
      },
    };
    const client = new LanguageClient('flower', 'Flower', serverOptions, clientOptions);
    this.progressFeature = new CancellableProgress(client);
    client.registerFeature(this.progressFeature);
    this.extensionsFeature = new FlowerExtensions();
    client.registerFeature(this.extensionsFeature);
    onNotification(client, BANNER, (p) => this.showBanner(p));
    onNotification(client, CONTEXT, (p) => this.meter.update(p));
    onNotification(client, EVENT, (p) => this.logEvent(p));
    onRequest(client, ASK, (p, token) => this.questions.ask(p, token));
    for (const part of this.parts) part(client);
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        void vscode.commands.executeCommand('setContext', 'flower.serverReady', false);
      }
    });

    this.client = client;
    try {
      await client.start();
    } catch (err) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      this.fail(
        vscode.l10n.t(
          'Flower: the language server did not start ({0} -m flower_lsp): {1}',
          python.command,
          String(err),
        ),
      );
      return;
    }
    this.log.info(
      `language server started with ${python.command} (${describeSource(python.source)}), flower ${found.flower}, locale ${this.extensionsFeature.locale}`,
    );
    this.meter.ready();
    void vscode.commands.executeCommand('setContext', 'flower.serverReady', true);
  }

  private fail(message: string): void {
    this.problemText = message;
    this.log.error(message);
    this.meter.problem(message);
    const settings = vscode.l10n.t('Open Settings');
    const select = vscode.l10n.t('Select Interpreter');
    const retry = vscode.l10n.t('Retry');
    const actions = [settings, ...(hasPythonExtension() ? [select] : []), retry];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === settings)
        void vscode.commands.executeCommand('workbench.action.openSettings', 'flower.python');
      else if (choice === select) void vscode.commands.executeCommand('python.setInterpreter');
      else if (choice === retry) void this.restart();
    });
  }

  // A command's one-line outcome goes to the log and, briefly, the status bar. A refusal is also
  // a warning, except where the server already speaks for itself: flower.start shows its own
  // refusals, and an `offer` comes with the server's own message request.
  private report(command: string, result: CommandResult | undefined): void {
    if (!result || typeof result !== 'object' || typeof result.message !== 'string') return;
    if (result.ok) this.log.info(result.message);
    else this.log.warn(result.message);
    vscode.window.setStatusBarMessage(`Flower: ${result.message}`, 5000);
    if (!result.ok && command !== START && !result.offer)
      void vscode.window.showWarningMessage(`Flower: ${result.message}`);
  }

  private showBanner(p: BannerParams): void {
    const text = p?.text ?? '';
    if (!text) return;
    this.log.info(`[banner] ${text}`);
    this.banners.fire(p);
    // The banner's words are the server's, in the language it was asked for (initialize's locale).
    const show = vscode.l10n.t('Show State');
    void vscode.window.showInformationMessage(`Flower: ${text}`, show).then((choice) => {
      if (choice === show) void vscode.commands.executeCommand('flower.showState');
    });
  }

  private logEvent(p: EventParams): void {
    const { level, line } = eventLine(p);
    this.log[level](line);
    this.events.fire(p);
  }

  dispose(): void {
    void this.stop();
    this.banners.dispose();
    this.events.dispose();
  }
}
