// Flower in the editor: the language server, its commands, questions, meter and banner.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as l10n from '@vscode/l10n';
import * as vscode from 'vscode';
import { executeCommand, type RunCommand } from './calls';
import { ContextChart } from './chartPanel';
import { FleetView } from './fleetView';
import { Histories } from './historyClient';
import { FlowerView, SHOW_CHART } from './historyView';
import { LimitCountdown } from './limitWait';
import { Meter } from './meter';
import { asideText } from './format';
import { ASIDE, type AsideArgs, type DocumentName, OPEN_DOCUMENT, SAY, START } from './protocol';
import { onPythonInterpreterChanged } from './python';
import { Questions } from './questions';
import { FlowerServer } from './server';
import { reaction } from './settings';
import { FlowerSetup } from './setup';
import { StateView } from './state';

/** What activate() returns: the extension's parts, for other extensions and for the tests. */
export interface FlowerApi {
  server: FlowerServer;
  meter: Meter;
  questions: Questions;
  stateView: StateView;
  setup: FlowerSetup;
  log: vscode.LogOutputChannel;
  /** The run's history (the Flower view) and the context growth chart. */
  history: { histories: Histories; view: FlowerView; chart: ContextChart };
  /** The fleet's runs in the folder's shared store (the Fleet view). */
  fleet: FleetView;
}

export function activate(context: vscode.ExtensionContext): FlowerApi | Promise<FlowerApi> {
  // The pure text modules speak through @vscode/l10n: give it the bundle VS Code chose for its
  // display language (none for English, whose words are the source strings).
  if (vscode.l10n.bundle) l10n.config({ contents: vscode.l10n.bundle });
  const log = vscode.window.createOutputChannel('Flower', { log: true });
  const meter = new Meter();
  const questions = new Questions();
  const stateView = new StateView();
  const setup = new FlowerSetup(context, log);
  const server = new FlowerServer(log, meter, questions, setup);
  context.subscriptions.push(log, meter, questions, stateView, setup, server);
  const countdown = new LimitCountdown();
  context.subscriptions.push(
    countdown,
    server.onEvent((ev) => countdown.observe(ev)),
  );
  const histories = new Histories();
  server.extend(histories.attach);

  const trusted = (): boolean => {
    if (vscode.workspace.isTrusted) return true;
    void vscode.window
      .showWarningMessage(
        vscode.l10n.t('Flower starts no runs in an untrusted workspace.'),
        vscode.l10n.t('Manage Workspace Trust'),
      )
      .then((c) => c && vscode.commands.executeCommand('workbench.trust.manage'));
    return false;
  };
  // Server commands (flower.start, flower.say, ...) are registered by the language client;
  // these wrappers only collect their arguments and say why when the server is not there.
  const runServerCommand: RunCommand = async (command, args) => {
    if (!trusted()) return undefined;
    try {
      await server.ready();
      return await executeCommand(command, args);
    } catch (err) {
      void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
      return undefined;
    }
  };
  const register = (id: string, fn: Parameters<typeof vscode.commands.registerCommand>[1]) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  const view = new FlowerView(histories, runServerCommand);
  const chart = new ContextChart(context.extensionUri, histories);
  const fleet = new FleetView(runServerCommand);
  server.extend(fleet.attach);
  context.subscriptions.push(histories, view, chart, fleet);
  register(SHOW_CHART, (folder?: unknown) => chart.show(typeof folder === 'string' ? folder : undefined));

  // The words a command was given (a keybinding, a test, the Flower view's menus), else asked
  // for; trimmed, and undefined when there are none.
  const wordsFor = async (given: unknown, box: vscode.InputBoxOptions): Promise<string | undefined> => {
    const text =
      typeof given === 'string' ? given : await vscode.window.showInputBox({ ...box, ignoreFocusOut: true });
    return text?.trim() || undefined;
  };
  register('flower.newRun', async (ask?: string) => {
    if (!trusted()) return;
    const text = await wordsFor(ask, {
      title: vscode.l10n.t('Flower: New Run'),
      prompt: vscode.l10n.t(
        'What should the agents do? Flower clarifies it into {0} before any work starts.',
        '需求.md',
      ),
      placeHolder: vscode.l10n.t('e.g. a command-line tool that renames photos by the date they were taken'),
    });
    if (!text) return;
    return runServerCommand(START, { ask: text, new: true });
  });
  register('flower.sayPrompt', async (say?: string, folder?: string) => {
    if (!trusted()) return;
    const text = await wordsFor(say, {
      title: vscode.l10n.t('Flower: Say'),
      prompt: vscode.l10n.t('Interrupt the running step with these words; the agent reads them next.'),
    });
    if (!text) return;
    return runServerCommand(SAY, { text, folder: folder ?? null });
  });
  register('flower.askAside', async (question?: string, folder?: string) => {
    if (!trusted()) return;
    const text = await wordsFor(question, {
      title: vscode.l10n.t('Flower: Ask Aside'),
      prompt: vscode.l10n.t(
        'A side question about the run: a read-only oracle answers from its recent events and workbench, without disturbing it.',
      ),
      placeHolder: vscode.l10n.t('e.g. which step is the run on?'),
    });
    if (!text) return;
    const args: AsideArgs = { question: text, folder: folder ?? null };
    const result = await runServerCommand(ASIDE, args);
    // the answer goes where the question was asked; a refusal the server's warning already shows
    if (result?.ok) {
      log.info(`[aside] ${args.question}\n${result.answer}`);
      const showLog = vscode.l10n.t('Show Log');
      void vscode.window.showInformationMessage(asideText(result), showLog).then((c) => {
        if (c === showLog) log.show(true);
      });
    }
    return result;
  });
  const open = (which: DocumentName) => runServerCommand(OPEN_DOCUMENT, { which });
  register('flower.openBrief', () => open('brief'));
  register('flower.openGoal', () => open('goal'));
  register('flower.showState', async () => {
    try {
      await stateView.show(await server.state());
    } catch (err) {
      void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
    }
  });
  register('flower.restartServer', async () => {
    if (trusted()) await server.restart();
  });
  register('flower.showQuestion', () => questions.show());
  register('flower.install', async () => {
    if (trusted() && (await setup.install())) await server.restart();
  });

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!vscode.workspace.isTrusted) return;
      const how = reaction((setting) => e.affectsConfiguration(setting));
      if (how === 'restart') {
        log.info('flower.python changed: restarting the language server');
        void server.restart();
      } else if (how === 'send') void server.sendSettings();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void server.sendSettings()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.start()),
  );
  void onPythonInterpreterChanged(() => {
    if (server.interpreter?.source === 'python-extension') void server.restart();
  }).then((d) => d && context.subscriptions.push(d));

  const api: FlowerApi = {
    server,
    meter,
    questions,
    stateView,
    setup,
    log,
    history: { histories, view, chart },
    fleet,
  };
  current = server;
  if (!vscode.workspace.isTrusted) {
    meter.restricted();
    return api;
  }
  const starting = server.start();
  // In a folder without a run, only a command can have activated us (say, "Flower: Continue",
  // which the language client registers): wait for the server so that the command exists when
  // VS Code runs it. In a folder with a run we were activated at startup: stay fast.
  return hasRun() ? api : starting.then(() => api);
}

let current: FlowerServer | undefined;

export function deactivate(): Promise<void> | undefined {
  return current?.stop();
}

/** The activation events' files: a run has happened here. */
function hasRun(): boolean {
  return (vscode.workspace.workspaceFolders ?? []).some((f) =>
    RUN_MARKERS.some((name) => fs.existsSync(path.join(f.uri.fsPath, name))),
  );
}

const RUN_MARKERS = ['.flower/notes/需求.md', '.flower/notes/目标.md'];
