import { pino, type Logger } from "pino";

// The server's log: one JSON line per event on stdout (pino), written
// asynchronously. A line never blocks the event loop: a stalled reader of
// stdout (a full pipe, a slow log shipper) would otherwise stall every
// request with it. Lines are batched: held until 4 KB are pending or 100 ms
// have passed, then handed to the kernel in one write instead of one system
// call per request line. What waits is bounded (MAX_PENDING_BYTES): past it,
// lines are dropped rather than held without limit. pino writes what is
// pending when the process exits, on a crash as on a normal exit; only a
// SIGKILL loses the last 100 ms.

const BATCH_BYTES = 4096;
const BATCH_MS = 100;
const MAX_PENDING_BYTES = 16 * 1024 * 1024;

export function createLogger(level: string): Logger {
  if (level === "silent") return pino({ level });
  return pino(
    { level },
    pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES, periodicFlush: BATCH_MS, maxLength: MAX_PENDING_BYTES }),
  );
}
