// The context meter in the status bar: `Flower 80.2K / 1M`, warning colour near the handoff;
// a click opens the context growth chart.
import * as vscode from 'vscode';
import { meterText, meterTooltip } from './format';
import type { ContextParams } from './protocol';

const CHART_COMMAND = 'flower.showContextChart';

export class Meter implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private last: ContextParams | undefined;
  private readonly changed = new vscode.EventEmitter<string>();
  /** Fires with the new text whenever the meter changes. */
  readonly onDidChange = this.changed.event;

  constructor() {
    this.item = vscode.window.createStatusBarItem('flower.meter', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Flower context meter';
    this.item.command = CHART_COMMAND;
    this.update(undefined);
    this.item.show();
  }

  get context(): ContextParams | undefined {
    return this.last;
  }

  update(ctx: ContextParams | undefined): void {
    this.last = ctx;
    this.item.text = meterText(ctx);
    this.item.tooltip = meterTooltip(ctx);
    const loud = ctx?.handing_off || ctx?.near;
    this.item.backgroundColor = loud ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.changed.fire(this.item.text);
  }

  /** The server is not running: say why on hover, and offer the restart on click. */
  problem(message: string): void {
    this.last = undefined;
    this.item.text = '$(warning) Flower';
    this.item.tooltip = message;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    this.item.command = 'flower.restartServer';
  }

  restricted(): void {
    this.last = undefined;
    this.item.text = '$(shield) Flower';
    this.item.tooltip = 'Flower runs only in a trusted workspace.';
    this.item.backgroundColor = undefined;
    this.item.command = 'workbench.trust.manage';
  }

  ready(): void {
    this.item.command = CHART_COMMAND;
    this.update(this.last);
  }

  dispose(): void {
    this.changed.dispose();
    this.item.dispose();
  }
}
