// The countdown in the status bar while a run waits for a usage limit, a rate limit or an
// overload to end (the engine's LimitWait events, through flower/event); gone when it resumes.
import * as vscode from 'vscode';
import { countdownText, type LimitWaitPayload, limitWaitOf } from './format';
import type { EventParams } from './protocol';

export class LimitCountdown implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private wait: LimitWaitPayload | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem('flower.limit', vscode.StatusBarAlignment.Left, 49);
    this.item.name = vscode.l10n.t('Flower limit wait');
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  }

  /** Every event of the run's log: a wait starts the countdown, its end (or the run's) stops it. */
  observe(ev: EventParams): void {
    const wait = limitWaitOf(ev);
    if (wait?.phase === 'wait') this.start(wait);
    else if (wait?.phase === 'resumed' || ev.kind === 'run') this.stop();
  }

  private start(wait: LimitWaitPayload): void {
    this.wait = wait;
    this.tick();
    this.item.show();
    if (this.timer === undefined) this.timer = setInterval(() => this.tick(), 1000);
  }

  private tick(): void {
    if (this.wait === undefined) return;
    this.item.text = countdownText(this.wait, Date.now() / 1000);
    this.item.tooltip = new Date(this.wait.until * 1000).toLocaleString();
  }

  stop(): void {
    this.wait = undefined;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.item.hide();
  }

  dispose(): void {
    this.stop();
    this.item.dispose();
  }
}
