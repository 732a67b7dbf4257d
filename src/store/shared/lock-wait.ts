// How long an ingest batch waits for another writer's lock (an import from
// the CLI, a stats rebuild) before it fails as unavailable (the caller is
// answered 503 with Retry-After and sends it again), on either engine.
export const LOCK_WAIT_MS = 10_000;

export interface LockWaitOptions {
  /** Milliseconds a batch waits for another writer's lock (default LOCK_WAIT_MS; tests make it short). */
  lockWaitMs?: number;
}
