import type { MaybePromise } from "./paging.js";

// API keys: what a key may do, the server's check of one, and `keys`' administration.

/**
 * What a key may do: `read` the API (every key made before scopes existed is
 * one), `ingest` records and read, or `admin`: everything an ingest key may,
 * and whatever operator-side RPCs come to need it.
 */
export type KeyScope = "read" | "ingest" | "admin";

export const KEY_SCOPES: readonly KeyScope[] = ["read", "ingest", "admin"];

/** True when a key of `scope` may write through the ingest API. */
export function mayIngest(scope: KeyScope): boolean {
  return scope === "ingest" || scope === "admin";
}

/** What a valid key grants: its identity (for its rate limit), its own limit and its scope. */
export interface KeyGrant {
  id: number;
  /** Requests per second; null: the server's default. */
  rateLimit: number | null;
  scope: KeyScope;
}

/** A key as `keys list` shows it (never the key itself). */
export interface ApiKeyInfo {
  id: number;
  name: string;
  createdAt: number;
  revokedAt: number | null;
  /** Requests per second; null: the server's default. */
  rateLimit: number | null;
  scope: KeyScope;
}

export interface KeysRepository {
  /** The grant of a valid, unrevoked key; undefined otherwise. Read on every check, so revocations apply at once. */
  lookup(key: string): MaybePromise<KeyGrant | undefined>;
}

// keys: what `keys` does, on either engine.

export interface KeyAdmin {
  /** A new key (read scope unless told otherwise); only its digest is kept. */
  create(name: string, options?: { rateLimit?: number | null; scope?: KeyScope }): Promise<{ id: number; key: string }>;
  list(): Promise<ApiKeyInfo[]>;
  /** False when no such key exists. */
  setRateLimit(id: number, rateLimit: number | null): Promise<boolean>;
  /** False when no such key exists; revoking twice keeps the first time. */
  revoke(id: number): Promise<boolean>;
  close(): Promise<void>;
}
