import { once } from "node:events";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { type BulkKind, copyLine } from "./record-writes.js";
import { SYNC_WRITE_POOLS } from "./database.js";
import { stampVersions, type Touched } from "./data-versions.js";
import { PgFloorHistory } from "./floor-history.js";

/**
 * Opens a COPY stream into the staging table of `kind`. By default the
 * table is made for this transaction and dropped at its commit. With
 * `session`, it stays on the connection (emptied at each commit) for the
 * next transaction of the same kind: the server's writer, whose small
 * transactions spent a tenth of their time making and dropping it
 * (bench:ingest). A connection that failed is discarded
 * (writeTransaction), so a table made in a transaction that rolled back is
 * never counted on.
 */
export async function openStage(client: pg.PoolClient, kind: BulkKind, session = false): Promise<StageWriter> {
  const columns = ["line bigint", ...kind.stage.map((c) => `${c.name} ${c.type}`)];
  if (!session) {
    await client.query(`CREATE TEMP TABLE stage (${columns.join(", ")}) ON COMMIT DROP`);
  } else if (sessionStages.get(client) !== kind) {
    const drop = sessionStages.has(client) ? "DROP TABLE stage; " : "";
    await client.query(`${drop}CREATE TEMP TABLE stage (${columns.join(", ")}) ON COMMIT DELETE ROWS`);
    sessionStages.set(client, kind);
  }
  return new StageWriter(client.query(copyFrom(`COPY stage (line, ${kind.stage.map((c) => c.name).join(", ")}) FROM STDIN`)), kind);
}

/** The kind whose staging table a connection keeps (openStage's `session`). */
const sessionStages = new WeakMap<pg.PoolClient, BulkKind>();

/**
 * Bytes of COPY data sent at once: pg-copy-streams sends each write as its own
 * CopyData message (two socket writes), so lines are gathered into chunks.
 */
const CHUNK_BYTES = 64 * 1024;

/** Rows into the staging table through COPY, with backpressure; `rows` counts them. */
export class StageWriter {
  rows = 0;
  #failed: Error | undefined;
  #pending = "";

  constructor(
    private readonly copy: ReturnType<typeof copyFrom>,
    private readonly kind: BulkKind,
  ) {
    copy.on("error", (err: Error) => {
      this.#failed = err;
    });
  }

  /** Stages a record as `line` (by default the next); a promise when the stream's buffer is full (wait for the server). */
  write(record: Record<string, unknown>, line = this.rows + 1): void | Promise<void> {
    if (this.#failed !== undefined) throw this.#failed;
    this.rows++;
    this.#pending += copyLine(line, this.kind.row(record));
    if (this.#pending.length < CHUNK_BYTES) return;
    const chunk = this.#pending;
    this.#pending = "";
    if (!this.copy.write(chunk)) return once(this.copy, "drain").then(() => {});
  }

  async finish(): Promise<void> {
    if (this.#failed !== undefined) throw this.#failed;
    this.copy.end(this.#pending);
    this.#pending = "";
    if (this.#failed === undefined) await once(this.copy, "finish");
    if (this.#failed !== undefined) throw this.#failed;
  }

  /** Cuts the COPY short: the statement fails, and the transaction must roll back. */
  abort(err: unknown): void {
    this.copy.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}

/**
 * Runs `fn` in a transaction on one connection of `pool`, then takes the
 * next data version and stamps what `fn` marked in `touched` with it
 * (data-versions.ts) before COMMIT; rolls back on any error. A connection
 * that failed mid-COPY is discarded rather than reused.
 */
export async function writeTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient, touched: Touched) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    // No JIT in a write: its statements touch few rows, but a merge's estimate over a
    // temporary table or a range it cannot see can pass jit_above_cost, and compiling
    // then cost many times the statement (bench:reorg: 660 ms of JIT for a statement
    // that read nothing, on a store of 1M sales).
    await client.query(SYNC_WRITE_POOLS.has(pool) ? "BEGIN; SET LOCAL synchronous_commit = on; SET LOCAL jit = off" : "BEGIN; SET LOCAL jit = off");
    const touched: Touched = {};
    const result = await fn(client, touched);
    // What changed the floor (spans written or removed, tokens flagged) is kept in its history with this commit.
    await new PgFloorHistory(client).settle();
    await stampVersions(client, touched);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    broken = true;
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release(broken);
  }
}
