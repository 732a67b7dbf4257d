import type { Worker } from "node:worker_threads";
import { closeWorker, startModuleWorker } from "../store/shared/worker-thread.js";
import type { WebhookLog, WebhookStats } from "../service/webhooks/held.js";
import type { WebhookSettings } from "../config/serve.js";

// The server's side of its webhook deliveries: a worker thread
// (webhooks-worker.ts), told of this process's commits, sending back its
// figures every second. Should it die, it is started again (its leases
// lapse meanwhile: another process, or the new thread, takes them).

export interface DispatcherThreadData {
  db: string;
  holder: string;
  settings: WebhookSettings;
}

export type DispatcherThreadMessage = { poke: string[] } | "close";

export type DispatcherThreadReply =
  | { type: "ready" }
  | { type: "stats"; stats: WebhookStats[] }
  | { type: "log"; level: "warn" | "info"; obj: object; msg: string };

export interface DispatcherThread {
  poke(collections: ReadonlySet<string>): void;
  stats(): WebhookStats[];
  /** Resolves once the thread has started delivering (tests). */
  readonly ready: Promise<void>;
  /** Stops delivering: positions written, leases given back. */
  close(): Promise<void>;
}

export function startDispatcherThread(data: DispatcherThreadData, log: WebhookLog): DispatcherThread {
  let latest: WebhookStats[] = [];
  let closed = false;
  let closing: Promise<void> | undefined;
  let worker: Worker;
  let markReady: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const start = () => {
    const w = startModuleWorker(import.meta.url, "webhooks-worker", data);
    w.unref();
    w.on("message", (m: DispatcherThreadReply) => {
      if (m.type === "stats") latest = m.stats;
      else if (m.type === "log") log[m.level](m.obj, m.msg);
      else markReady();
    });
    w.on("error", (err) => log.warn({ err: err.message }, "webhooks: the delivering thread failed; starting it again"));
    w.on("exit", () => {
      if (!closed && worker === w) setTimeout(() => !closed && (worker = start()), 1000).unref();
    });
    return w;
  };
  worker = start();
  return {
    ready,
    poke: (collections) => worker.postMessage({ poke: [...collections] } satisfies DispatcherThreadMessage),
    stats: () => latest,
    // Once: a server closed twice (a test's shutdown, then its cleanup) must not wait for a thread that already exited.
    close: () => (closing ??= (async () => {
      closed = true;
      if (worker.threadId !== -1) await closeWorker(worker);
    })()),
  };
}
