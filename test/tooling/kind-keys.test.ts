import { describe, expect, it } from "vitest";
import { declarationOf, KINDS } from "../../src/domain/kinds/index.js";
import { kindWrites as pgWrites } from "../../src/store/postgres/kind-writes.js";
import { kindWrites as sqliteWrites } from "../../src/store/sqlite/kind-writes.js";

// Each kind's natural key is said once, in its declaration; each engine's
// table is keyed by the same fields under its own column names. A key
// changed in a declaration and not in an engine (or the other way round)
// fails here, before a write would keep two records the API calls one.

/** A record's field as each engine's column: the contract is its collection's id (collections: the chain and address themselves). */
function column(engine: "sqlite" | "postgres", kind: string, field: string): string {
  // A collection is its chain and address (domain/chains.ts): other kinds hold both in its id.
  if (field === "contractAddress") return kind === "collections" ? "address" : "collection_id";
  if (field === "assetId") return engine === "sqlite" ? "asset_key" : "asset_id";
  return field.replace(".", "_").replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const sorted = (xs: readonly string[]) => [...xs].sort();

describe("the natural keys", () => {
  it.each(KINDS.map((k) => [k]))("%s: both engines key its table by its declaration's natural key", (kind) => {
    const key = declarationOf(kind).naturalKey;
    expect(key.length).toBeGreaterThan(0);
    expect(sorted(sqliteWrites(kind).key)).toEqual(sorted(key.map((f) => column("sqlite", kind, f))));
    expect(sorted(pgWrites(kind).key)).toEqual(sorted(key.map((f) => column("postgres", kind, f))));
  });
});
