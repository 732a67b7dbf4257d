import cluster, { type Worker } from "node:cluster";
import { fileURLToPath } from "node:url";
import { createLogger } from "../log.js";
import type { ServeConfig } from "../config/serve.js";
import { primaryCounts } from "../counts.js";
import { startServer } from "../server.js";
import { openReadRepositories } from "../store/open.js";
import { CliError } from "./errors.js";

// `serve`: one process, or with --workers N a node:cluster primary that
// forks N workers sharing the port, each opening the store read-only.
// SIGTERM/SIGINT drain every worker (requests in flight finish) before exit.

/** The environment variable that hands a worker its (already validated) config. */
export const WORKER_CONFIG_ENV = "MARKETDATA_WORKER_CONFIG";
/** The compiled worker module beside this one (dist/src/cli/worker.js): workers start without compiling anything. */
const WORKER_ENTRY = fileURLToPath(new URL("./worker.js", import.meta.url));
/**
 * A worker that dies is replaced after RESPAWN_DELAY_MS, doubled for each
 * worker in a row that died within STARTUP_GRACE_MS of its start (a crash
 * loop: the store gone, a port taken), up to RESPAWN_MAX_DELAY_MS; after
 * MAX_START_FAILURES such deaths in a row the server stops and exits 1 with
 * the reason, rather than restarting forever.
 */
const RESPAWN_DELAY_MS = 250;
const RESPAWN_MAX_DELAY_MS = 30_000;
const STARTUP_GRACE_MS = 10_000;
export const MAX_START_FAILURES = 5;

type WorkerMessage = { type: "listening"; url: string } | { type: "failed"; line: string };

export async function serveUntilSignalled(config: ServeConfig, onReady?: (url: string) => void): Promise<void> {
  // Handlers first: a SIGTERM that arrives while the server starts (a
  // supervisor's, or a test's as soon as it reads the listening line) is a
  // shutdown once it has started, never the default death by signal.
  const signalled = firstSignal();
  if (config.workers > 1) return runPrimary(config, signalled, onReady);
  const server = await startServer(config);
  onReady?.(server.url);
  await stopOn(signalled, (signal) => {
    server.app.log.info({ signal }, "shutting down: finishing requests in flight");
    return server.close();
  });
}

/**
 * The first SIGINT or SIGTERM from now on. The handlers stay installed: a
 * second signal (a terminal's Ctrl-C reaches the primary and its workers
 * alike) must not kill a draining process.
 */
function firstSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.on("SIGINT", resolve);
    process.on("SIGTERM", resolve);
  });
}

/** Once `signalled`, runs `stop` (exit code 1 if it fails). */
async function stopOn(signalled: Promise<NodeJS.Signals>, stop: (signal: NodeJS.Signals) => Promise<void>): Promise<void> {
  const signal = await signalled;
  try {
    await stop(signal);
  } catch (err) {
    process.stderr.write(`marketdata: error during shutdown: ${String(err)}\n`);
    process.exitCode = 1;
  }
}

async function runPrimary(config: ServeConfig, signalled: Promise<NodeJS.Signals>, onReady?: (url: string) => void): Promise<void> {
  const log = createLogger(config.logLevel);
  // Refuse a missing or outdated store here, once, with the CLI's message.
  await (await openReadRepositories(config.db, { poolSize: 1 })).close();
  // Before any worker: the windows its workers share, and the sum of their metrics.
  const counts = await primaryCounts(config);
  cluster.setupPrimary({ exec: WORKER_ENTRY, args: [] });
  const env = { [WORKER_CONFIG_ENV]: JSON.stringify(config) };
  let stopping = false;
  /** Until every first worker listens: a worker that dies then is no crash to recover from, but the reason not to start. */
  let starting = true;
  const live = new Set<Worker>();
  let failed = false;
  /** Workers in a row that died within STARTUP_GRACE_MS of their start. */
  let startFailures = 0;
  let giveUp: (reason: string) => void = () => {};
  const gaveUp = new Promise<string>((resolve) => {
    giveUp = resolve;
  });

  const fork = (): Worker => {
    const worker = cluster.fork(env);
    const started = performance.now();
    live.add(worker);
    worker.on("exit", (code, signal) => {
      live.delete(worker);
      if (stopping) {
        if (code !== 0) failed = true;
        return;
      }
      if (starting) return;
      const atStart = performance.now() - started < STARTUP_GRACE_MS;
      startFailures = atStart ? startFailures + 1 : 0;
      if (startFailures >= MAX_START_FAILURES) {
        const reason = `${startFailures} workers in a row died within ${STARTUP_GRACE_MS / 1000} s of starting (the last with ${signal ?? `exit code ${code}`}); stopping`;
        log.error({ worker: worker.id, code, signal }, reason);
        giveUp(reason);
        return;
      }
      const delay = Math.min(RESPAWN_MAX_DELAY_MS, RESPAWN_DELAY_MS * 2 ** startFailures);
      log.error({ worker: worker.id, code, signal, restartInMs: delay }, "worker died; starting a replacement");
      setTimeout(() => !stopping && fork(), delay).unref();
    });
    return worker;
  };

  const urls = await Promise.all(
    Array.from({ length: config.workers }, () => {
      const worker = fork();
      return new Promise<string>((resolve, reject) => {
        let why: string | undefined;
        worker.on("message", (m: WorkerMessage) => {
          if (m.type === "listening") resolve(m.url);
          else if (m.type === "failed") why = m.line;
        });
        worker.once("exit", (code) => reject(new CliError(why ?? `a worker exited with code ${code} before listening`)));
      });
    }),
  ).catch(async (err: unknown) => {
    stopping = true;
    // The others end before the primary does (say nothing more, leave nothing behind).
    const exits = [...live].map((w) => new Promise<void>((resolve) => w.once("exit", () => resolve())));
    for (const w of live) w.process.kill("SIGTERM");
    const late = setTimeout(() => {
      for (const w of live) w.process.kill("SIGKILL");
    }, STARTUP_GRACE_MS).unref();
    await Promise.all(exits);
    clearTimeout(late);
    await counts.close();
    throw err;
  });
  starting = false;
  const url = urls[0]!;
  log.info({ workers: config.workers }, `Server listening at ${url}`);
  onReady?.(url);

  const ended = await Promise.race([signalled.then((signal) => ({ signal })), gaveUp.then((reason) => ({ reason }))]);
  const stopWorkers = async () => {
    stopping = true;
    const exits = [...live].map((w) => new Promise<void>((resolve) => w.once("exit", () => resolve())));
    for (const w of live) w.process.kill("SIGTERM");
    await Promise.all(exits);
    await counts.close();
  };
  if ("reason" in ended) {
    await stopWorkers();
    throw new CliError(`serve: ${ended.reason}`);
  }
  await stopOn(Promise.resolve(ended.signal), async (signal) => {
    log.info({ signal, workers: live.size }, "shutting down: workers finish requests in flight");
    await stopWorkers();
    if (failed) throw new Error("a worker did not shut down cleanly");
  });
}

/** The body of a worker process (worker.ts, compiled: the cluster exec entry). */
export async function runWorker(config: ServeConfig): Promise<void> {
  const signalled = firstSignal();
  const server = await startServer(config);
  process.send?.({ type: "listening", url: server.url } satisfies WorkerMessage);
  await stopOn(signalled, () => server.close());
  // The IPC channel would keep the process alive.
  process.disconnect?.();
}
