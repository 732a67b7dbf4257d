// Wire formats shared by request validation and data import (decisions.md
// "Units and formats"). Pure functions, no I/O.

export const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
export const TX_HASH_RE = /^0x[0-9a-fA-F]{64}$/;
/** Canonical uint256 decimal: no sign, no leading zeros, at most 78 digits. */
export const UINT256_RE = /^(0|[1-9][0-9]{0,77})$/;
export const MARKETPLACE_RE = /^[A-Z0-9_]{1,32}$/;

export const MAX_UINT256 = (1n << 256n) - 1n;

/** Epoch values at or above this are almost certainly milliseconds. */
export const MAX_EPOCH_SECONDS = 100_000_000_000n;

/**
 * How far past the clock of the process that checks them a sale's or a
 * listing's time may be (seconds), by default: clocks and chains disagree
 * by seconds, not days. Later times are refused on ingest and import, and
 * a stored one is left out of the appraisal model (--max-clock-skew).
 */
/** The latest sale or listing time taken now: the clock plus `skewSeconds`. */
export function latestTimeAllowed(skewSeconds: number, nowMs = Date.now()): number {
  return Math.floor(nowMs / 1000) + skewSeconds;
}

export function isAddress(s: string): boolean {
  return ADDRESS_RE.test(s);
}

export function isTxHash(s: string): boolean {
  return TX_HASH_RE.test(s);
}

/** A canonical decimal string of a value in [0, 2^256). */
export function isUint256(s: string): boolean {
  return UINT256_RE.test(s) && (s.length < 78 || BigInt(s) <= MAX_UINT256);
}

/** Numeric order of canonical decimal strings (asset ids, amounts): shorter is smaller. */
export function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The clock, in epoch seconds: an offer stands until its expiresAt. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);
