import { recordRef } from "../domain/chains.js";
import type { Worker } from "node:worker_threads";
import { type Kind, moves } from "../domain/kinds/index.js";
import type { ImportCounts, ImportRecord, IngestWriter } from "../store/ports/writes.js";
import { closeWorker, startModuleWorker } from "../store/shared/worker-thread.js";
import type { RefreshReply, RefreshRequest } from "./refresh-worker.js";

// The server's side of the background derive: a worker thread
// (refresh-worker.ts) started on the first write that needs it, told which
// collections ingest changed. One per process; should it die, the next
// write starts another (its fits are then made again in full).

/** Whether writes of `kind` change what derive computes: appraisals (sales, listings) and rarity (tokens), as the kinds declare. */
const derivedFrom = (kind: Kind) => moves(kind, "appraisal-inputs") || moves(kind, "rarity-inputs");

export interface DerivedRefresh {
  /** Called after each refresh (or failure), in the server's thread. */
  onRefreshed(listener: (reply: RefreshReply) => void): void;
  close(): Promise<void>;
}

/**
 * `writer`, telling a background derive of the collections each committed
 * batch changed: sales, listings and tokens feed appraisals and rarity.
 */
export function refreshAfterWrites(writer: IngestWriter, db: string, maxClockSkewSeconds?: number): IngestWriter & DerivedRefresh {
  let worker: Worker | undefined;
  const listeners: ((reply: RefreshReply) => void)[] = [];
  let closed = false;

  const start = (): Worker => {
    const w = startModuleWorker(import.meta.url, "refresh-worker", { db, maxClockSkewSeconds });
    w.unref();
    w.on("message", (reply: RefreshReply) => {
      for (const l of listeners) l(reply);
    });
    const lost = () => {
      if (worker === w) worker = undefined;
    };
    w.on("error", lost);
    w.on("exit", lost);
    return w;
  };

  const touched = (kind: Kind, records: readonly ImportRecord[], counts: ImportCounts) => {
    // A reorganisation names no collection: the writer reports those it changed, fitted again in full (what it took back may be anywhere in their history).
    const reorganised = counts.collections ?? [];
    if (closed || (reorganised.length === 0 && (!derivedFrom(kind) || counts.inserted + counts.updated === 0))) return;
    // A changed sale may have moved behind the model's last second: fitted again.
    const refit = reorganised.length > 0 || moves(kind, "rarity-inputs") || (moves(kind, "appraisal-history") && counts.updated > 0);
    const committedAt = Date.now();
    worker ??= start();
    // Each record's collection on its chain (domain/chains.ts collectionRef).
    const refs = reorganised.length > 0 ? reorganised : new Set(records.flatMap((r) => (r.contractAddress === undefined ? [] : [recordRef(r)])));
    for (const address of refs) worker.postMessage({ address, refit, committedAt } satisfies RefreshRequest);
  };

  return {
    async write(kind, records) {
      const counts = await writer.write(kind, records);
      touched(kind, records, counts);
      return counts;
    },
    onRefreshed(listener) {
      listeners.push(listener);
    },
    async close() {
      await writer.close();
      closed = true;
      const w = worker;
      if (w === undefined) return;
      // The refresh under way finishes; those waiting are dropped.
      await closeWorker(w);
    },
  };
}
