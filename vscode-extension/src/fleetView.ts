// The Fleet view in the Flower sidebar: each folder's fleet as the server tells it (flower/fleet/runs
// when the server starts and on Refresh, kept current by flower/fleetUpdate, which this client
// declares with `fleet` among its flower extensions: server.ts, EXTENSIONS), a run's questions and
// events asked for when it is opened (flower/fleet/show), and the actions Answer… and Cancel.
// What it shows is fleetTree.ts's.
import * as vscode from 'vscode';
import { type LanguageClient, State } from 'vscode-languageclient/node';
import { onNotification, request, type RunCommand } from './calls';
import { type FleetNode, fleetNodes, runDetailNodes, workspaceFleetNodes } from './fleetTree';
import { workspaceFolders } from './historyClient';
import {
  type CommandResult,
  FLEET_ANSWER,
  FLEET_CANCEL,
  FLEET_RUNS,
  FLEET_SHOW,
  FLEET_UPDATE,
  type FleetRunsResult,
} from './protocol';
import { sameTree, treeItemOf } from './treeNode';

export const FLEET_VIEW_ID = 'flower.fleet';

export class FleetView implements vscode.TreeDataProvider<FleetNode>, vscode.Disposable {
  readonly view: vscode.TreeView<FleetNode>;
  private readonly held = new Map<string, FleetRunsResult>();
  private client: LanguageClient | undefined;
  private readonly changed = new vscode.EventEmitter<FleetNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  /** Fires whenever a folder's fleet was read or updated (the tests wait on it). */
  private readonly read = new vscode.EventEmitter<string>();
  readonly onDidRead = this.read.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private roots: FleetNode[] = [];

  constructor(private readonly run: RunCommand) {
    this.view = vscode.window.createTreeView(FLEET_VIEW_ID, {
      treeDataProvider: this,
      showCollapseAll: true,
    });
    this.subscriptions.push(
      this.view,
      this.read,
      vscode.workspace.onDidChangeWorkspaceFolders(() => void this.refresh()),
      vscode.commands.registerCommand('flower.fleet.refresh', () => this.refresh()),
      vscode.commands.registerCommand('flower.fleet.answer', (node?: FleetNode, text?: string) =>
        this.answer(node, text),
      ),
      vscode.commands.registerCommand('flower.fleet.cancel', (node?: FleetNode) => this.cancel(node)),
    );
    this.rebuild();
  }

  /** Wire a client the server starts: the updates, the first read. */
  readonly attach = (client: LanguageClient): void => {
    onNotification(client, FLEET_UPDATE, (update) => {
      this.held.set(update.folder, update.fleet);
      this.rebuild();
      this.read.fire(update.folder);
    });
    this.subscriptions.push(
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.client = client;
          void this.refresh();
        } else if (this.client === client) {
          this.client = undefined;
          this.held.clear();
          this.rebuild();
        }
      }),
    );
  };

  /** The top-level nodes as shown now. */
  get nodes(): readonly FleetNode[] {
    return this.roots;
  }

  get(folder: string): FleetRunsResult | undefined {
    return this.held.get(folder);
  }

  /** Ask the server for every folder's fleet again. */
  async refresh(): Promise<void> {
    const client = this.client;
    if (!client) return;
    await Promise.all(
      workspaceFolders().map(async (folder) => {
        try {
          this.held.set(folder, await request(client, FLEET_RUNS, { folder }));
        } catch (err) {
          if (client.state === State.Running) client.warn(`flower/fleet/runs for ${folder}: ${String(err)}`);
        }
        this.read.fire(folder);
      }),
    );
    this.rebuild();
  }

  getTreeItem(node: FleetNode): vscode.TreeItem {
    // a run's children are asked for when it is opened
    const item = treeItemOf(node, node.kind === 'run' || node.children.length > 0);
    // flower.fleet.run.waiting: the menus offer Answer… there, Cancel on what is not over
    item.contextValue = node.run ? `flower.fleet.run.${node.run.state}` : `flower.fleet.${node.kind}`;
    return item;
  }

  async getChildren(node?: FleetNode): Promise<FleetNode[]> {
    if (!node) return this.roots;
    if (node.kind !== 'run' || !node.run) return node.children;
    // a run's questions and events: read when it is opened, so the list stays one query
    const client = this.client;
    if (!client) return [];
    try {
      const detail = await request(client, FLEET_SHOW, { run: node.run.id, folder: node.folder });
      return runDetailNodes(node.folder, node.run.id, detail);
    } catch (err) {
      client.warn(`flower/fleet/show ${node.run.id}: ${String(err)}`);
      return [];
    }
  }

  private rebuild(): void {
    const before = this.roots;
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length > 1) {
      this.roots = workspaceFleetNodes(
        folders.map((f) => ({ uri: f.uri.toString(), name: f.name, fleet: this.held.get(f.uri.toString()) })),
      );
      this.view.description = undefined;
    } else {
      const only = workspaceFolders()[0];
      const fleet = only ? this.held.get(only) : undefined;
      this.roots = only && fleet ? fleetNodes(only, fleet) : [];
      this.view.description = fleet?.where || undefined;
    }
    if (sameTree(before, this.roots)) this.roots = before;
    else this.changed.fire(undefined);
  }

  /** Answer…: the run's question shown, the person's words sent, the result said, the view read again. */
  private async answer(node: FleetNode | undefined, given?: string): Promise<CommandResult | undefined> {
    const run = runOf(node);
    if (!node || !run) return undefined;
    const text =
      typeof given === 'string'
        ? given
        : await vscode.window.showInputBox({
            title: vscode.l10n.t('Flower: Answer Run {0}', run.id),
            prompt: run.question || vscode.l10n.t('The answer the run reads next'),
            ignoreFocusOut: true,
          });
    if (!text?.trim()) return undefined;
    const done = await this.run(FLEET_ANSWER, { run: run.id, text: text.trim(), folder: node.folder });
    await this.said(done);
    return done;
  }

  /** Cancel: confirmed first (a running run stops on its worker), the result said, the view read again. */
  private async cancel(node: FleetNode | undefined): Promise<CommandResult | undefined> {
    const run = runOf(node);
    if (!node || !run) return undefined;
    const accept = vscode.l10n.t('Cancel the Run');
    const chosen = await vscode.window.showWarningMessage(
      vscode.l10n.t('Cancel run {0}?', run.id),
      {
        modal: true,
        detail: vscode.l10n.t(
          'A queued run is taken off the queue; a running one is stopped by its worker, which pushes what it has to the run’s branch first.',
        ),
      },
      accept,
    );
    if (chosen !== accept) return undefined;
    const done = await this.run(FLEET_CANCEL, { run: run.id, folder: node.folder });
    await this.said(done);
    return done;
  }

  private async said(done: CommandResult | undefined): Promise<void> {
    await this.refresh();
    if (!done) return;
    if (done.ok) void vscode.window.showInformationMessage(done.message);
    else void vscode.window.showWarningMessage(done.message);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}

/**
 * The run a context-menu action is about. The menus offer the actions on run rows only, so no
 * node means the row was redrawn under the pointer and VS Code found no item for it: said, never
 * silently nothing.
 */
function runOf(node: FleetNode | undefined): FleetNode['run'] {
  if (node?.run) return node.run;
  void vscode.window.showWarningMessage(
    vscode.l10n.t('Flower: that run was being redrawn in the view; choose it again.'),
  );
  return undefined;
}
