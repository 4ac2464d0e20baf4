// The server's work-done progress as a notification with a Cancel button (cancel = stop).
// vscode-languageclient shows work-done progress in the status bar only, where it cannot be
// cancelled; this feature takes over `window/workDoneProgress/create` (it is registered after
// the built-in one, so its handler wins, also after the client restarts the server).
import * as vscode from 'vscode';
import {
  type BaseLanguageClient,
  type ClientCapabilities,
  type FeatureState,
  type StaticFeature,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  type WorkDoneProgressReport,
  type ProgressToken,
} from 'vscode-languageclient/node';

export class CancellableProgress implements StaticFeature {
  private readonly parts = new Set<Part>();

  constructor(private readonly client: BaseLanguageClient) {}

  /** How many progress notifications are showing. */
  get active(): number {
    return this.parts.size;
  }

  /** What the Cancel button does, for every progress showing. */
  cancelAll(): void {
    for (const part of this.parts) part.cancel();
  }

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.window ??= {};
    capabilities.window.workDoneProgress = true;
  }

  getState(): FeatureState {
    return { kind: 'static' };
  }

  initialize(): void {
    this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      this.parts.add(new Part(this.client, token, (p) => this.parts.delete(p)));
    });
  }

  clear(): void {
    for (const part of this.parts) part.done();
    this.parts.clear();
  }
}

class Part {
  private listener: vscode.Disposable | undefined;
  private progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
  private reported = 0;
  private finish: (() => void) | undefined;
  private cancelled = false;

  constructor(
    private readonly client: BaseLanguageClient,
    private readonly token: ProgressToken,
    private readonly onDone: (part: Part) => void,
  ) {
    this.listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind === 'begin') this.begin(value);
      else if (value.kind === 'report') this.report(value);
      else this.done();
    });
  }

  private begin(params: WorkDoneProgressBegin): void {
    if (!this.listener) return; // ended before it began
    void vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: params.title,
        cancellable: params.cancellable ?? false,
      },
      (progress, cancel) => {
        if (!this.listener) return Promise.resolve();
        this.progress = progress;
        cancel.onCancellationRequested(() => this.cancel());
        this.report(params);
        return new Promise<void>((resolve) => (this.finish = resolve));
      },
    );
  }

  private report(params: WorkDoneProgressBegin | WorkDoneProgressReport): void {
    if (typeof params.percentage === 'number') {
      const pct = Math.max(0, Math.min(100, params.percentage));
      const increment = Math.max(0, pct - this.reported);
      this.reported += increment;
      this.progress?.report({ message: params.message, increment });
    } else if (params.message) {
      this.progress?.report({ message: params.message });
    }
  }

  /** The person pressed Cancel: the server stops the run and then ends the progress. */
  cancel(): void {
    if (this.cancelled || !this.listener) return;
    this.cancelled = true;
    void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token: this.token });
  }

  done(): void {
    this.listener?.dispose();
    this.listener = undefined;
    this.finish?.();
    this.finish = undefined;
    this.onDone(this);
  }
}
