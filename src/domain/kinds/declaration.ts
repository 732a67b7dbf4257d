import type { Message } from "@bufbuild/protobuf";
import { type ObjectCheck, type Problem, TOO_DEEP, tooDeep } from "./fields.js";

// What a record kind is, said once (docs/architecture.md, "A record kind"):
// its name, the shape its records are checked against (an import line and
// an ingest record alike), the rules across its fields, how an ingest RPC's
// record becomes an import line, its natural key, the aggregates its writes
// move and, for the kinds the live feeds carry, its event. The ingest API,
// `marketdata import`, the feeds, the webhooks, the background derive and
// the engines' generic write paths are driven from these declarations; an
// engine adds the kind's own statements (store/<engine>/kind-writes.ts).

/** What the checks of a batch or a file are held to beyond the records themselves. */
export interface CheckContext {
  /** The latest sale or listing time taken (unix seconds): the clock plus the allowed skew (formats.ts latestTimeAllowed). */
  latestTime: number;
}

/**
 * What a write of a kind changes beyond its own rows: read by whoever keeps
 * one up to date (the background derive reads the last three).
 */
export type Aggregate =
  /** Hourly stats and price series (sales_hourly, sales_series). */
  | "sales-stats"
  /** Token owners and holder counts. */
  | "owners"
  /** Listings a token's move left unfillable. */
  | "fillable-listings"
  /** Asks: floors, tokens' best listings, listing spans. */
  | "asks"
  /** Bids: the top offers of tokens, traits and collections. */
  | "bids"
  /** Token traits and trait values. */
  | "traits"
  /** A collection's name. */
  | "collection-names"
  /** Social users' profiles, shared by every collection naming them. */
  | "social-users"
  /** What derive fits appraisals from. */
  | "appraisal-inputs"
  /** Past sales: a changed one may lie behind the appraisal model's last second (it is fitted again). */
  | "appraisal-history"
  /** What derive ranks rarity from (it is ranked again). */
  | "rarity-inputs";

/** A kind the live feeds (and the webhooks, which read them) carry. */
export interface FeedDeclaration<Row> {
  /** Its webhook event type, and the WebhookEvent field its message fills ("sale"). */
  readonly event: string;
  /** Its place in a webhook's positions (webhook_service.proto's `positions`), from 0. */
  readonly slot: number;
  /** The event's time (epoch seconds). */
  readonly time: (row: Row) => number;
  /** The row as its event's message (`now`: epoch seconds, for kinds whose status depends on it). */
  readonly toMessage: (row: Row, now: number) => Message;
  /** Sent only where asked for by its type (a webhook's or a stream's `types`), not by default: the market's events are the default. */
  readonly askedOnly?: true;
}

export interface KindDeclaration<Name extends string = string, Checked = unknown, Rpc = never, Row = unknown> {
  /** `marketdata import NAME`, the ingest API's kind. */
  readonly name: Name;
  /** One record's field checks: its stored form, or undefined with `problems` filled in (fields.ts object()). */
  readonly shape: ObjectCheck<Checked>;
  /** Rules across fields, checked once every field passed (typed by the shape, not inferred from the rules). */
  readonly rules?: (record: NoInfer<Checked>, problems: Problem[], ctx: CheckContext) => void;
  /**
   * An ingest RPC's record as the import line's JSON value: one checker rules
   * on both. Absent: the shape's fields taken by name from the message, an
   * int64 as a number (sameFields).
   */
  readonly fromMessage?: (record: Rpc) => Record<string, unknown>;
  /** decisions.md's natural key: the fields naming one record (a later record of the same key replaces it). */
  readonly naturalKey: readonly string[];
  /** The aggregates its writes move. */
  readonly moves: readonly Aggregate[];
  /** In the live feeds and webhooks. */
  readonly feed?: FeedDeclaration<Row>;
}

/** A declaration with its types erased, as the registry holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyKindDeclaration = KindDeclaration<string, any, any, any>;

/** Declares a kind, its types inferred from its parts (its type says whether the feeds carry it). */
export function declareKind<Name extends string, Checked, Rpc, Row = never, Feed extends FeedDeclaration<Row> | undefined = undefined>(
  declaration: KindDeclaration<Name, Checked, Rpc, Row> & { readonly feed?: Feed },
): KindDeclaration<Name, Checked, Rpc, Row> & { readonly feed: Feed } {
  return declaration as KindDeclaration<Name, Checked, Rpc, Row> & { readonly feed: Feed };
}

/** Checks one record of a declared kind: the checked record, or undefined with `problems` filled in. */
export type RecordCheck = (value: unknown, problems: Problem[]) => unknown;

export function recordCheck(declaration: AnyKindDeclaration, ctx: CheckContext): RecordCheck {
  const { shape, rules } = declaration;
  return (value, problems) => {
    // Before any check looks inside: a value nested this deep is no record (and no check may recurse into it).
    const deep = tooDeep(value);
    if (deep !== undefined) {
      problems.push({ field: deep, reason: TOO_DEEP });
      return undefined;
    }
    const record = shape(value, problems);
    if (record === undefined) return undefined;
    rules?.(record, problems, ctx);
    return problems.length > 0 ? undefined : record;
  };
}

/** A time past the latest taken: a record dated in the future (a clock off, a unit mix-up). */
export function notAhead(field: string, time: number, ctx: CheckContext, problems: Problem[]): void {
  if (time > ctx.latestTime) {
    problems.push({
      field,
      reason: `must not be later than this server's clock allows (${ctx.latestTime}: now plus the allowed clock skew, --max-clock-skew), got ${time}`,
    });
  }
}

/** An RPC record as its import line when its message's fields are the shape's, by name (an int64 as int() gives it). */
export function importLineOf(declaration: AnyKindDeclaration): (record: unknown) => Record<string, unknown> {
  if (declaration.fromMessage !== undefined) return declaration.fromMessage;
  const { fields } = declaration.shape;
  return (record) => {
    const m = record as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const name of fields) {
      const v = m[name];
      // A field the message does not have (chain: its request names it) is left to the shape's default.
      if (v !== undefined) out[name] = typeof v === "bigint" ? int(v) : v;
    }
    return out;
  };
}

/** An int64 of an RPC record as a JSON number when it is one exactly; otherwise its digits, which the checker refuses by name. */
export function int(v: bigint): number | string {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v.toString();
}
