import { Redis } from "ioredis";

// Redis for tests: a real server at 127.0.0.1:6379 (or MARKETDATA_TEST_REDIS);
// each test uses a key prefix of its own. Without one the tests that need it
// skip with a visible message, unless MARKETDATA_TEST_REDIS is set (CI).

export const REDIS_URL = process.env.MARKETDATA_TEST_REDIS || "redis://127.0.0.1:6379";

export const redisUp = await (async () => {
  const client = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
})();

/** True when the tests needing Redis must skip; says so once per caller. */
export function skipRedis(what: string): boolean {
  const skip = !redisUp && !process.env.MARKETDATA_TEST_REDIS;
  if (skip) console.warn(`SKIPPED: ${what}: no Redis at ${REDIS_URL} (set MARKETDATA_TEST_REDIS to require it)`);
  return skip;
}
