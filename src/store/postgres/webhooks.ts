import type pg from "pg";
import type { FeedPositions, NewWebhook, WebhookAttemptRecord, WebhookProgress, WebhookRecord, WebhookState, WebhookStore } from "../ports/webhooks.js";
import { StoreReadOnlyError } from "../ports/errors.js";
import { WEBHOOK_LOG_SIZE } from "../ports/webhooks.js";
import { inTransaction } from "./transaction.js";
import { ATTEMPT_COLUMNS, attemptValues, POSITION_COLUMNS, positionValues, toAttempt, toWebhook, WEBHOOK_COLUMNS } from "../shared/webhook-rows.js";
import { FEED_KINDS } from "../../domain/kinds/index.js";

// Webhooks of a PostgreSQL store: tables of the store (migration 16), so
// that every server on it shares them. Leases are judged by the database's
// clock (clock_timestamp()), not each server's: servers on several machines
// agree on when a lease has expired.

export const WEBHOOKS_MIGRATION = `
  CREATE TABLE webhooks (
    id text PRIMARY KEY,
    url text NOT NULL,
    collections text NOT NULL,
    kinds text NOT NULL,
    key_id bigint NOT NULL,
    state text NOT NULL CHECK (state IN ('active', 'paused', 'failing', 'disabled')),
    state_reason text,
    created_at bigint NOT NULL,
    epoch text NOT NULL,
    pos_sales bigint NOT NULL,
    pos_listings bigint NOT NULL,
    pos_offers bigint NOT NULL,
    pos_transfers bigint NOT NULL,
    generation bigint NOT NULL DEFAULT 1,
    secret text NOT NULL,
    previous_secret text,
    previous_until bigint,
    lease_holder text,
    lease_until bigint
  );
  CREATE TABLE webhook_attempts (
    id bigserial PRIMARY KEY,
    webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    at bigint NOT NULL,
    message_id text NOT NULL,
    events integer NOT NULL,
    first_position bigint NOT NULL,
    last_position bigint NOT NULL,
    status integer NOT NULL,
    latency_ms integer NOT NULL,
    error text NOT NULL,
    attempt integer NOT NULL
  );
  CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
  CREATE TABLE feed_marks (at bigint PRIMARY KEY, position bigint NOT NULL);
`;

/** Migration 27: a webhook of settled data only (finality=final, docs/chains.md). */
export const FINAL_WEBHOOKS_MIGRATION = "ALTER TABLE webhooks ADD COLUMN final_only boolean NOT NULL DEFAULT false";

/** The database's clock in epoch milliseconds. */
const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

type Rows = Record<string, unknown>[];

/** SQLSTATE 25006 (read_only_sql_transaction): a write on a replica, said as such. */
function readOnly(err: unknown): unknown {
  if ((err as { code?: unknown }).code === "25006") return new StoreReadOnlyError("this server's store is a replica: manage webhooks on a server of the primary");
  return err;
}

export class PgWebhookStore implements WebhookStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async #rows(sql: string, params: unknown[] = []): Promise<Rows> {
    try {
      return (await this.#pool.query(sql, params)).rows as Rows;
    } catch (err) {
      throw readOnly(err);
    }
  }

  async #one(sql: string, params: unknown[]): Promise<WebhookRecord | undefined> {
    const r = (await this.#rows(sql, params))[0];
    return r === undefined ? undefined : toWebhook(r);
  }

  create(w: NewWebhook): Promise<WebhookRecord> {
    return this.#one(
      `INSERT INTO webhooks (id, url, collections, kinds, key_id, state, created_at, epoch, ${POSITION_COLUMNS.join(", ")}, secret, final_only)
       VALUES ($1, $2, $3, $4, $5, 'active', extract(epoch FROM now())::bigint, $6, ${POSITION_COLUMNS.map((_, i) => `$${7 + i}`).join(", ")},
         $${7 + POSITION_COLUMNS.length}, $${8 + POSITION_COLUMNS.length}) RETURNING ${WEBHOOK_COLUMNS}`,
      [w.id, w.url, JSON.stringify(w.collections), JSON.stringify(w.kinds), w.keyId, w.epoch, ...positionValues(w.positions), w.secret, w.finalOnly === true],
    ) as Promise<WebhookRecord>;
  }

  async list(): Promise<WebhookRecord[]> {
    return (await this.#rows(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY created_at, id`)).map(toWebhook);
  }

  get(id: string): Promise<WebhookRecord | undefined> {
    return this.#one(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1`, [id]);
  }

  setState(id: string, state: WebhookState, reason: string | null, resume = false): Promise<WebhookRecord | undefined> {
    const bump = resume ? ", generation = generation + 1" : "";
    return this.#one(`UPDATE webhooks SET state = $1, state_reason = $2${bump} WHERE id = $3 RETURNING ${WEBHOOK_COLUMNS}`, [state, reason, id]);
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.#pool.query("DELETE FROM webhooks WHERE id = $1", [id])).rowCount ?? 0) === 1;
  }

  rotateSecret(id: string, secret: string, previousUntil: number): Promise<WebhookRecord | undefined> {
    return this.#one(
      `UPDATE webhooks SET previous_secret = secret, previous_until = $1, secret = $2 WHERE id = $3 RETURNING ${WEBHOOK_COLUMNS}`,
      [previousUntil, secret, id],
    );
  }

  replay(id: string, epoch: string, p: FeedPositions): Promise<WebhookRecord | undefined> {
    return this.#one(
      `UPDATE webhooks SET epoch = $1, ${POSITION_COLUMNS.map((c, i) => `${c} = $${2 + i}`).join(", ")},
         generation = generation + 1, state = 'active', state_reason = NULL WHERE id = $${2 + POSITION_COLUMNS.length} RETURNING ${WEBHOOK_COLUMNS}`,
      [epoch, ...positionValues(p), id],
    );
  }

  async attempts(id: string, limit: number): Promise<WebhookAttemptRecord[]> {
    return (await this.#rows(`SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2`, [id, limit])).map(toAttempt);
  }

  #standby: boolean | undefined;

  async lease(holder: string, ttlMs: number, max: number): Promise<WebhookRecord[]> {
    // A server on a replica delivers nothing: the servers on the primary do, and it can write no lease.
    this.#standby ??= Boolean((await this.#rows("SELECT pg_is_in_recovery() AS r"))[0]?.r);
    if (this.#standby) return [];
    // One statement: renew what is held, take up to `max` free or expired
    // ones (SKIP LOCKED: two servers leasing at once take different ones).
    const rows = await this.#rows(
      `WITH now AS (SELECT ${NOW_MS} AS ms),
       renewed AS (
         UPDATE webhooks w SET lease_until = now.ms + $2 FROM now
          WHERE w.lease_holder = $1 AND w.lease_until >= now.ms AND w.state = 'active' RETURNING w.id),
       free AS (
         SELECT id FROM webhooks, now WHERE state = 'active' AND (lease_holder IS NULL OR lease_until < now.ms)
          ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED),
       taken AS (
         UPDATE webhooks w SET lease_holder = $1, lease_until = now.ms + $2 FROM now, free WHERE w.id = free.id RETURNING w.id)
       SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id IN (SELECT id FROM renewed UNION ALL SELECT id FROM taken)`,
      [holder, ttlMs, max],
    );
    return rows.map(toWebhook);
  }

  async release(holder: string): Promise<void> {
    await this.#pool.query("UPDATE webhooks SET lease_holder = NULL, lease_until = NULL WHERE lease_holder = $1", [holder]);
  }

  /**
   * A handful of statements whatever the number of webhooks (arrays,
   * unnest): a process delivering a hundred webhooks commits their
   * positions ten times a second.
   */
  commit(holder: string, progress: readonly WebhookProgress[]): Promise<string[]> {
    return inTransaction(this.#pool, async (c) => {
      const held = await c.query<{ id: string; generation: string }>(
        `SELECT id, generation FROM webhooks WHERE id = ANY($1::text[]) AND lease_holder = $2 AND lease_until >= ${NOW_MS} FOR UPDATE`,
        [progress.map((p) => p.id), holder],
      );
      const generations = new Map(held.rows.map((r) => [r.id, Number(r.generation)]));
      const lost = progress.filter((p) => !generations.has(p.id)).map((p) => p.id);
      const mine = progress.filter((p) => generations.has(p.id));
      const attempts = mine.flatMap((p) => p.attempts.map((a) => attemptValues(p.id, a)));
      if (attempts.length > 0) {
        const column = (i: number) => attempts.map((v) => v[i]);
        await c.query(
          `INSERT INTO webhook_attempts (webhook_id, ${ATTEMPT_COLUMNS})
           SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::bigint[], $6::bigint[], $7::int[], $8::int[], $9::text[], $10::int[])`,
          Array.from({ length: 10 }, (_, i) => column(i)),
        );
      }
      for (const p of mine.filter((x) => x.trim === true)) {
        await c.query(
          `DELETE FROM webhook_attempts WHERE webhook_id = $1 AND id <= (
             SELECT id FROM webhook_attempts WHERE webhook_id = $1 ORDER BY id DESC LIMIT 1 OFFSET ${WEBHOOK_LOG_SIZE})`,
          [p.id],
        );
      }
      // A replay or resume since (another generation): its positions and state are not this delivery's to write.
      const current = mine.filter((p) => generations.get(p.id) === p.generation);
      const moved = current.filter((p) => p.positions !== undefined);
      if (moved.length > 0) {
        const q = (k: keyof FeedPositions) => moved.map((p) => p.positions![k]);
        await c.query(
          `UPDATE webhooks w SET ${POSITION_COLUMNS.map((col, i) => `${col} = v.p${i}`).join(", ")}
             FROM unnest($1::text[], ${POSITION_COLUMNS.map((_, i) => `$${2 + i}::bigint[]`).join(", ")}) AS v(id, ${POSITION_COLUMNS.map((_, i) => `p${i}`).join(", ")}) WHERE w.id = v.id`,
          [moved.map((p) => p.id), ...FEED_KINDS.map(q)],
        );
      }
      for (const p of current.filter((x) => x.state !== undefined)) {
        await c.query("UPDATE webhooks SET state = $1, state_reason = $2, lease_holder = NULL, lease_until = NULL WHERE id = $3", [
          p.state!.state, p.state!.reason, p.id,
        ]);
      }
      return lost;
    });
  }

  async mark(at: number, position: number, keepSeconds: number): Promise<void> {
    await this.#pool.query("INSERT INTO feed_marks (at, position) VALUES ($1, $2) ON CONFLICT (at) DO NOTHING", [at, position]);
    await this.#pool.query("DELETE FROM feed_marks WHERE at < $1", [at - keepSeconds]);
  }

  async markAt(at: number): Promise<number | undefined> {
    const r = (await this.#rows("SELECT position FROM feed_marks WHERE at <= $1 ORDER BY at DESC LIMIT 1", [at]))[0];
    return r === undefined ? undefined : Number(r.position);
  }

  async liveKeys(ids: readonly number[]): Promise<Set<number>> {
    if (ids.length === 0) return new Set();
    const rows = await this.#rows("SELECT id FROM api_keys WHERE revoked_at IS NULL AND id = ANY($1::bigint[])", [ids]);
    return new Set(rows.map((r) => Number(r.id)));
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
