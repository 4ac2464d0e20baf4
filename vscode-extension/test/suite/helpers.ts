// Shared by the in-host suites: the extension's API and patient waiting.
import * as vscode from 'vscode';
import type { FlowerApi } from '../../src/extension';
import type { EventParams } from '../../src/protocol';

export const EXTENSION_ID = 'flower-agents.flower';

/** The extension's API once it is active, without starting the server (activation may not). */
export async function activated(): Promise<FlowerApi> {
  const ext = vscode.extensions.getExtension<FlowerApi>(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not installed in this host`);
  return ext.isActive ? ext.exports : ext.activate();
}

export async function flower(): Promise<FlowerApi> {
  const ext = vscode.extensions.getExtension<FlowerApi>(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not installed in this host`);
  const api = ext.isActive ? ext.exports : await ext.activate();
  await api.server.start();
  return api;
}

/** Poll until `probe` returns something truthy; fail with `what` after `ms`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  ms = 30_000,
  every = 100,
): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(
        `timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`,
      );
    await sleep(every);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Make the row labelled `label` the active one and press Enter, through the QuickPick API. */
export async function pickAnswer(api: FlowerApi, label: string): Promise<void> {
  const pick = await waitFor('an open question', () => api.questions.activePick);
  const row = pick.items.find((i) => i.label === label);
  if (!row) throw new Error(`no row "${label}" in ${JSON.stringify(pick.items.map((i) => i.label))}`);
  // The QuickPick sends its changes to the window in a batch: Enter must wait until the window
  // reports the row active, or it accepts the row that was active before.
  if (pick.activeItems[0] !== row) {
    const shown = new Promise<void>((resolve) => {
      const sub = pick.onDidChangeActive((active) => {
        if (active[0]?.label === label) {
          sub.dispose();
          resolve();
        }
      });
    });
    pick.activeItems = [row];
    // No echo comes when the window had that row active already: then Enter is right anyway.
    await Promise.race([shown, sleep(2_000)]);
  }
  await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
}

export async function closeQuickPick(): Promise<void> {
  await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
}

/** The first event from index `from` on that says a run ended (finished, failed or stopped). */
export function runEnded(events: EventParams[], from: number): EventParams | undefined {
  return events
    .slice(from)
    .find((e) => e.kind === 'run' && ['finished', 'failed', 'stopped'].includes(String(e.payload?.phase)));
}

export function workspaceFolder(): vscode.WorkspaceFolder {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error('the tests need a workspace folder');
  return folder;
}
