import type { FeedKind } from "./feed.js";

// Webhooks: subscriptions, their positions, leases and delivery logs.

/** A webhook's position: per kind, the last feed position delivered (every event at or below it was acknowledged). */
/** A webhook's position in each feed kind. */
export type FeedPositions = Record<FeedKind, number>;

export type WebhookState = "active" | "paused" | "failing" | "disabled";

export interface WebhookRecord {
  id: string;
  url: string;
  /** Lower-case contract addresses. */
  collections: string[];
  /** Feed kinds delivered. */
  kinds: FeedKind[];
  keyId: number;
  state: WebhookState;
  stateReason: string | null;
  createdAt: number;
  /** The feed epoch the positions are in (a store rebuilt since: they name nothing). */
  epoch: string;
  positions: FeedPositions;
  /** Grows on every replay and resume: a delivering process's commit from before it is refused. */
  generation: number;
  /** "whsec_..." secrets: the current one, and until `previousUntil` (epoch ms) the one before. */
  secret: string;
  previousSecret: string | null;
  previousUntil: number | null;
  /** finality=final: settled sales and transfers only, each once its block is final (docs/chains.md). */
  finalOnly: boolean;
}

export interface NewWebhook {
  id: string;
  url: string;
  collections: string[];
  kinds: FeedKind[];
  keyId: number;
  secret: string;
  epoch: string;
  positions: FeedPositions;
  finalOnly?: boolean;
}

/** One delivery attempt, as the log keeps it (the last WEBHOOK_LOG_SIZE per webhook). */
export interface WebhookAttemptRecord {
  /** Epoch ms. */
  at: number;
  messageId: string;
  events: number;
  firstPosition: number;
  lastPosition: number;
  /** HTTP status; 0: no answer. */
  status: number;
  latencyMs: number;
  error: string;
  attempt: number;
}

export const WEBHOOK_LOG_SIZE = 1000;

/** What a delivering process writes back for one webhook it holds. */
export interface WebhookProgress {
  id: string;
  /** The generation it delivered under: ignored when a replay or resume came since. */
  generation: number;
  positions?: FeedPositions;
  attempts: readonly WebhookAttemptRecord[];
  /** A new state (failing past the retry window, disabled by a 410 or a revoked key) and why. */
  state?: { state: WebhookState; reason: string };
  /** Cut its log back to its last WEBHOOK_LOG_SIZE attempts (asked now and then, not at every commit: it walks the log). */
  trim?: boolean;
}

/**
 * Webhook subscriptions (SQLite: a file of their own beside the store, as
 * keys have, so that their writes never wait for an import's or ingest's
 * write lock; PostgreSQL: tables of the store). Leases make one process at
 * a time deliver each webhook: taken when free or expired, renewed by the
 * holder, judged by the store's clock.
 */
export interface WebhookStore {
  create(webhook: NewWebhook): Promise<WebhookRecord>;
  list(): Promise<WebhookRecord[]>;
  get(id: string): Promise<WebhookRecord | undefined>;
  /** Sets the state (and reason); `resume`: also a new generation. Undefined when no such webhook. */
  setState(id: string, state: WebhookState, reason: string | null, resume?: boolean): Promise<WebhookRecord | undefined>;
  delete(id: string): Promise<boolean>;
  /** A new current secret; the old one kept until `previousUntil` (epoch ms). */
  rotateSecret(id: string, secret: string, previousUntil: number): Promise<WebhookRecord | undefined>;
  /** New positions (a replay), a new generation, and the webhook active again. */
  replay(id: string, epoch: string, positions: FeedPositions): Promise<WebhookRecord | undefined>;
  /** The webhook's last `limit` attempts, newest first. */
  attempts(id: string, limit: number): Promise<WebhookAttemptRecord[]>;
  /**
   * Takes or renews the lease of every active webhook that is free, expired
   * or already `holder`'s, for `ttlMs`, taking at most `max` new ones; answers
   * every webhook `holder` holds now, as stored.
   */
  lease(holder: string, ttlMs: number, max: number): Promise<WebhookRecord[]>;
  /** Gives back `holder`'s leases (shutdown): others take them at once. */
  release(holder: string): Promise<void>;
  /** Writes what `holder` delivered, in one transaction; answers the ids it no longer holds (their progress was not written). */
  commit(holder: string, progress: readonly WebhookProgress[]): Promise<string[]>;
  /** Notes that the feed had reached `position` at epoch second `at` (replay --from TIME), keeping `keepSeconds` of them. */
  mark(at: number, position: number, keepSeconds: number): Promise<void>;
  /** The position of the latest mark at or before epoch second `at`; undefined when none is that old. */
  markAt(at: number): Promise<number | undefined>;
  /** Which of the API keys `ids` exist unrevoked (a webhook delivers for its key while it stands). */
  liveKeys(ids: readonly number[]): Promise<Set<number>>;
  close(): Promise<void>;
}
