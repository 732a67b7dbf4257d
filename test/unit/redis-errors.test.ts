import { describe, expect, it } from "vitest";
import type { Logger } from "pino";
import { countedLimits } from "../../src/counts.js";

// An unreachable Redis (issue 49, item 18): ioredis reports every
// reconnection attempt; the server's log says "redis connection error" at
// most once per 10 s (as docs/limits.md says), not once per attempt.

describe("an unreachable Redis", () => {
  it("is logged at most once per 10 s", async () => {
    const lines: string[] = [];
    const log = { warn: (a: unknown, b?: string) => lines.push(typeof a === "string" ? a : b ?? ""), info: () => {}, error: () => {} } as unknown as Logger;
    // Port 1 on loopback: refused at once, again at each reconnection.
    const counted = await countedLimits({ redis: { url: "redis://127.0.0.1:1", prefix: "test:" } } as never, log);
    try {
      await new Promise((r) => setTimeout(r, 3000));
    } finally {
      await counted.close();
    }
    expect(lines.filter((l) => l === "redis connection error")).toHaveLength(1);
  }, 20_000);
});
