import { closeSync, constants, openSync } from "node:fs";
import Database, { type Statement } from "better-sqlite3";
import type { FeedPositions, NewWebhook, WebhookAttemptRecord, WebhookProgress, WebhookRecord, WebhookState, WebhookStore } from "../ports/webhooks.js";
import { WEBHOOK_LOG_SIZE } from "../ports/webhooks.js";
import { ATTEMPT_COLUMNS, attemptValues, POSITION_COLUMNS, positionValues, TOKEN_POSITION_MIGRATION, toAttempt, toWebhook, WEBHOOK_COLUMNS } from "../shared/webhook-rows.js";
import { type Db, openKeys, refusePostgres } from "./database.js";

// Webhooks of a SQLite store, in a file of their own beside it (as keys
// have, database.ts keysFileOf): positions, leases and delivery logs are
// written many times a second while webhooks deliver, and must never wait
// for an import's or the ingest writer's lock on the store, nor make them
// wait. The file holds signing secrets: owner-only, like the key file's
// neighbours. Leases here are judged by this machine's clock (every process
// on one SQLite file shares it).

/** The file beside a SQLite store that holds its webhooks. */
export function webhooksFileOf(storePath: string): string {
  return `${storePath}-webhooks`;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    collections TEXT NOT NULL,
    kinds TEXT NOT NULL,
    key_id INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'failing', 'disabled')),
    state_reason TEXT,
    created_at INTEGER NOT NULL,
    epoch TEXT NOT NULL,
    pos_sales INTEGER NOT NULL,
    pos_listings INTEGER NOT NULL,
    pos_offers INTEGER NOT NULL,
    pos_transfers INTEGER NOT NULL,
    generation INTEGER NOT NULL DEFAULT 1,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_until INTEGER,
    lease_holder TEXT,
    lease_until INTEGER,
    final_only INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE IF NOT EXISTS webhook_attempts (
    id INTEGER PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    at INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    events INTEGER NOT NULL,
    first_position INTEGER NOT NULL,
    last_position INTEGER NOT NULL,
    status INTEGER NOT NULL,
    latency_ms INTEGER NOT NULL,
    error TEXT NOT NULL,
    attempt INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
  CREATE TABLE IF NOT EXISTS feed_marks (at INTEGER PRIMARY KEY, position INTEGER NOT NULL);
`;

function openWebhooksFile(storePath: string): Db {
  refusePostgres(storePath);
  const memory = storePath === ":memory:" || storePath === "";
  const path = memory ? ":memory:" : webhooksFileOf(storePath);
  // Created owner-only from its first byte (it holds signing secrets): SQLite
  // would create it with the process's umask, and a chmod after leaves a window.
  // SQLite gives the -wal and -shm files the same mode.
  if (!memory) closeSync(openSync(path, constants.O_CREAT | constants.O_WRONLY, 0o600));
  const db = new Database(path);
  db.pragma("busy_timeout = 2000");
  db.pragma("journal_mode = WAL");
  // NORMAL: a power cut may lose the last positions written (never a process
  // crash: the WAL is the OS's then), which sends those batches again, as
  // at-least-once allows; FULL would sync the file at every commit.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.exec(SCHEMA);
  // A file made before finality=final webhooks (PostgreSQL's migration 27).
  const columns = db.prepare("SELECT name FROM pragma_table_info('webhooks')").pluck().all() as string[];
  if (!columns.includes("final_only")) db.exec("ALTER TABLE webhooks ADD COLUMN final_only INTEGER NOT NULL DEFAULT 0");
  // A file made before tokens were a feed (migration 39).
  if (!columns.includes("pos_tokens")) db.exec(TOKEN_POSITION_MIGRATION("INTEGER"));
  return db;
}

export class SqliteWebhookStore implements WebhookStore {
  readonly #db: Db;
  readonly #storePath: string;
  #keys: Db | undefined;
  readonly #now: () => number;

  /** Statements by their text, prepared once: leases and commits run every second and every 100 ms. */
  readonly #statements = new Map<string, Statement>();

  #prepare(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  constructor(storePath: string, now: () => number = Date.now) {
    this.#storePath = storePath;
    this.#db = openWebhooksFile(storePath);
    this.#now = now;
  }

  #one(id: string): WebhookRecord | undefined {
    const r = this.#prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
    return r === undefined ? undefined : toWebhook(r);
  }

  async create(w: NewWebhook): Promise<WebhookRecord> {
    this.#db
      .prepare(
        `INSERT INTO webhooks (id, url, collections, kinds, key_id, state, created_at, epoch, ${POSITION_COLUMNS.join(", ")}, secret, final_only)
         VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ${POSITION_COLUMNS.map(() => "?").join(", ")}, ?, ?)`,
      )
      .run(w.id, w.url, JSON.stringify(w.collections), JSON.stringify(w.kinds), w.keyId, Math.floor(this.#now() / 1000), w.epoch,
        ...positionValues(w.positions), w.secret, w.finalOnly === true ? 1 : 0);
    return this.#one(w.id)!;
  }

  async list(): Promise<WebhookRecord[]> {
    return (this.#prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY created_at, id`).all() as Record<string, unknown>[]).map(toWebhook);
  }

  async get(id: string): Promise<WebhookRecord | undefined> {
    return this.#one(id);
  }

  async setState(id: string, state: WebhookState, reason: string | null, resume = false): Promise<WebhookRecord | undefined> {
    const bump = resume ? ", generation = generation + 1" : "";
    this.#prepare(`UPDATE webhooks SET state = ?, state_reason = ?${bump} WHERE id = ?`).run(state, reason, id);
    return this.#one(id);
  }

  async delete(id: string): Promise<boolean> {
    return this.#prepare("DELETE FROM webhooks WHERE id = ?").run(id).changes === 1;
  }

  async rotateSecret(id: string, secret: string, previousUntil: number): Promise<WebhookRecord | undefined> {
    this.#prepare("UPDATE webhooks SET previous_secret = secret, previous_until = ?, secret = ? WHERE id = ?").run(previousUntil, secret, id);
    return this.#one(id);
  }

  async replay(id: string, epoch: string, p: FeedPositions): Promise<WebhookRecord | undefined> {
    this.#db
      .prepare(
        `UPDATE webhooks SET epoch = ?, ${POSITION_COLUMNS.map((c) => `${c} = ?`).join(", ")},
           generation = generation + 1, state = 'active', state_reason = NULL WHERE id = ?`,
      )
      .run(epoch, ...positionValues(p), id);
    return this.#one(id);
  }

  async attempts(id: string, limit: number): Promise<WebhookAttemptRecord[]> {
    const rows = this.#prepare(`SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = ? ORDER BY id DESC LIMIT ?`).all(id, limit);
    return (rows as Record<string, unknown>[]).map(toAttempt);
  }

  async lease(holder: string, ttlMs: number, max: number): Promise<WebhookRecord[]> {
    const now = this.#now();
    const until = now + ttlMs;
    return this.#db.transaction(() => {
      this.#prepare("UPDATE webhooks SET lease_until = ? WHERE lease_holder = ? AND lease_until >= ? AND state = 'active'").run(until, holder, now);
      if (max > 0) {
        this.#db
          .prepare(
            `UPDATE webhooks SET lease_holder = ?, lease_until = ? WHERE id IN (
               SELECT id FROM webhooks WHERE state = 'active' AND (lease_holder IS NULL OR lease_until < ?) ORDER BY created_at, id LIMIT ?)`,
          )
          .run(holder, until, now, max);
      }
      const rows = this.#prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE lease_holder = ? AND lease_until = ? AND state = 'active'`).all(holder, until);
      return (rows as Record<string, unknown>[]).map(toWebhook);
    }).immediate();
  }

  async release(holder: string): Promise<void> {
    this.#prepare("UPDATE webhooks SET lease_holder = NULL, lease_until = NULL WHERE lease_holder = ?").run(holder);
  }

  async commit(holder: string, progress: readonly WebhookProgress[]): Promise<string[]> {
    const now = this.#now();
    const held = this.#prepare("SELECT generation FROM webhooks WHERE id = ? AND lease_holder = ? AND lease_until >= ?");
    const move = this.#prepare(`UPDATE webhooks SET ${POSITION_COLUMNS.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`);
    const state = this.#prepare("UPDATE webhooks SET state = ?, state_reason = ?, lease_holder = NULL, lease_until = NULL WHERE id = ?");
    const log = this.#prepare(`INSERT INTO webhook_attempts (webhook_id, ${ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const trim = this.#prepare(
      `DELETE FROM webhook_attempts WHERE webhook_id = ? AND id <= (
         SELECT id FROM webhook_attempts WHERE webhook_id = ? ORDER BY id DESC LIMIT 1 OFFSET ${WEBHOOK_LOG_SIZE})`,
    );
    return this.#db.transaction(() => {
      const lost: string[] = [];
      for (const p of progress) {
        const generation = held.pluck().get(p.id, holder, now) as number | undefined;
        if (generation === undefined) {
          lost.push(p.id);
          continue;
        }
        for (const a of p.attempts) log.run(...attemptValues(p.id, a));
        if (p.trim === true) trim.run(p.id, p.id);
        if (generation !== p.generation) continue;
        if (p.positions !== undefined) move.run(...positionValues(p.positions), p.id);
        if (p.state !== undefined) state.run(p.state.state, p.state.reason, p.id);
      }
      return lost;
    }).immediate();
  }

  async mark(at: number, position: number, keepSeconds: number): Promise<void> {
    this.#prepare("INSERT OR IGNORE INTO feed_marks (at, position) VALUES (?, ?)").run(at, position);
    this.#prepare("DELETE FROM feed_marks WHERE at < ?").run(at - keepSeconds);
  }

  async markAt(at: number): Promise<number | undefined> {
    return this.#prepare("SELECT position FROM feed_marks WHERE at <= ? ORDER BY at DESC LIMIT 1").pluck().get(at) as number | undefined;
  }

  async liveKeys(ids: readonly number[]): Promise<Set<number>> {
    if (ids.length === 0) return new Set();
    this.#keys ??= openKeys(this.#storePath, { readonly: this.#storePath !== ":memory:" && this.#storePath !== "" });
    const found = this.#keys
      .prepare(`SELECT id FROM api_keys WHERE revoked_at IS NULL AND id IN (${ids.map(() => "?").join(", ")})`)
      .pluck()
      .all(...ids) as number[];
    return new Set(found);
  }

  async close(): Promise<void> {
    this.#db.close();
    this.#keys?.close();
  }
}
