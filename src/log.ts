import { writeSync } from "node:fs";
import { type DestinationStream, pino, type Logger } from "pino";

// The server's log: one JSON line per event on stdout (pino). A line never
// blocks the event loop: a stalled reader of stdout (a full pipe, a slow log
// shipper) would otherwise stall every request with it. Lines are batched:
// held until 64 KB are pending or 100 ms have passed, then handed to the
// kernel in one write instead of one per request line (a write costs about
// the same CPU whatever its size up to tens of KB, so a batch shares it
// among its lines). What waits is bounded (MAX_PENDING_BYTES): past
// it, lines are dropped rather than held without limit. What is pending is
// written when the process exits, on a crash as on a normal exit; only a
// SIGKILL loses the last 100 ms.
//
// Writes are synchronous on a non-blocking descriptor, not asynchronous
// writes on the thread pool (pino.destination with sync: false): one of
// those could still be in flight when the process exits, and the final
// synchronous write then overtook it (lines out of order, seen in CI). Here
// a full pipe answers EAGAIN at once; the rest waits for the next tick.

const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 100;
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** How long the exit handler waits, in all, for a stalled reader of stdout. */
const EXIT_WAIT_MS = 2_000;
const STDOUT = 1;

/** The process's one stdout destination, shared by every logger it makes: one timer, one pair of exit handlers, lines in order. */
let stdout: LineBatches | undefined;

export function createLogger(level: string): Logger {
  if (level === "silent") return pino({ level });
  stdout ??= new LineBatches();
  const logger = pino({ level }, stdout);
  ours.set(logger, stdout);
  return logger;
}

/** Loggers createLogger made, with their destination (default formatting: requestLine may write their lines itself). */
const ours = new WeakMap<Logger, DestinationStream>();

/** The fields of the request line of a call Fastify or the raw GET path answered (entry.ts). */
export interface RequestLine {
  reqId: string;
  method: string;
  url: string;
  status: number;
  ms: number;
}

/**
 * Writes `log.info({reqId, method, url, status, ms}, "request")`, or nothing
 * below info. For a logger createLogger made, the line is formatted here, to
 * the byte as pino formats it (level, time, the logger's bindings, the
 * fields, msg): pino's generic path (a child's bindings, each value
 * serialized by type, then the message) was a tenth of a cached answer's
 * CPU in a profile (bench:profile).
 */
export function requestLineWriter(log: Logger): (line: RequestLine) => void {
  if (!log.isLevelEnabled("info")) return () => {};
  const destination = ours.get(log);
  if (destination === undefined) return (line) => log.info(line, "request");
  const bindings = bindingsOf(log);
  return (line) => destination.write(formatRequestLine(Date.now(), bindings, line));
}

/** A logger's bindings as pino writes them after the time (`,"pid":…,"hostname":…`). */
export function bindingsOf(log: Logger): string {
  return (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? "";
}

/** The request line as pino's default formatting writes it at info (test/unit/log.test.ts compares the two). */
export function formatRequestLine(time: number, bindings: string, { reqId, method, url, status, ms }: RequestLine): string {
  return `{"level":30,"time":${time}${bindings},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"url":${JSON.stringify(url)},"status":${status},"ms":${ms},"msg":"request"}\n`;
}

/** Lines collected into one string per batch, then written to stdout without ever blocking the loop. */
class LineBatches implements DestinationStream {
  #lines: string[] = [];
  #bytes = 0;
  /** What the kernel did not take yet (a full pipe), oldest first. */
  #unwritten: Buffer[] = [];
  #unwrittenBytes = 0;

  constructor() {
    // Node makes a pipe or socket on stdout non-blocking when it opens
    // process.stdout (a file or terminal never holds a write for long):
    // from then on a write to a full pipe fails with EAGAIN instead of
    // waiting for the reader.
    void process.stdout;
    setInterval(() => this.#flush(), BATCH_MS).unref();
    process.prependListener("beforeExit", () => this.#flush());
    process.prependListener("exit", () => this.#flushBeforeExit());
  }

  write(line: string): void {
    if (this.#bytes + this.#unwrittenBytes + line.length > MAX_PENDING_BYTES) return;
    this.#lines.push(line);
    this.#bytes += line.length;
    if (this.#bytes >= BATCH_BYTES) this.#flush();
  }

  #flush(): void {
    if (this.#lines.length > 0) {
      const batch = Buffer.from(this.#lines.join(""));
      this.#lines = [];
      this.#bytes = 0;
      this.#unwritten.push(batch);
      this.#unwrittenBytes += batch.length;
    }
    this.#writeWhatFits();
  }

  /** Writes the oldest unwritten bytes until the kernel takes no more; true once none are left. */
  #writeWhatFits(): boolean {
    while (this.#unwritten.length > 0) {
      const head = this.#unwritten[0]!;
      let n: number;
      try {
        n = writeSync(STDOUT, head);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "EAGAIN") return false;
        // stdout is gone (EPIPE, closed): nothing more can be written.
        this.#unwritten = [];
        this.#unwrittenBytes = 0;
        return true;
      }
      this.#unwrittenBytes -= n;
      if (n < head.length) this.#unwritten[0] = head.subarray(n);
      else this.#unwritten.shift();
    }
    return true;
  }

  /** On exit the loop is gone: written now, waiting a moment at a time for a slow reader, for EXIT_WAIT_MS at most. */
  #flushBeforeExit(): void {
    this.#flush();
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let waited = 0; !this.#writeWhatFits() && waited < EXIT_WAIT_MS; waited += 5) Atomics.wait(pause, 0, 0, 5);
  }
}
