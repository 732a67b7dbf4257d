import { parentPort, workerData } from "node:worker_threads";
import { openWritableStore } from "../store/open.js";
import { StoreUnavailableError } from "../store/ports/errors.js";
import { DerivedRefresher, type RefreshResult } from "./refresh.js";

// The worker thread of a server's background derive (refresh-thread.ts
// starts it): the model's work and the derived rows' write happen here, so
// reads never wait for them. Collections to refresh arrive as messages; one
// is refreshed at a time, and a collection touched again while it waits is
// refreshed once.

export interface RefreshRequest {
  address: string;
  /** Its tokens or earlier sales changed: fit it again in full. */
  refit: boolean;
  /** When the write that asked for it was acknowledged (epoch ms). */
  committedAt: number;
}

export type RefreshReply =
  /** waitedMs: for each write it brought up to date, the time from its acknowledgement to this refresh's commit. */
  | { result: RefreshResult; waitedMs: number[] }
  | { failed: string; message: string };

/** Acknowledgement times kept per waiting collection (for waitedMs); past it, the latest are not kept. */
const KEPT_COMMIT_TIMES = 10_000;

/** While the store is unavailable (its write lock held by an import): pauses between attempts, and how long before the log is told. */
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5_000;
const SAY_UNAVAILABLE_AFTER_MS = 60_000;
let backoffMs = FIRST_BACKOFF_MS / 2;
let unavailableSince: number | undefined;

/** The pause after a refresh, as a share of its time. */
const PAUSE = 0.5;

const port = parentPort!;
const { db, maxClockSkewSeconds } = workerData as { db: string; maxClockSkewSeconds?: number };
const store = await openWritableStore(db);
const refresher = new DerivedRefresher(store.derive, maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds });
/** Waiting collections, in the order first touched: whether to refit, and when the writes waiting were acknowledged. */
const waiting = new Map<string, { refit: boolean; committedAt: number[] }>();
let running = false;
let closing = false;

port.on("message", (m: RefreshRequest | "close") => {
  if (m === "close") {
    closing = true;
    if (!running) void finish();
    return;
  }
  const w = waiting.get(m.address);
  if (w === undefined) waiting.set(m.address, { refit: m.refit, committedAt: [m.committedAt] });
  else {
    w.refit ||= m.refit;
    if (w.committedAt.length < KEPT_COMMIT_TIMES) w.committedAt.push(m.committedAt);
  }
  if (!running) {
    running = true;
    // After every message already queued: the writes of one moment share a refresh.
    setImmediate(() => void run());
  }
});

async function run(): Promise<void> {
  while (waiting.size > 0 && !closing) {
    const [address, w] = waiting.entries().next().value!;
    waiting.delete(address);
    const started = performance.now();
    try {
      const result = await refresher.refresh(address, w.refit);
      const doneAt = Date.now();
      port.postMessage({ result, waitedMs: w.committedAt.map((t) => doneAt - t) } satisfies RefreshReply);
    } catch (err) {
      if (err instanceof StoreUnavailableError && !closing) {
        // The write lock held by another writer (an import), or the store
        // restarting: the collection waits its turn again, after a pause,
        // said only when it has waited long (the log, not every attempt).
        const again = waiting.get(address);
        waiting.set(address, { refit: w.refit || (again?.refit ?? false), committedAt: [...w.committedAt, ...(again?.committedAt ?? [])].slice(0, KEPT_COMMIT_TIMES) });
        unavailableSince ??= performance.now();
        if (performance.now() - unavailableSince > SAY_UNAVAILABLE_AFTER_MS) {
          port.postMessage({ failed: address, message: `${err.message}; still trying` } satisfies RefreshReply);
          unavailableSince = performance.now();
        }
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
        continue;
      }
      // The next write to the collection asks again; a full fit then starts from the store.
      port.postMessage({ failed: address, message: err instanceof Error ? err.message : String(err) } satisfies RefreshReply);
    }
    unavailableSince = undefined;
    backoffMs = FIRST_BACKOFF_MS / 2;
    // At most two thirds of a core: after a refresh, half as long again
    // before the next (writes meanwhile share the next one), leaving the writer and the server
    // their share of a small machine. It also lets the messages that came
    // meanwhile in: a SQLite refresh never yields (its reads and writes are
    // synchronous).
    await new Promise((resolve) => setTimeout(resolve, (performance.now() - started) * PAUSE));
  }
  running = false;
  if (closing) await finish();
}

async function finish(): Promise<void> {
  await store.close();
  port.close();
}
