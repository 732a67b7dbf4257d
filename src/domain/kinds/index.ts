import { appraisals } from "./appraisals.js";
import { collections } from "./collections.js";
import { type Aggregate, type AnyKindDeclaration, type CheckContext, type FeedDeclaration, importLineOf, type RecordCheck, recordCheck } from "./declaration.js";
import { influencers } from "./influencers.js";
import { listings } from "./listings.js";
import { offers } from "./offers.js";
import { rarity } from "./rarity.js";
import { sales } from "./sales.js";
import { scores } from "./scores.js";
import { transfers } from "./transfers.js";
import { tokens } from "./tokens.js";
import { tweets } from "./tweets.js";
import { reorgs } from "./reorgs.js";
import { finality } from "./finality.js";
import { prices } from "./prices.js";
import { spam } from "./spam.js";
import { flags } from "./flags.js";

// The record kinds (decisions.md's importable kinds): each declared once, in
// its own file of this folder (declaration.ts says what a declaration
// holds). Everything that goes over every kind, or picks one by name, reads
// this registry; adding a kind is a declaration here, a migration per engine
// and the engines' statements (docs/architecture.md, "A record kind").

/** Every kind, in the order `marketdata import --help` lists them. */
const DECLARED = [collections, tokens, appraisals, rarity, sales, listings, transfers, offers, influencers, tweets, scores, reorgs, finality, prices, spam, flags] as const;

export type Kind = (typeof DECLARED)[number]["name"];
/** The kinds the live feeds and the webhooks carry. */
export type FeedKind = Extract<(typeof DECLARED)[number], { feed: FeedDeclaration<never> }>["name"];

export const KINDS: readonly Kind[] = DECLARED.map((d) => d.name);

/** The declarations by name: the built-in ones, and any a test adds (registerKind). */
const REGISTRY = new Map<string, AnyKindDeclaration>(DECLARED.map((d) => [d.name, d as AnyKindDeclaration]));

export function isKind(s: string): s is Kind {
  return REGISTRY.has(s);
}

export function declarationOf(kind: Kind): AnyKindDeclaration {
  const d = REGISTRY.get(kind);
  if (d === undefined) throw new Error(`no record kind is declared as ${JSON.stringify(kind)}`);
  return d;
}

/**
 * Adds a kind beside the built-in ones, for as long as the returned
 * function is not called: how a test shows that a kind needs nothing but
 * its declaration, its migrations and its engines' statements.
 */
export function registerKind(declaration: AnyKindDeclaration): () => void {
  if (REGISTRY.has(declaration.name)) throw new Error(`the record kind ${declaration.name} is declared already`);
  REGISTRY.set(declaration.name, declaration);
  return () => REGISTRY.delete(declaration.name);
}

/** The checker of one record of `kind` (the import's lines and the ingest API's records alike). */
export function handlerFor(kind: Kind, ctx: CheckContext): { check: RecordCheck } {
  return { check: recordCheck(declarationOf(kind), ctx) };
}

/** How an ingest RPC's record of `kind` becomes its import line (the declaration's fromMessage, or the shape's fields by name). */
export function importLine(kind: Kind): (record: unknown) => Record<string, unknown> {
  return importLineOf(declarationOf(kind));
}

/** Whether writes of `kind` move `aggregate`. */
export function moves(kind: Kind, aggregate: Aggregate): boolean {
  return declarationOf(kind).moves.includes(aggregate);
}

/** The feed kinds in their webhook position order (FeedDeclaration.slot). */
export const FEED_KINDS: readonly FeedKind[] = DECLARED.filter((d) => "feed" in d)
  .sort((a, b) => (a as AnyKindDeclaration).feed!.slot - (b as AnyKindDeclaration).feed!.slot)
  .map((d) => d.name as FeedKind);

/** A feed kind's event: its type, position slot, time and message. */
export function feedOf(kind: FeedKind): FeedDeclaration<unknown> {
  return declarationOf(kind).feed!;
}

/** The feed kind of each event type ("sale": "sales"). */
export const FEED_KIND_OF_EVENT: Readonly<Record<string, FeedKind>> = Object.fromEntries(FEED_KINDS.map((k) => [feedOf(k).event, k]));

/** The event types a webhook or a stream sends when it names none: every feed kind's but those sent only when asked (FeedDeclaration.askedOnly). */
export const DEFAULT_EVENT_TYPES: readonly string[] = FEED_KINDS.filter((k) => feedOf(k).askedOnly !== true).map((k) => feedOf(k).event);

export function isFeedKind(kind: string): kind is FeedKind {
  return (FEED_KINDS as readonly string[]).includes(kind);
}

export type { Aggregate, CheckContext, FeedDeclaration } from "./declaration.js";
