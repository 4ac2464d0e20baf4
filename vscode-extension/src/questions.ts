// The agent's questions (`flower/ask`) as quick picks, one at a time. A question that arrives
// while another is open waits behind it, counted in a status bar item, never dropped.
import * as vscode from 'vscode';
import { answerRows } from './format';
import type { AskParams, AskResult } from './protocol';

interface Row extends vscode.QuickPickItem {
  custom: boolean;
}

interface Pending {
  params: AskParams;
  token: vscode.CancellationToken;
  resolve(result: AskResult): void;
}

export class Questions implements vscode.Disposable {
  private readonly queue: Pending[] = [];
  private active: { pending: Pending; pick: vscode.QuickPick<Row> } | undefined;
  /** "Flower: N questions waiting", shown while questions queue behind the open one. */
  readonly waitingItem: vscode.StatusBarItem;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when a question is shown, answered, dismissed or queued (tests wait on it). */
  readonly onDidChange = this.changed.event;

  constructor() {
    this.waitingItem = vscode.window.createStatusBarItem(
      'flower.questions',
      vscode.StatusBarAlignment.Left,
      49,
    );
    this.waitingItem.name = vscode.l10n.t('Flower questions waiting');
    this.waitingItem.command = 'flower.showQuestion';
    this.waitingItem.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  }

  /** The handler of the `flower/ask` request. */
  ask(params: AskParams, token: vscode.CancellationToken): Promise<AskResult> {
    return new Promise<AskResult>((resolve) => {
      const pending: Pending = { params, token, resolve };
      // The server gave up (timeout, stop, shutdown): take the question away, answered or not.
      const sub = token.onCancellationRequested(() => this.withdraw(pending));
      pending.resolve = (result) => {
        sub.dispose();
        resolve(result);
      };
      this.queue.push(pending);
      this.pump();
    });
  }

  /** The question on screen, if any. */
  get current(): AskParams | undefined {
    return this.active?.pending.params;
  }

  /** The open quick pick itself (the tests drive it through the QuickPick API). */
  get activePick(): vscode.QuickPick<vscode.QuickPickItem> | undefined {
    return this.active?.pick;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** The `flower.showQuestion` command: bring the open question (or the next one) to the front. */
  show(): void {
    if (this.active) this.active.pick.show();
    else this.pump();
  }

  private pump(): void {
    if (!this.active) {
      const next = this.queue.shift();
      if (next) this.open(next);
    }
    this.refreshWaiting();
    this.changed.fire();
  }

  private open(pending: Pending): void {
    const { params } = pending;
    const pick = vscode.window.createQuickPick<Row>();
    pick.title = vscode.l10n.t('Flower asks');
    pick.placeholder = params.question;
    pick.ignoreFocusOut = true; // clicking elsewhere must not decline the question
    pick.matchOnDescription = false;
    const refresh = () => {
      pick.items = answerRows(params.options ?? [], pick.value, params.free_text).map((r) => ({
        label: r.label,
        description: r.custom ? vscode.l10n.t('your answer') : undefined,
        alwaysShow: r.custom,
        custom: r.custom,
      }));
    };
    refresh();
    if (params.free_text) {
      pick.placeholder = vscode.l10n.t('{0} (pick an option or type your answer)', params.question);
      pick.onDidChangeValue(refresh);
    }
    let settled = false;
    const finish = (result: AskResult) => {
      if (settled) return;
      settled = true;
      pending.resolve(result);
      pick.dispose();
      if (this.active?.pending === pending) this.active = undefined;
      this.pump();
    };
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0] ?? pick.activeItems[0];
      const typed = pick.value.trim();
      if (chosen) finish({ answer: chosen.label });
      else if (params.free_text && typed) finish({ answer: typed });
      // Enter on an empty list with nothing typed: keep the question open.
    });
    pick.onDidHide(() => finish({ dismissed: true }));
    this.active = { pending, pick };
    pick.show();
  }

  private withdraw(pending: Pending): void {
    const index = this.queue.indexOf(pending);
    if (index >= 0) {
      this.queue.splice(index, 1);
      pending.resolve({ dismissed: true });
      this.pump();
    } else if (this.active?.pending === pending) {
      this.active.pick.hide(); // onDidHide settles it and opens the next
    }
  }

  private refreshWaiting(): void {
    const n = this.queue.length;
    void vscode.commands.executeCommand(
      'setContext',
      'flower.questionsWaiting',
      n > 0 || this.active !== undefined,
    );
    if (n === 0) {
      this.waitingItem.hide();
      return;
    }
    const waiting =
      n === 1
        ? vscode.l10n.t('Flower: 1 question waiting')
        : vscode.l10n.t('Flower: {0} questions waiting', n);
    this.waitingItem.text = `$(question) ${waiting}`;
    this.waitingItem.tooltip = this.queue.map((p, i) => `${i + 1}. ${p.params.question}`).join('\n');
    this.waitingItem.show();
  }

  dispose(): void {
    for (const p of this.queue.splice(0)) p.resolve({ dismissed: true });
    this.active?.pick.hide();
    this.waitingItem.dispose();
    this.changed.dispose();
  }
}
