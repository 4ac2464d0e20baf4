// Every call between the extension and the language server, typed by the generated MethodTypes
// (protocol.ts, from server/flower_lsp/protocol.py): a method's params and result are the
// protocol's, so tsc rejects a wrong argument, a wrong handler or a misread result.
import * as vscode from 'vscode';
import type { HandlerResult, LanguageClient } from 'vscode-languageclient/node';
import type { CommandName, MethodTypes, NotificationName, RequestName, ServerRequestName } from './protocol';

export type Params<M extends keyof MethodTypes> = MethodTypes[M]['params'];
export type Result<M extends keyof MethodTypes> = MethodTypes[M]['result'];

/** A request to the server, answered with its result. */
export function request<M extends RequestName>(
  client: LanguageClient,
  method: M,
  params: Params<M>,
): Promise<Result<M>> {
  return client.sendRequest<Result<M>>(method, params);
}

/** Handle a notification from the server. */
export function onNotification<M extends NotificationName>(
  client: LanguageClient,
  method: M,
  handler: (params: Params<M>) => void,
): vscode.Disposable {
  return client.onNotification(method, handler);
}

/** Answer a request from the server. */
export function onRequest<M extends ServerRequestName>(
  client: LanguageClient,
  method: M,
  handler: (params: Params<M>, token: vscode.CancellationToken) => HandlerResult<Result<M>, void>,
): vscode.Disposable {
  return client.onRequest<Result<M>, void>(method, handler);
}

/**
 * A server command with its one argument object (the language client registered the command):
 * its result, or undefined when there was none.
 */
export function executeCommand<C extends CommandName>(
  command: C,
  args: Params<C>,
): Thenable<Result<C> | undefined> {
  return vscode.commands.executeCommand<Result<C> | undefined>(command, args);
}

/** How the extension's parts run a server command: undefined when the server is not there. */
export type RunCommand = <C extends CommandName>(
  command: C,
  args: Params<C>,
) => Promise<Result<C> | undefined>;
