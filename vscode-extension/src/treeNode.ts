// What a node of the Flower sidebar's trees is (the run's history, the fleet), as the pure tree
// modules build it (no `vscode` import), and how a view turns one into a TreeItem.
import * as vscode from 'vscode';

export interface TreeNode {
  /** Stable across updates, so that the tree keeps what was expanded. */
  id: string;
  /** URI of the workspace folder the node belongs to. */
  folder: string;
  label: string;
  description?: string;
  tooltip?: string;
  /** A codicon id, with a theme colour id. */
  icon?: { id: string; color?: string };
  expanded?: boolean;
}

/** The TreeItem of a node: folded, open or a leaf, with its words and icon. */
export function treeItemOf(node: TreeNode, hasChildren: boolean): vscode.TreeItem {
  const state = hasChildren
    ? node.expanded
      ? vscode.TreeItemCollapsibleState.Expanded
      : vscode.TreeItemCollapsibleState.Collapsed
    : vscode.TreeItemCollapsibleState.None;
  const item = new vscode.TreeItem(node.label, state);
  item.id = node.id;
  item.description = node.description;
  item.tooltip = node.tooltip;
  if (node.icon)
    item.iconPath = new vscode.ThemeIcon(
      node.icon.id,
      node.icon.color ? new vscode.ThemeColor(node.icon.color) : undefined,
    );
  return item;
}

/**
 * Whether two trees are the same, words and actions alike (the nodes are plain data). A view
 * fires no change for a rebuild that is equal: a refresh re-renders the rows, and a context-menu
 * action chosen on a row meanwhile reaches no item (VS Code finds no element for its handle), or
 * the menu closes under the pointer. Updates that bring nothing new (a poll after the action's own
 * read) must not cost the person their click.
 */
export function sameTree(a: readonly TreeNode[], b: readonly TreeNode[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}
