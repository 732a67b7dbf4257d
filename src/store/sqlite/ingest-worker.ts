import { parentPort, workerData } from "node:worker_threads";
import type { Kind } from "../../domain/kinds/index.js";
import type { ImportCounts, ImportRecord } from "../ports/writes.js";
import { GroupCommitWriter } from "./group-commit.js";

// The worker thread of a server's SQLite writes (ingest-writer.ts starts it):
// upserts, commits and their fsyncs happen here, so the server's event loop
// never waits on the disk or the write lock. Each message is one batch; the
// batches that arrive while a commit is under way share the next one
// (group-commit.ts).

export interface WriteRequest {
  id: number;
  kind: Kind;
  records: ImportRecord[];
}

/** What the server's side hands the thread. */
export interface WriterData {
  path: string;
  statsEveryRows: number | undefined;
  lockWaitMs: number | undefined;
}

/** A reply to a batch, or the reason the thread is ending (it should not: the server's side logs it). */
export type WriteReply =
  | { id: number; counts: ImportCounts }
  | { id: number; error: { name: string; message: string } }
  | { died: string };

const port = parentPort!;
const data = workerData as WriterData;
const writer = new GroupCommitWriter(data.path, data);

// Should anything still escape, the server is told why before the thread ends.
const died = (err: unknown) => {
  port.postMessage({ died: err instanceof Error ? `${err.name}: ${err.message}` : String(err) } satisfies WriteReply);
  process.exit(1);
};
process.on("uncaughtException", died);
process.on("unhandledRejection", died);

port.on("message", (m: WriteRequest | "close") => {
  if (m === "close") {
    void writer.close().then(() => port.close());
    return;
  }
  writer.write(m.kind, m.records).then(
    (counts) => port.postMessage({ id: m.id, counts } satisfies WriteReply),
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      port.postMessage({ id: m.id, error: { name: e.constructor.name, message: e.message } } satisfies WriteReply);
    },
  );
});
