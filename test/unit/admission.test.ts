import { describe, expect, it } from "vitest";
import type { DataVersion, StoreChanges } from "../../src/store/ports/reads.js";
import { DataVersionWatch, MemoizedKeyVerifier } from "../../src/transport/cache/freshness.js";
import { Admission } from "../../src/transport/policy/admission.js";
import { MemoryWindows } from "../../src/transport/policy/rate-limit.js";

// Admission of a key on its first requests, against a store that answers
// lookups asynchronously (PostgreSQL): a burst of first requests carrying a
// valid key must not be counted as unknown against the client address, and
// must cost one store lookup.

const quiet = { changesSince: (_: DataVersion | undefined): StoreChanges => ({ now: { data: 1, keys: 1 }, collections: [] }) };

function setup() {
  let lookups = 0;
  const store = {
    lookup: async (key: string) => {
      lookups++;
      await new Promise((r) => setTimeout(r, 20));
      return key === "good" ? { id: 1, rateLimit: null, scope: "read" as const } : undefined;
    },
  };
  const keys = new MemoizedKeyVerifier(store, new DataVersionWatch(quiet));
  // One rate window for the whole burst, however slowly the machine runs it (the limit is per second).
  const admission = new Admission(keys, { keyRate: 0, ingestRate: 0, anonymousRate: 5, windows: new MemoryWindows(() => 1_000_000) });
  return { admission, lookups: () => lookups };
}

describe("admission of a key's first requests", () => {
  it("admits a burst of 50 first requests with a valid key from one address, after one store lookup", async () => {
    const { admission, lookups } = setup();
    const results = await Promise.all(Array.from({ length: 50 }, () => admission.admit("good", "10.0.0.1")));
    expect(results.filter((r) => r.error !== undefined)).toEqual([]);
    expect(lookups()).toBe(1);
  });

  it("still holds a burst of an unknown key to the address's limit, in lookups and in answers", async () => {
    const { admission, lookups } = setup();
    const results = await Promise.all(Array.from({ length: 50 }, () => admission.admit("made-up", "10.0.0.2")));
    expect(results.every((r) => r.error !== undefined)).toBe(true);
    expect(lookups()).toBeLessThanOrEqual(5);
  });
});
