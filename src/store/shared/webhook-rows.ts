import type { FeedKind } from "../ports/feed.js";
import type { WebhookAttemptRecord, WebhookRecord, WebhookState } from "../ports/webhooks.js";

// The webhooks' tables as both engines keep them (sqlite/webhooks.ts,
// postgres/webhooks.ts): one row per webhook with its four positions, its
// lease and its secrets; a log of attempts; marks of where the feed stood.

/** A webhook row's columns, as toWebhook reads them. */
export const WEBHOOK_COLUMNS = `id, url, collections, kinds, key_id, state, state_reason, created_at, epoch,
  pos_sales, pos_listings, pos_offers, pos_transfers, generation, secret, previous_secret, previous_until, final_only`;

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
    positions: {
      sales: Number(r.pos_sales),
      listings: Number(r.pos_listings),
      offers: Number(r.pos_offers),
      transfers: Number(r.pos_transfers),
    },
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
