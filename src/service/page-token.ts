import { echo } from "../domain/echo.js";
import { hash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { KeySpec } from "../store/ports/paging.js";
import type { KeyValue } from "../domain/rows.js";

// Page tokens are opaque, URL-safe strings holding the keyset position of the
// next page plus a digest of the query that produced them, so a token cannot
// be replayed against another collection or other filters.

interface TokenBody {
  /** Digest of the query (method, collection, filters; not the limit). */
  q: string;
  /** Keyset position after which the next page starts. */
  k: KeyValue[];
}

/** A digest of everything that selects rows, to bind tokens to their query. */
export function queryDigest(parts: readonly unknown[]): string {
  return hash("sha256", JSON.stringify(parts), "base64url").slice(0, 16);
}

export function encodePageToken(digest: string, key: KeyValue[] | null): string {
  if (key === null) return "";
  const body: TokenBody = { q: digest, k: key };
  return Buffer.from(JSON.stringify(body), "utf8").toString("base64url");
}

/**
 * Decodes a token given as `param` for the query with `digest`; "" means the
 * first page. Anything that is not a token of this query is invalid_argument.
 */
export function decodePageToken(param: string, token: string, digest: string, spec: KeySpec): KeyValue[] | null {
  if (token === "") return null;
  const invalid = () =>
    new ConnectError(`${param} is not a valid page token, got ${echo(token)}`, Code.InvalidArgument);
  let body: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) throw invalid();
    body = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  if (!isTokenBody(body, spec)) throw invalid();
  if (body.q !== digest) {
    throw new ConnectError(
      `${param} belongs to a different query (other collection or filters); start again without ${param}`,
      Code.InvalidArgument,
    );
  }
  return body.k;
}

function isTokenBody(v: unknown, spec: KeySpec): v is TokenBody {
  if (typeof v !== "object" || v === null) return false;
  const { q, k } = v as Record<string, unknown>;
  return (
    typeof q === "string" &&
    Array.isArray(k) &&
    k.length === spec.length &&
    k.every((x, i) => (spec[i] === "int" ? Number.isSafeInteger(x) : typeof x === "string"))
  );
}

