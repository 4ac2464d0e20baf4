// "Flower: Show State": the server's `flower/state` answer as a read-only Markdown page.
import * as vscode from 'vscode';
import { renderState } from './format';
import type { StateResult } from './protocol';

export const STATE_URI = vscode.Uri.from({ scheme: 'flower', path: `/${vscode.l10n.t('Flower State')}.md` });

export class StateView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private text = renderState(undefined);
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider('flower', this);

  provideTextDocumentContent(): string {
    return this.text;
  }

  async show(state: StateResult): Promise<vscode.TextEditor> {
    this.text = renderState(state);
    this.changed.fire(STATE_URI);
    const doc = await vscode.workspace.openTextDocument(STATE_URI);
    return vscode.window.showTextDocument(doc, { preview: true });
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
