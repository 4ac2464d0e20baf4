// Which Python runs the language server: the `flower.python` setting, else the Python
// extension's active interpreter (when that extension is installed), else `python3`.
import { execFile } from 'node:child_process';
import * as os from 'node:os';
import * as vscode from 'vscode';

export type PythonSource = 'setting' | 'python-extension' | 'default';

export interface Python {
  command: string;
  source: PythonSource;
}

// The slice of ms-python.python's exported API that we use (it is optional at run time).
interface PythonExtensionApi {
  ready?: Promise<void>;
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(
      env: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand?: string[] };
  };
}

const PYTHON_EXTENSION = 'ms-python.python';

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    await api?.ready;
    return api;
  } catch {
    return undefined;
  }
}

function expand(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  let out = value.trim();
  if (out.startsWith('~/')) out = os.homedir() + out.slice(1);
  if (folder) out = out.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
  return out;
}

export async function resolvePython(folder: vscode.WorkspaceFolder | undefined): Promise<Python> {
  const configured = vscode.workspace.getConfiguration('flower', folder).get<string>('python', '');
  if (configured.trim()) return { command: expand(configured, folder), source: 'setting' };

  const api = await pythonExtensionApi();
  if (api) {
    try {
      const envPath = api.environments?.getActiveEnvironmentPath(folder?.uri);
      const resolved = envPath ? await api.environments?.resolveEnvironment(envPath) : undefined;
      const exe =
        resolved?.executable.uri?.fsPath ?? api.settings?.getExecutionDetails(folder?.uri).execCommand?.[0];
      if (exe) return { command: exe, source: 'python-extension' };
    } catch {
      // an API from another version of the Python extension: fall through to python3
    }
  }
  return { command: 'python3', source: 'default' };
}

/** Fires when the Python extension's interpreter changes (if it is installed). */
export async function onPythonInterpreterChanged(
  listener: () => void,
): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.environments?.onDidChangeActiveEnvironmentPath?.(listener);
}

export function hasPythonExtension(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION) !== undefined;
}

/** Undefined when `python -c "import flower_lsp"` works, else what went wrong, in one line. */
export function checkFlowerInstalled(python: Python, cwd: string | undefined): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      python.command,
      ['-c', 'import flower_lsp'],
      { cwd, timeout: 30_000, windowsHide: true },
      (err, _stdout, stderr) => {
        if (!err) return resolve(undefined);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return resolve(`${python.command} was not found`);
        if (code === 'EACCES') return resolve(`${python.command} is not executable`);
        const last = String(stderr).trim().split('\n').pop();
        resolve(last || err.message);
      },
    );
  });
}

export function describeSource(source: PythonSource): string {
  switch (source) {
    case 'setting':
      return 'the flower.python setting';
    case 'python-extension':
      return "the Python extension's interpreter";
    default:
      return 'the default';
  }
}
