import { Code, ConnectError } from "@connectrpc/connect";
import { StoreUnavailableError } from "../../store/ports/errors.js";
import type { KeyGrant } from "../../store/ports/keys.js";
import { type MaybePromise, settle } from "../../store/ports/paging.js";

// The checks every call passes, whatever protocol carried it. RPC protocols
// run them as Connect interceptors (interceptors.ts); REST and Connect GET
// call these functions directly, so both paths share one definition.

export const API_KEY_HEADER = "x-api-key";

export type { KeyGrant };

export interface KeyVerifier {
  /** The grant of a valid, unrevoked key; undefined otherwise. */
  lookup(key: string): MaybePromise<KeyGrant | undefined>;
}

export interface ErrorLogger {
  error(obj: object, msg: string): void;
}

export const MISSING_KEY = `missing API key: send it in the ${API_KEY_HEADER} header`;
export const INVALID_KEY = "invalid or revoked API key";

/** The API key of a request's Node headers (a repeated header counts as none). */
export function apiKeyFrom(headers: Record<string, string | string[] | undefined>): string | undefined {
  const v = headers[API_KEY_HEADER];
  return typeof v === "string" ? v : undefined;
}

/** The key's grant; throws unauthenticated unless `key` is a valid, unrevoked API key. */
export function requireApiKey(keys: KeyVerifier, key: string | null | undefined): MaybePromise<KeyGrant> {
  if (!key) throw new ConnectError(MISSING_KEY, Code.Unauthenticated);
  return settle(keys.lookup(key), (grant) => {
    if (grant === undefined) throw new ConnectError(INVALID_KEY, Code.Unauthenticated);
    return grant;
  });
}

/**
 * Seconds a caller is told to wait (Retry-After) before retrying a call
 * refused as unavailable: the store unreachable, a failover under way (no
 * primary for a while), a server shutting down. A guess, short on purpose:
 * pg_auto_failover promotes a standby in seconds.
 */
export const RETRY_AFTER_SECONDS = 2;
const RETRY_AFTER = { "retry-after": String(RETRY_AFTER_SECONDS) };
const NO_HEADERS = {};

/** The HTTP headers an error's response carries: Retry-After when it is unavailable. */
export function errorHeaders(error: ConnectError): Record<string, string> {
  return error.code === Code.Unavailable ? RETRY_AFTER : NO_HEADERS;
}

/** An unavailable error carrying Retry-After in its metadata (connect-node writes it as a header of Connect's answer). */
export function unavailableError(message: string): ConnectError {
  return new ConnectError(message, Code.Unavailable, RETRY_AFTER);
}

/**
 * The error a caller sees: a ConnectError with a caller-facing code passes
 * through; anything else is logged and replaced by a bare internal error, so
 * SQL, stack traces and file paths never reach a caller.
 */
export function publicError(err: unknown, log: ErrorLogger, procedure: string): ConnectError {
  if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) {
    if (err.code === Code.Unavailable && !err.metadata.has("retry-after")) err.metadata.set("retry-after", RETRY_AFTER["retry-after"]);
    return err;
  }
  if (err instanceof StoreUnavailableError) {
    log.error({ err: err.cause ?? err, procedure }, "store unavailable");
    return unavailableError("the store is unavailable; retry shortly");
  }
  log.error({ err, procedure }, "internal error");
  return new ConnectError("internal error", Code.Internal);
}
