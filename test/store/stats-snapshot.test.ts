import type { Statement } from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, openReadOnly, openWritable } from "../../src/store/sqlite/database.js";
import { sqliteRepositories } from "../../src/store/sqlite/read-repositories.js";
import { WriteStore } from "../../src/store/sqlite/record-writes.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";

// A stats answer is assembled from several statements (per marketplace,
// running totals and the edges of the hour). An import that commits between
// two of them must not show: every answer comes from one snapshot of the
// store. The commit is made to land exactly there, by a hook on the read
// connection's statements.

let f: Fixture;
beforeAll(() => {
  f = buildFixture();
});
afterAll(() => f?.cleanup());

/** The read connection, with `afterFirstRead` run once, right after the first statement a stats read executes. */
function hookedConnection(db: Db, afterFirstRead: () => void): Db {
  let fired = false;
  const wrap = (stmt: Statement): Statement => {
    const proxy: Statement = new Proxy(stmt, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        if (prop !== "get" && prop !== "all" && prop !== "iterate") {
          // pluck(), raw(), bind() ... return the statement: keep returning the proxy.
          return (...args: unknown[]) => {
            const result = (value as (...a: unknown[]) => unknown).apply(target, args);
            return result === target ? proxy : result;
          };
        }
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (!fired) {
            fired = true;
            afterFirstRead();
          }
          return result;
        };
      },
    });
    return proxy;
  };
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql));
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("collection stats come from one snapshot", () => {
  it("an import committing between two of a stats read's statements does not show in that answer", () => {
    const plain = openReadOnly(f.dbPath);
    const before = sqliteRepositories(plain);
    const id = before.collections.collectionId(COLLECTION)!;
    const expected = before.sales.salesSummary(id, {});

    const commitMore = () => {
      const w = openWritable(f.dbPath);
      try {
        const store = new WriteStore(w);
        store.transaction(() => {
          f.sales.forEach((s, i) => {
            // Every marketplace gains sales, so any statement after the commit would see more (at their own prices: none is a wash trade).
            store.upsertSale({ ...s, hash: `0x${(i + 1).toString(16).padStart(64, "f")}` });
          });
        });
      } finally {
        w.close();
      }
    };

    const raw = openReadOnly(f.dbPath);
    const hooked = sqliteRepositories(hookedConnection(raw, commitMore));
    const answer = hooked.sales.salesSummary(id, {});
    expect(answer).toEqual(expected);
    // The commit did happen: a new read sees it.
    const after = hooked.sales.salesSummary(id, {});
    expect(after.totalNumSales).toBe(expected.totalNumSales * 2);
    raw.close();
    plain.close();
  });
});
