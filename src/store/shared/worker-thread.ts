import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/**
 * A worker thread running `module` (a URL beside the caller's own module):
 * its build in dist/, or, under tsx (dev, tests), its TypeScript source, with
 * tsx's loader registered in the thread before the module is imported.
 */
export function startModuleWorker(callerUrl: string, name: string, workerData: unknown): Worker {
  const ts = callerUrl.endsWith(".ts");
  const module = new URL(`./${name}${ts ? ".ts" : ".js"}`, callerUrl);
  return ts
    ? new Worker(`import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(module.href)}); });`, { eval: true, workerData })
    : new Worker(fileURLToPath(module), { workerData });
}

/**
 * Asks a worker started here to finish what it was handed and exit (it
 * takes the message "close"), and resolves once it has. Kept alive until
 * then: an idle worker is unreferenced.
 */
export async function closeWorker(w: Worker): Promise<void> {
  const exited = new Promise<void>((resolve) => w.once("exit", () => resolve()));
  w.ref();
  w.postMessage("close");
  await exited;
}
