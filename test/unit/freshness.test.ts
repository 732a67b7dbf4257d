import { describe, expect, it } from "vitest";
import { DataVersionWatch, KEY_MEMO_MS, MemoizedKeyVerifier, ResponseCache } from "../../src/transport/cache/freshness.js";
import { matchesIfNoneMatch } from "../../src/transport/cache/cached-response.js";
import type { DataVersion, StoreChanges } from "../../src/store/ports/reads.js";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A store whose commits the test makes: `commit` changes collections (or "all"), or the keys. */
function source() {
  const s = {
    data: 1,
    keys: 1,
    reads: 0,
    /** Addresses stamped with each data version. */
    stamps: new Map<number, readonly string[] | "all">(),
    commit(collections: readonly string[] | "all") {
      s.stamps.set(++s.data, collections);
    },
    changesSince(since: DataVersion | undefined): StoreChanges {
      s.reads++;
      const now = { data: s.data, keys: s.keys };
      if (since === undefined) return { now, collections: [] };
      const moved = [...s.stamps].filter(([v]) => v > since.data).map(([, c]) => c);
      if (moved.includes("all")) return { now, collections: "all" };
      return { now, collections: [...new Set(moved.flat() as string[])] };
    },
  };
  return s;
}

describe("data version watch", () => {
  it("reads the store at most once per event-loop turn and sees a commit on the next turn", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    await nextTurn();
    s.reads = 0;
    const before = watch.stampOf(["0xa"]);
    watch.check();
    watch.check();
    expect(s.reads).toBe(1);
    s.commit(["0xa"]);
    watch.check();
    expect(watch.stampOf(["0xa"])).toBe(before);
    await nextTurn();
    watch.check();
    expect(s.reads).toBe(2);
    expect(watch.stampOf(["0xa"])).not.toBe(before);
  });

  it("moves the stamp of the collections a commit changed, and of no other; of all of them on a change that reaches all", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    const stamps = () => [watch.stampOf(["0xa"]), watch.stampOf(["0xb"]), watch.stampOf(["0xa", "0xb"]), watch.stampOf(["0xc"]), watch.stampOf(undefined)];
    const [a, b, ab, c, any] = stamps();
    s.commit(["0xa"]);
    await nextTurn();
    watch.check();
    const [a1, b1, ab1, c1, any1] = stamps();
    expect(a1).not.toBe(a);
    expect(ab1).not.toBe(ab);
    expect(any1).not.toBe(any);
    expect([b1, c1]).toEqual([b, c]);
    // Two commits between reads, to two collections: both move.
    s.commit(["0xb"]);
    s.commit(["0xc"]);
    await nextTurn();
    watch.check();
    const [a2, b2, , c2] = stamps();
    expect(a2).toBe(a1);
    expect(b2).not.toBe(b1);
    expect(c2).not.toBe(c1);
    let cleared = 0;
    watch.onAllChange(() => cleared++);
    s.commit("all");
    await nextTurn();
    watch.check();
    const [a3, b3, , c3] = stamps();
    expect([a3 !== a2, b3 !== b2, c3 !== c2, cleared]).toEqual([true, true, true, 1]);
  });

  it("tells key listeners of a change to the keys alone, and leaves every collection's stamp", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    let keyChanges = 0;
    watch.onKeysChange(() => keyChanges++);
    const before = watch.stampOf(["0xa"]);
    s.keys++;
    await nextTurn();
    watch.check();
    expect(keyChanges).toBe(1);
    expect(watch.stampOf(["0xa"])).toBe(before);
    s.commit(["0xa"]);
    await nextTurn();
    watch.check();
    expect(keyChanges).toBe(1);
  });
});

describe("verified-key memo", () => {
  it("remembers a valid key for at most a second, never an invalid one, and forgets all on a commit", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    let now = 1_000_000;
    let lookups = 0;
    const valid = new Set(["good"]);
    const keys = new MemoizedKeyVerifier({ lookup: (k) => (lookups++, valid.has(k) ? { id: 1, rateLimit: null, scope: "read" as const } : undefined) }, watch, () => now);
    expect(keys.lookup("good")).toBeDefined();
    expect(keys.lookup("good")).toBeDefined();
    expect(lookups).toBe(1);
    expect(keys.lookup("bad")).toBeUndefined();
    expect(keys.lookup("bad")).toBeUndefined();
    expect(lookups).toBe(3);
    // Past the memo's lifetime the store is asked again.
    valid.delete("good");
    now += KEY_MEMO_MS;
    expect(keys.lookup("good")).toBeUndefined();
    // A change to the keys (a revocation) empties the memo at once; a commit of data does not.
    valid.add("good");
    expect(keys.lookup("good")).toBeDefined();
    s.commit(["0xa"]);
    await nextTurn();
    expect(keys.lookup("good")).toBeDefined();
    expect(lookups).toBe(5);
    valid.delete("good");
    s.keys++;
    await nextTurn();
    expect(keys.lookup("good")).toBeUndefined();
  });
});

describe("response cache", () => {
  it("evicts least recently used entries past its byte budget and is off at 0", async () => {
    const watch = new DataVersionWatch(source());
    const entry = (n: number) => ({ body: Buffer.alloc(n), contentType: "x", etag: '"e"', collections: undefined, stamp: watch.stampOf(undefined) });
    const cache = new ResponseCache(10_000, watch);
    cache.set("a", entry(4000));
    cache.set("b", entry(4000));
    cache.get("a");
    cache.set("c", entry(4000));
    expect(cache.get("a")).toBeDefined();
    expect(cache.get("b")).toBeUndefined();
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    cache.set("huge", entry(20_000));
    expect(cache.get("huge")).toBeUndefined();
    const off = new ResponseCache(0, watch);
    off.set("a", entry(1));
    expect(off.get("a")).toBeUndefined();
    expect(off.enabled).toBe(false);
  });

  it("never returns an entry of a collection changed since it was read; keeps those of the others", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    const cache = new ResponseCache(10_000, watch);
    const entry = (collections: readonly string[] | undefined) => ({ body: Buffer.alloc(1), contentType: "x", etag: '"e"', collections, stamp: watch.stampOf(collections) });
    cache.set("a", entry(["0xa"]));
    cache.set("b", entry(["0xb"]));
    cache.set("ab", entry(["0xa", "0xb"]));
    cache.set("any", entry(undefined));
    s.commit(["0xa"]);
    await nextTurn();
    watch.check();
    expect(["a", "b", "ab", "any"].map((k) => cache.get(k) !== undefined)).toEqual([false, true, false, false]);
    s.commit("all");
    await nextTurn();
    watch.check();
    expect(cache.get("b")).toBeUndefined();
  });
});

describe("If-None-Match", () => {
  it.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ["*", true],
    ['"abcd"', false],
    ["", false],
  ])("%s", (header, match) => {
    expect(matchesIfNoneMatch(header, '"abc"')).toBe(match);
  });
});
