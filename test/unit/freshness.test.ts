import { describe, expect, it } from "vitest";
import { DataVersionWatch, KEY_MEMO_MS, MemoizedKeyVerifier, ResponseCache } from "../../src/transport/cache/freshness.js";
import { matchesIfNoneMatch } from "../../src/transport/cache/cached-response.js";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function source() {
  const s = { version: 1, reads: 0, dataVersion: () => (s.reads++, s.version) };
  return s;
}

describe("data version watch", () => {
  it("reads the version at most once per event-loop turn and sees a change on the next turn", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    await nextTurn();
    let changes = 0;
    watch.onChange(() => changes++);
    s.reads = 0;
    watch.check();
    watch.check();
    expect(s.reads).toBe(1);
    s.version = 2;
    await nextTurn();
    expect(watch.check()).toBe(2);
    expect(changes).toBe(1);
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
    // A commit (revocation) empties the memo at once.
    valid.add("good");
    expect(keys.lookup("good")).toBeDefined();
    valid.delete("good");
    s.version++;
    await nextTurn();
    expect(keys.lookup("good")).toBeUndefined();
  });
});

describe("response cache", () => {
  it("evicts least recently used entries past its byte budget and is off at 0", async () => {
    const watch = new DataVersionWatch(source());
    const entry = (n: number) => ({ body: Buffer.alloc(n), contentType: "x", etag: '"e"' });
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

  it("is emptied when the data version moves", async () => {
    const s = source();
    const watch = new DataVersionWatch(s);
    const cache = new ResponseCache(10_000, watch);
    cache.set("a", { body: Buffer.alloc(1), contentType: "x", etag: '"e"' });
    s.version++;
    await nextTurn();
    watch.check();
    expect(cache.get("a")).toBeUndefined();
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
