import { type DestinationStream, pino, type Logger } from "pino";

// The server's log: one JSON line per event on stdout (pino), written
// asynchronously. A line never blocks the event loop: a stalled reader of
// stdout (a full pipe, a slow log shipper) would otherwise stall every
// request with it. Lines are batched: held until 64 KB are pending or 100 ms
// have passed, then handed to the kernel in one write instead of one per
// request line (each write costs ~50 µs of CPU whatever its size up to tens
// of KB: a 4 KB batch still cost 2 µs per request line). What waits is
// bounded (MAX_PENDING_BYTES): past it, lines are dropped rather than held
// without limit. What is pending is written when the process exits, on a
// crash as on a normal exit; only a SIGKILL loses the last 100 ms.

const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 100;
const MAX_PENDING_BYTES = 16 * 1024 * 1024;

/** The process's one stdout destination, shared by every logger it makes: one timer, one pair of exit handlers, lines in order. */
let stdout: LineBatches | undefined;

export function createLogger(level: string): Logger {
  if (level === "silent") return pino({ level });
  // pino's own asynchronous destination (sonic-boom) writes, retries and
  // bounds what is pending; it is handed whole batches, not lines: it
  // measures its pending text on every write it is given, which per line
  // cost more than formatting the line (docs/benchmarks.md, "Serving speed").
  stdout ??= new LineBatches(pino.destination({ dest: 1, sync: false, maxLength: MAX_PENDING_BYTES }));
  return pino({ level }, stdout);
}

/** Lines collected into one string per batch, then written by `out`. */
class LineBatches implements DestinationStream {
  readonly #out: DestinationStream & { flushSync(): void };
  #lines: string[] = [];
  #bytes = 0;

  constructor(out: DestinationStream & { flushSync(): void }) {
    this.#out = out;
    setInterval(() => this.#flush(), BATCH_MS).unref();
    // Before pino's own exit handler ends `out`: what is batched here goes
    // first. On "exit" the loop is gone, so it is written synchronously.
    process.prependListener("beforeExit", () => this.#flush());
    process.prependListener("exit", () => {
      try {
        this.#flush();
        this.#out.flushSync();
      } catch {
        // The destination is gone (stdout closed): nothing more can be written.
      }
    });
  }

  write(line: string): void {
    this.#lines.push(line);
    this.#bytes += line.length;
    if (this.#bytes >= BATCH_BYTES) this.#flush();
  }

  #flush(): void {
    if (this.#lines.length === 0) return;
    const batch = this.#lines.join("");
    this.#lines = [];
    this.#bytes = 0;
    this.#out.write(batch);
  }
}
