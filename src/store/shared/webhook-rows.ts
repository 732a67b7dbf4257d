import type { FeedKind } from "../ports/feed.js";
import type { FeedPositions, WebhookAttemptRecord, WebhookRecord, WebhookState } from "../ports/webhooks.js";
import { FEED_KINDS } from "../../domain/kinds/index.js";

// The webhooks' tables as both engines keep them (sqlite/webhooks.ts,
// postgres/webhooks.ts): one row per webhook with its position in each feed, its
// lease and its secrets; a log of attempts; marks of where the feed stood.

/** A webhook's position in each feed kind's feed: a column each (pos_tokens: migration 39), in FEED_KINDS order. */
export const POSITION_COLUMNS: readonly string[] = FEED_KINDS.map((k) => `pos_${k}`);

/** Positions as POSITION_COLUMNS' values. */
export const positionValues = (p: FeedPositions): number[] => FEED_KINDS.map((k) => p[k]);

/** A column added to a store's webhooks since they were made: each feed's position after the first four. */
export const TOKEN_POSITION_MIGRATION = (int: "INTEGER" | "bigint") => `ALTER TABLE webhooks ADD COLUMN pos_tokens ${int} NOT NULL DEFAULT 0`;

/** A webhook row's columns, as toWebhook reads them. */
export const WEBHOOK_COLUMNS = `id, url, collections, kinds, key_id, state, state_reason, created_at, epoch,
  ${POSITION_COLUMNS.join(", ")}, generation, secret, previous_secret, previous_until, final_only`;

export const ATTEMPT_COLUMNS = `at, message_id, events, first_position, last_position, status, latency_ms, error, attempt`;

export function toWebhook(r: Record<string, unknown>): WebhookRecord {
  return {
    id: r.id as string,
    url: r.url as string,
    collections: JSON.parse(r.collections as string) as string[],
    kinds: JSON.parse(r.kinds as string) as FeedKind[],
    keyId: Number(r.key_id),
    state: r.state as WebhookState,
    stateReason: (r.state_reason as string | null) ?? null,
    createdAt: Number(r.created_at),
    epoch: r.epoch as string,
    positions: Object.fromEntries(FEED_KINDS.map((k) => [k, Number(r[`pos_${k}`])])) as FeedPositions,
    generation: Number(r.generation),
    secret: r.secret as string,
    previousSecret: (r.previous_secret as string | null) ?? null,
    previousUntil: r.previous_until === null || r.previous_until === undefined ? null : Number(r.previous_until),
    // SQLite's 0/1, PostgreSQL's boolean.
    finalOnly: r.final_only === 1 || r.final_only === true,
  };
}

export function toAttempt(r: Record<string, unknown>): WebhookAttemptRecord {
  return {
    at: Number(r.at),
    messageId: r.message_id as string,
    events: Number(r.events),
    firstPosition: Number(r.first_position),
    lastPosition: Number(r.last_position),
    status: Number(r.status),
    latencyMs: Number(r.latency_ms),
    error: r.error as string,
    attempt: Number(r.attempt),
  };
}

/** The attempt's values in ATTEMPT_COLUMNS order, after the webhook's id. */
export function attemptValues(id: string, a: WebhookAttemptRecord): unknown[] {
  return [id, a.at, a.messageId, a.events, a.firstPosition, a.lastPosition, a.status, a.latencyMs, a.error.slice(0, 500), a.attempt];
}
