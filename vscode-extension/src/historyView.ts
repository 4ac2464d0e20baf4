// The Flower view: a tree of the run's history in the activity bar (see historyTree.ts for what
// it shows), its context-menu actions (Continue, Say, Stop, Ask Aside, Open Brief / Goal; on a
// judged round Rewind here and Fork here, each confirmed from the server's preview) and
// the empty states (package.json's viewsWelcome, chosen by the `flower.view` context key).
import * as path from 'node:path';
import * as vscode from 'vscode';
import { type Histories, workspaceFolders } from './historyClient';
import { folderNodes, type Node, workspaceNodes } from './historyTree';
import type { RunCommand } from './calls';
import { CONTINUE, FORK, type ForkResult, OPEN_DOCUMENT, REWIND, type RewindResult, STOP } from './protocol';
import { type Confirmation, forkConfirmation, rewindConfirmation } from './rewindText';
import { sameTree, treeItemOf } from './treeNode';

export const VIEW_ID = 'flower.history';
export const SHOW_CHART = 'flower.showContextChart';

export class FlowerView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  readonly view: vscode.TreeView<Node>;
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private roots: Node[] = [];
  private live: boolean[] = [];

  constructor(
    private readonly histories: Histories,
    private readonly run: RunCommand,
  ) {
    this.view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.subscriptions.push(
      this.view,
      histories.onDidChange(() => this.rebuild()),
      ...this.commands(),
    );
    this.rebuild();
  }

  /** The top-level nodes as shown now (the tests read the tree through these). */
  get nodes(): readonly Node[] {
    return this.roots;
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const item = treeItemOf(node, node.children.length > 0);
    const running = this.histories.get(node.folder)?.live ?? false;
    // a judged round has a checkpoint to go back to: flower.round.judged.idle
    const judged = node.checkpoint != null ? 'judged.' : '';
    item.contextValue = `flower.${node.kind}.${judged}${running ? 'running' : 'idle'}`;
    if (node.kind === 'chart')
      item.command = {
        command: SHOW_CHART,
        title: vscode.l10n.t('Show Context Chart'),
        arguments: [node.folder],
      };
    else if (node.open) item.command = openCommand(node.open);
    return item;
  }

  getChildren(node?: Node): Node[] {
    return node ? node.children : this.roots;
  }

  private rebuild(): void {
    const before = this.roots;
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length > 1) {
      this.roots = workspaceNodes(
        folders.map((f) => ({
          uri: f.uri.toString(),
          name: f.name,
          history: this.histories.get(f.uri.toString()),
        })),
      );
    } else {
      const only = workspaceFolders()[0];
      const history = only ? this.histories.get(only) : undefined;
      this.roots = history ? folderNodes(history) : [];
    }
    // the empty states of package.json's viewsWelcome show while the tree has no items
    void vscode.commands.executeCommand('setContext', 'flower.view', this.histories.state);
    // the items' menus also follow whether each folder's run is live (getTreeItem)
    const live = workspaceFolders().map((f) => this.histories.get(f)?.live ?? false);
    if (sameTree(before, this.roots) && live.join() === this.live.join()) this.roots = before;
    else this.changed.fire(undefined);
    this.live = live;
  }

  private commands(): vscode.Disposable[] {
    const register = (id: string, fn: (node?: Node, text?: string) => unknown) =>
      vscode.commands.registerCommand(id, fn);
    // the menus pass the node; the words may come as a second argument (a keybinding, a test).
    // Say and Ask Aside are the extension's own commands for the node's folder: they ask for the
    // words when none came, and show the answer where the person asked.
    return [
      register('flower.view.continue', (node) => this.run(CONTINUE, { folder: folderOf(node) })),
      register('flower.view.say', (node, given) =>
        vscode.commands.executeCommand('flower.sayPrompt', given, folderOf(node)),
      ),
      register('flower.view.stop', (node) => this.run(STOP, { folder: folderOf(node) })),
      register('flower.view.askAside', (node, given) =>
        vscode.commands.executeCommand('flower.askAside', given, folderOf(node)),
      ),
      register('flower.view.openBrief', (node) =>
        this.run(OPEN_DOCUMENT, { which: 'brief', folder: folderOf(node) }),
      ),
      register('flower.view.openGoal', (node) =>
        this.run(OPEN_DOCUMENT, { which: 'goal', folder: folderOf(node) }),
      ),
      register('flower.view.refresh', () => this.histories.refresh()),
      register('flower.view.rewindHere', (node) => this.rewindHere(node)),
      register('flower.view.forkHere', (node) => this.forkHere(node)),
    ];
  }

  /** Rewind here: the preview, a modal listing what changes, the rewind, the view read again. */
  private async rewindHere(node: Node | undefined): Promise<RewindResult | undefined> {
    const round = roundOf(node);
    if (round == null) return undefined;
    const folder = folderOf(node);
    const preview = await this.run(REWIND, { round, preview: true, folder });
    if (!(await this.confirmed(preview, preview?.ok ? rewindConfirmation(preview) : undefined)))
      return undefined;
    const done = await this.run(REWIND, { round, folder });
    await this.finished(done, folder);
    return done;
  }

  /** Fork here: the preview, a modal saying where and what, the fork there, the view read again. */
  private async forkHere(node: Node | undefined): Promise<ForkResult | undefined> {
    const round = roundOf(node);
    if (round == null) return undefined;
    const folder = folderOf(node);
    const preview = await this.run(FORK, { round, preview: true, folder });
    if (!(await this.confirmed(preview, preview?.ok ? forkConfirmation(preview) : undefined)))
      return undefined;
    // where the preview said: the default folder's name has the time in it
    const done = await this.run(FORK, { round, folder, into: preview?.workspace });
    await this.finished(done, folder, done?.ok ? done.workspace : undefined);
    return done;
  }

  /** Whether the person accepts; a refused preview is said instead, and is no. */
  private async confirmed(
    preview: { ok: boolean; message: string } | undefined,
    ask: Confirmation | undefined,
  ): Promise<boolean> {
    if (!preview) return false;
    if (!ask) {
      void vscode.window.showWarningMessage(preview.message);
      return false;
    }
    const answer = await vscode.window.showWarningMessage(
      ask.message,
      { modal: true, detail: ask.detail },
      ask.accept,
    );
    return answer === ask.accept;
  }

  /** The view read again, and the result said (a fork's with a button that opens its folder). */
  private async finished(
    done: { ok: boolean; message: string } | undefined,
    folder: string | undefined,
    opens?: string,
  ): Promise<void> {
    await this.histories.refresh(folder);
    if (!done) return;
    if (!done.ok) {
      void vscode.window.showWarningMessage(done.message);
      return;
    }
    const open = vscode.l10n.t('Open the New Workspace');
    void vscode.window.showInformationMessage(done.message, ...(opens ? [open] : [])).then((chosen) => {
      if (chosen === open && opens)
        void vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(opens), {
          forceNewWindow: true,
        });
    });
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    this.changed.dispose();
  }
}

/**
 * The checkpoint a round's context-menu action is about. The menus offer it on judged rounds
 * only, so no node means the row was redrawn under the pointer and VS Code found no item for it:
 * said, never silently nothing.
 */
function roundOf(node: Node | undefined): number | undefined {
  if (node?.checkpoint != null) return node.checkpoint;
  void vscode.window.showWarningMessage(
    vscode.l10n.t('Flower: that round was being redrawn in the view; choose it again.'),
  );
  return undefined;
}

/** The folder a context-menu action is about: the node's, else the first folder. */
function folderOf(node: Node | undefined): string | undefined {
  return node?.folder ?? workspaceFolders()[0];
}

function openCommand(open: { path: string; line?: number }): vscode.Command {
  const options: vscode.TextDocumentShowOptions =
    // the whole line: VS Code clamps the end to its length
    open.line != null
      ? { selection: new vscode.Range(open.line, 0, open.line, Number.MAX_SAFE_INTEGER) }
      : {};
  return {
    command: 'vscode.open',
    title: vscode.l10n.t('Open {0}', path.basename(open.path)),
    arguments: [vscode.Uri.file(open.path), options],
  };
}
