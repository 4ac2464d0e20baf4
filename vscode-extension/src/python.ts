// Which Pythons may run the language server, and asking one of them, without letting the
// workspace shadow flower, whether it has the flower this extension was built with.
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { expand } from './settings';
import { PROBE_CODE, type ProbeOutput, type ProbeResult, readProbe } from './setupText';

export type PythonSource = 'setting' | 'managed' | 'python-extension' | 'default';

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

/**
 * The interpreters that may run flower, in the order they are tried: the flower.python setting,
 * the environment the extension manages (when it exists), the Python extension's active
 * interpreter (when that extension is installed), then python3 on the PATH.
 */
export async function candidatePythons(
  folder: vscode.WorkspaceFolder | undefined,
  managed: string | undefined,
): Promise<Python[]> {
  const found: Python[] = [];
  const configured = vscode.workspace.getConfiguration('flower', folder).get<string>('python', '');
  if (configured.trim()) found.push({ command: expand(configured, folder), source: 'setting' });
  if (managed) found.push({ command: managed, source: 'managed' });

  const api = await pythonExtensionApi();
  if (api) {
    try {
      const envPath = api.environments?.getActiveEnvironmentPath(folder?.uri);
      const resolved = envPath ? await api.environments?.resolveEnvironment(envPath) : undefined;
      const exe =
        resolved?.executable.uri?.fsPath ?? api.settings?.getExecutionDetails(folder?.uri).execCommand?.[0];
      if (exe) found.push({ command: exe, source: 'python-extension' });
    } catch {
      // an API from another version of the Python extension: fall through to python3
    }
  }
  found.push({ command: 'python3', source: 'default' });
  return found.filter((p, i) => found.findIndex((q) => q.command === p.command) === i);
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

/**
 * Every Python the extension starts for flower runs with -P and a working directory outside the
 * workspace: Python then puts neither the working directory nor a script's folder on sys.path,
 * so nothing in the workspace (a `flower_lsp/` or `flower/` folder, say) can stand in for flower.
 * -P needs Python 3.11, which flower needs anyway. (-I would also drop the user's site-packages,
 * where `pip install --user` puts flower.)
 */
export const SAFE_PATH = '-P';

export interface Probe extends ProbeResult {
  python: Python;
}

/** Asks `python` the way the server is started whether it has this extension's flower. */
export function probePython(python: Python, cwd: string, expected: string): Promise<Probe> {
  return new Promise((resolve) => {
    execFile(
      python.command,
      [SAFE_PATH, '-c', PROBE_CODE],
      { cwd, timeout: 30_000, windowsHide: true },
      (err, stdout, stderr) => {
        // execFile's error carries a spawn error's name or the exit code in `code`.
        const code = (err as { code?: unknown; killed?: boolean } | null)?.code;
        const output: ProbeOutput = {
          errno: err?.killed ? 'timeout' : typeof code === 'string' ? code : undefined,
          exitCode: !err ? 0 : typeof code === 'number' ? code : null,
          stdout: String(stdout),
          stderr: String(stderr),
        };
        resolve({ python, ...readProbe(output, expected) });
      },
    );
  });
}

export function describeSource(source: PythonSource): string {
  switch (source) {
    case 'setting':
      return vscode.l10n.t('the flower.python setting');
    case 'managed':
      return vscode.l10n.t('the environment the extension manages');
    case 'python-extension':
      return vscode.l10n.t("the Python extension's interpreter");
    default:
      return vscode.l10n.t('the default');
  }
}
