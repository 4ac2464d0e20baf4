// "Flower: Show Context Chart": a webview panel drawing the context growth of a folder's run
// (chart.ts), kept current as turns come. Its page loads one bundled script (dist/chart.js) and
// nothing from the network: the Content Security Policy allows that script (by nonce), its own
// style sheet, and nothing else. Colours come from the theme's chart colours.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { esc } from './chart';
import type { Histories } from './historyClient';
import { workspaceFolders } from './historyClient';

/** What the page reports after every drawing (the tests read it). */
export interface Rendered {
  folder: string;
  revision: number;
  turns: number;
  series: number;
  marks: number;
  width: number;
}

export class ContextChart implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private folder: string | undefined;
  private ready = false;
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly rendered = new vscode.EventEmitter<Rendered>();
  /** Fires when the page has drawn the chart. */
  readonly onDidRender = this.rendered.event;
  /** The last drawing the page reported. */
  last: Rendered | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly histories: Histories,
  ) {
    this.subscriptions.push(
      histories.onDidChange((change) => {
        if (!this.panel || !this.ready || change.folder !== this.folder) return;
        const history = this.histories.get(change.folder);
        if (!history) return;
        // a turn is all the page needs to append; anything else, the history whole
        if (change.turn)
          void this.panel.webview.postMessage({
            type: 'turn',
            turn: change.turn,
            revision: history.revision,
          });
        else void this.panel.webview.postMessage({ type: 'history', history });
      }),
    );
  }

  get visible(): boolean {
    return this.panel?.visible ?? false;
  }

  /** Open the chart of `folder` (default: the first folder), or bring it forward. */
  show(folder?: string): void {
    const target = typeof folder === 'string' && folder ? folder : workspaceFolders()[0];
    if (!target) {
      void vscode.window.showInformationMessage('Flower: open a folder to see its run.');
      return;
    }
    const name = vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(target))?.name ?? target;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        'flower.contextChart',
        `Context · ${name}`,
        vscode.ViewColumn.Active,
        {
          enableScripts: true,
          retainContextWhenHidden: true,
          localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist')],
        },
      );
      this.panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'media', 'flower.svg');
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.ready = false;
      });
      this.panel.webview.onDidReceiveMessage((message: unknown) => this.onMessage(message));
      this.ready = false;
      this.folder = target;
      this.panel.webview.html = this.page(this.panel.webview, name);
    } else {
      this.panel.title = `Context · ${name}`;
      this.folder = target;
      this.post();
      this.panel.reveal();
    }
  }

  private onMessage(message: unknown): void {
    if (!message || typeof message !== 'object') return;
    const m = message as { type?: string } & Partial<Rendered>;
    if (m.type === 'ready') {
      this.ready = true;
      this.post();
    } else if (m.type === 'rendered' && this.folder) {
      this.last = {
        folder: this.folder,
        revision: m.revision ?? 0,
        turns: m.turns ?? 0,
        series: m.series ?? 0,
        marks: m.marks ?? 0,
        width: m.width ?? 0,
      };
      this.rendered.fire(this.last);
    }
  }

  private post(): void {
    if (!this.panel || !this.ready || !this.folder) return;
    const history = this.histories.get(this.folder);
    void this.panel.webview.postMessage(history ? { type: 'history', history } : { type: 'empty' });
    if (!history) void this.histories.refresh(this.folder);
  }

  private page(webview: vscode.Webview, name: string): string {
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'chart.js'));
    const csp = [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Context · ${esc(name)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<header><h1>Context growth · ${esc(name)}</h1><p id="summary">Reading the history…</p></header>
<main id="chart" aria-live="polite"></main>
<ul id="legend"></ul>
<div id="tooltip" role="tooltip" hidden></div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  dispose(): void {
    this.panel?.dispose();
    for (const s of this.subscriptions) s.dispose();
    this.rendered.dispose();
  }
}

// The theme's colours only: VS Code sets these variables in every webview.
const STYLE = `
body { margin: 0; padding: 12px 16px; color: var(--vscode-foreground); background: var(--vscode-editor-background);
  font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); }
header h1 { font-size: 1.15em; font-weight: 600; margin: 0 0 2px; }
header p { margin: 0 0 8px; color: var(--vscode-descriptionForeground); }
#chart { position: relative; width: 100%; height: calc(100vh - 120px); min-height: 220px; }
#chart .empty { padding: 40px 0; color: var(--vscode-descriptionForeground); }
svg.chart { display: block; overflow: visible; }
.grid { stroke: var(--vscode-editorWidget-border, var(--vscode-descriptionForeground)); stroke-opacity: .25; }
.tick, .axis, .limit { fill: var(--vscode-descriptionForeground); font-size: 11px; }
.limit.threshold { fill: var(--vscode-charts-red); }
.window { stroke: var(--vscode-foreground); stroke-opacity: .55; stroke-dasharray: 6 4; }
.threshold { stroke: var(--vscode-charts-red); stroke-dasharray: 4 3; }
.warn { stroke: var(--vscode-charts-yellow); stroke-opacity: .6; stroke-dasharray: 2 4; }
.line { fill: none; stroke-width: 1.8; }
.point { stroke: var(--vscode-editor-background); stroke-width: .8; }
.point.judge { stroke: none; fill-opacity: .75; }
.c0 { stroke: var(--vscode-charts-blue); } .point.c0, .swatch.c0 { fill: var(--vscode-charts-blue); background: var(--vscode-charts-blue); }
.c1 { stroke: var(--vscode-charts-green); } .point.c1, .swatch.c1 { fill: var(--vscode-charts-green); background: var(--vscode-charts-green); }
.c2 { stroke: var(--vscode-charts-purple); } .point.c2, .swatch.c2 { fill: var(--vscode-charts-purple); background: var(--vscode-charts-purple); }
.c3 { stroke: var(--vscode-charts-orange); } .point.c3, .swatch.c3 { fill: var(--vscode-charts-orange); background: var(--vscode-charts-orange); }
.c4 { stroke: var(--vscode-charts-yellow); } .point.c4, .swatch.c4 { fill: var(--vscode-charts-yellow); background: var(--vscode-charts-yellow); }
.c5 { stroke: var(--vscode-charts-red); } .point.c5, .swatch.c5 { fill: var(--vscode-charts-red); background: var(--vscode-charts-red); }
.c6 { stroke: var(--vscode-foreground); } .point.c6, .swatch.c6 { fill: var(--vscode-foreground); background: var(--vscode-foreground); }
.c7 { stroke: var(--vscode-descriptionForeground); } .point.c7, .swatch.c7 { fill: var(--vscode-descriptionForeground); background: var(--vscode-descriptionForeground); }
.point.c0, .point.c1, .point.c2, .point.c3, .point.c4, .point.c5, .point.c6, .point.c7 { stroke: var(--vscode-editor-background); }
.mark line { stroke-width: 1.2; }
.mark.verdict line { stroke: var(--vscode-descriptionForeground); }
.mark.verdict path { fill: var(--vscode-charts-yellow); }
.mark.verdict.achieved path { fill: var(--vscode-charts-green); }
.mark.verdict.not_yet path { fill: var(--vscode-charts-orange); }
.mark.verdict.unreachable path { fill: var(--vscode-charts-red); }
.mark.handoff line { stroke: var(--vscode-charts-purple); stroke-dasharray: 3 3; }
.mark.handoff text { fill: var(--vscode-charts-purple); font-size: 11px; }
.mark.wake line { stroke: var(--vscode-descriptionForeground); stroke-dasharray: 1 3; }
.mark.wake text { fill: var(--vscode-descriptionForeground); font-size: 11px; }
.cursor { stroke: var(--vscode-focusBorder); stroke-width: 1; }
#legend { list-style: none; display: flex; flex-wrap: wrap; gap: 4px 16px; padding: 0; margin: 6px 0 0;
  color: var(--vscode-descriptionForeground); }
#legend .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
#legend .dash { display: inline-block; width: 14px; margin-right: 6px; vertical-align: 3px; border-top: 2px dashed; }
#legend .dash.window { border-color: var(--vscode-foreground); opacity: .6; }
#legend .dash.threshold { border-color: var(--vscode-charts-red); }
#legend .dash.warn { border-color: var(--vscode-charts-yellow); border-top-style: dotted; }
.point.active { stroke: var(--vscode-focusBorder); stroke-width: 2; r: 4.5px; }
#tooltip { position: fixed; left: 0; top: 0; pointer-events: none; padding: 6px 8px; border-radius: 3px; white-space: pre;
  background: var(--vscode-editorHoverWidget-background); color: var(--vscode-editorHoverWidget-foreground);
  border: 1px solid var(--vscode-editorHoverWidget-border); font-size: 12px; line-height: 1.45; z-index: 10; }
`;
