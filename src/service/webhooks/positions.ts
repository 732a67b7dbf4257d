import { Code, ConnectError } from "@connectrpc/connect";
import { echo } from "../../domain/echo.js";
import { FEED_KINDS } from "../../domain/kinds/index.js";
import { EVENT_TYPE } from "./payload.js";
import type { ReadRepositories } from "../../store/ports/reads.js";
import type { FeedPositions } from "../../store/ports/webhooks.js";

// A webhook's position: one feed position per kind. Shown and taken as
// one number where every kind stands at the same place (a replay from a
// position: every event at or above it), else as "sale:N,listing:N,...".

/** In the order a position lists the kinds (the proto's `positions`: FEED_KINDS, by their declarations' slots). */
export function positionsList(p: FeedPositions): number[] {
  return FEED_KINDS.map((k) => p[k]);
}

export function positionsText(p: FeedPositions): string {
  const [first, ...rest] = positionsList(p);
  if (rest.every((v) => v === first)) return String(first);
  return FEED_KINDS.map((k) => `${EVENT_TYPE[k]}:${p[k]}`).join(",");
}

/** Every feed kind at `at`. */
function everyKind(at: number): FeedPositions {
  return Object.fromEntries(FEED_KINDS.map((k) => [k, at])) as FeedPositions;
}

/** Every kind just before `from`: a replay from `from` sends every event at or above it. */
export function positionsBefore(from: number): FeedPositions {
  const at = Math.max(from - 1, 0);
  return everyKind(at);
}

/** Where a replay or a new webhook starts: now, a position, or a time (epoch seconds). */
export type StartPoint = { kind: "now" } | { kind: "position"; position: number } | { kind: "time"; at: number };

/** A --from value: "now" (or ""), a position (digits), or an RFC 3339 / ISO 8601 time with its zone. */
export function parseStart(text: string, allowNow: boolean): StartPoint {
  const t = text.trim();
  if (t === "" || t === "now") {
    if (allowNow) return { kind: "now" };
    throw new ConnectError('from must be a position or a time (replay from "now" would send nothing)', Code.InvalidArgument);
  }
  if (/^[0-9]{1,15}$/.test(t)) return { kind: "position", position: Number(t) };
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.test(t)) {
    const ms = Date.parse(t);
    if (!Number.isNaN(ms)) return { kind: "time", at: Math.floor(ms / 1000) };
  }
  throw new ConnectError(
    `from must be ${allowNow ? '"now", ' : ""}a position (a number) or a time like 2026-11-26T10:00:00Z, got ${echo(t)}`,
    Code.InvalidArgument,
  );
}

/** Per kind, the newest committed position of `collections` (positions within a kind follow commit order: nothing committed later is below it). */
export async function collectionHeads(store: ReadRepositories, collections: readonly string[]): Promise<FeedPositions> {
  const heads = everyKind(0);
  for (const address of collections) {
    const id = await store.collections.collectionId(address);
    if (id === undefined) continue;
    for (const kind of FEED_KINDS) heads[kind] = Math.max(heads[kind], await store.feed.head(kind, id));
  }
  return heads;
}
