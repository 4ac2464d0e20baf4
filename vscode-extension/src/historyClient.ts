// Each workspace folder's history as the server tells it: asked for with `flower/history` when
// the server starts (and when the folders change), kept current by `flower/historyUpdate`, which
// this client declares with `history` among its flower extensions (server.ts, EXTENSIONS).
import * as vscode from 'vscode';
import { type LanguageClient, State } from 'vscode-languageclient/node';
import { onNotification, request } from './calls';
import { applyUpdate, newer } from './history';
import {
  ASIDE,
  HISTORY,
  HISTORY_UPDATE,
  type HistoryResult,
  type HistoryTurn,
  type HistoryUpdateParams,
} from './protocol';

/** Where the view stands: no server, reading, nothing to show, or histories to show. */
export type ViewState = 'noServer' | 'loading' | 'noRun' | 'ready';

export interface Change {
  folder: string;
  /** The turn appended, when that is all that changed. */
  turn?: HistoryTurn;
}

export class Histories implements vscode.Disposable {
  private readonly held = new Map<string, HistoryResult>();
  private readonly reading = new Set<string>();
  private client: LanguageClient | undefined;
  private serverCommands: readonly string[] = [];
  private readonly changed = new vscode.EventEmitter<Change>();
  /** Fires for every change of a folder's history (tests wait on it too). */
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [
    vscode.workspace.onDidChangeWorkspaceFolders(() => void this.refresh()),
  ];

  /** Wire a client the server starts: the capability, the updates, the first read. */
  readonly attach = (client: LanguageClient): void => {
    onNotification(client, HISTORY_UPDATE, (update) => this.onUpdate(update));
    this.subscriptions.push(
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.client = client;
          this.serverCommands = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
          void vscode.commands.executeCommand('setContext', 'flower.askAside', this.hasAskAside);
          void this.refresh();
        } else if (this.client === client) {
          this.client = undefined;
          this.held.clear();
          this.fireAll();
        }
      }),
    );
  };

  /** The server lists the Ask Aside command (another part of flower may add it). */
  get hasAskAside(): boolean {
    return this.serverCommands.includes(ASIDE);
  }

  get(folder: string): HistoryResult | undefined {
    return this.held.get(folder);
  }

  get state(): ViewState {
    if (!this.client) return 'noServer';
    const folders = workspaceFolders();
    if (folders.some((f) => this.reading.has(f) && !this.held.has(f))) return 'loading';
    return folders.some((f) => this.held.get(f)?.wakes.length) ? 'ready' : 'noRun';
  }

  /** Ask the server for the history of one folder, or of every folder. */
  async refresh(folder?: string): Promise<void> {
    const client = this.client;
    if (!client) return;
    await Promise.all((folder ? [folder] : workspaceFolders()).map((f) => this.read(client, f)));
  }

  private async read(client: LanguageClient, folder: string): Promise<void> {
    this.reading.add(folder);
    this.changed.fire({ folder });
    try {
      const answer = await request(client, HISTORY, { folder });
      this.held.set(folder, newer(this.held.get(folder), answer));
    } catch (err) {
      if (client.state === State.Running) client.warn(`flower/history for ${folder}: ${String(err)}`);
    } finally {
      this.reading.delete(folder);
      this.changed.fire({ folder });
    }
  }

  private onUpdate(update: HistoryUpdateParams): void {
    const { history, applied } = applyUpdate(this.held.get(update.folder), update);
    if (applied === 'missed') {
      void this.refresh(update.folder); // an update was lost: read it whole again
      return;
    }
    if (applied === 'stale' || !history) return;
    this.held.set(update.folder, history);
    this.changed.fire({
      folder: update.folder,
      turn: applied === 'appended' ? (update.turn ?? undefined) : undefined,
    });
  }

  private fireAll(): void {
    for (const folder of workspaceFolders()) this.changed.fire({ folder });
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}

/** The workspace folders as the server knows them (their URIs as the client sends them). */
export function workspaceFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
}
