import type { LockWaitOptions } from "../shared/lock-wait.js";
import type { Worker } from "node:worker_threads";
import type { Kind } from "../../domain/kinds/index.js";
import { RecordConflictError, StoreError, StoreReadOnlyError, StoreUnavailableError } from "../ports/errors.js";
import type { ImportCounts, ImportRecord, IngestWriter } from "../ports/writes.js";
import type { WriteReply, WriteRequest, WriterData } from "./ingest-worker.js";
import { closeWorker, startModuleWorker } from "../shared/worker-thread.js";

// The server's side of its SQLite writes: batches are handed to a worker
// thread (ingest-worker.ts), which upserts and commits them (group commit,
// synchronous = FULL), so reads never wait for a write, its fsync or the
// store's write lock. Started on the first write; one per process. Should
// the thread die, the batches it held fail as unavailable and the next write
// starts another.

const ERRORS: Record<string, new (message: string) => Error> = { StoreError, StoreReadOnlyError, StoreUnavailableError, RecordConflictError };

export interface SqliteWriterOptions extends LockWaitOptions {
  /** Told once why the writer's thread ended, should it (it is started again at the next write). */
  onStopped?: (why: string) => void;
  /** Rows between refreshes of the planner's statistics (tests). */
  statsEveryRows?: number;
}

export function sqliteIngestWriter(path: string, options: SqliteWriterOptions = {}): IngestWriter {
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, { resolve(c: ImportCounts): void; reject(e: Error): void }>();
  let closed = false;

  const start = (): Worker => {
    const data: WriterData = { path, statsEveryRows: options.statsEveryRows, lockWaitMs: options.lockWaitMs };
    const w = startModuleWorker(import.meta.url, "ingest-worker", data);
    let why: string | undefined;
    w.on("message", (reply: WriteReply) => {
      if ("died" in reply) {
        why = reply.died;
        return;
      }
      const p = pending.get(reply.id);
      if (p === undefined) return;
      pending.delete(reply.id);
      if (pending.size === 0) w.unref();
      if ("counts" in reply) p.resolve(reply.counts);
      else p.reject(new (ERRORS[reply.error.name] ?? Error)(reply.error.message));
    });
    const lost = (reason: string) => {
      if (worker !== w) return;
      worker = undefined;
      if (!closed) options.onStopped?.(reason);
      for (const p of pending.values()) p.reject(new StoreUnavailableError(`the store's writer stopped (${reason}); retry`));
      pending.clear();
    };
    w.on("error", (err: unknown) => lost(err instanceof Error ? `${err.name}: ${err.message}` : String(err)));
    w.on("exit", (code) => lost(why ?? `exit ${code}`));
    return w;
  };

  return {
    write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts> {
      if (closed) return Promise.reject(new StoreUnavailableError("the store's writer is closed"));
      worker ??= start();
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        // Busy, the thread keeps the process alive; idle, it does not.
        if (pending.size === 0) worker!.ref();
        pending.set(id, { resolve, reject });
        worker!.postMessage({ id, kind, records: records as ImportRecord[] } satisfies WriteRequest);
      });
    },
    async close() {
      closed = true;
      const w = worker;
      if (w === undefined) return;
      // Batches already handed over are committed first: the thread drains its queue, then exits.
      await closeWorker(w);
    },
  };
}
