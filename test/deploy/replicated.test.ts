import { describe, expect, it } from "vitest";
import { runReplicatedDeployment } from "../../tools/deploy/replicated.js";
import { PG_ADMIN_URL, skipPg } from "../support/pg.js";
import { REDIS_URL, skipRedis } from "../support/redis.js";
import { freePort } from "../support/server.js";

// The replicated deployment of issue 10, for real: a pg_basebackup -R hot
// standby of the test cluster on another port, two `serve` processes on it
// sharing one Redis, import and key revocation on the primary. The same
// code as `npm run deploy:replicated`, whose report is checked here.

const skip = skipPg || skipRedis("the replicated deployment");

describe.skipIf(skip)("a replicated deployment: primary, hot standby, two servers, one Redis", () => {
  it("serves imports once replayed, refuses a revoked key on both servers, and holds one rate limit across them", async () => {
    const report = await runReplicatedDeployment({
      primary: PG_ADMIN_URL,
      // A free port now (one derived from the pid once landed on another service's, RabbitMQ's 5672).
      standbyPort: await freePort(),
      redis: REDIS_URL,
      sales: 1000,
      loadSeconds: 3,
    });
    // 1. Both servers serve every imported sale (they read the standby, not the primary).
    expect(report.totalNumSales).toEqual([1000, 1000]);
    // 2. Revoked on the primary: refused by both once replayed.
    expect(report.revokedStatus).toEqual([401, 401]);
    // 3. One limit of 100/s across both: never more than 100 accepted per
    // one-second window in all (each server alone would have accepted 100),
    // the limit was reached (the load far exceeded it), and both servers
    // turned requests away.
    const { accepted, limited, windows, limit } = report.rate;
    const total = accepted[0] + accepted[1];
    expect(total).toBeLessThanOrEqual(limit * windows);
    expect(total).toBeGreaterThanOrEqual(limit * (windows - 2));
    expect(accepted[0]).toBeGreaterThan(0);
    expect(accepted[1]).toBeGreaterThan(0);
    expect(limited[0]).toBeGreaterThan(0);
    expect(limited[1]).toBeGreaterThan(0);
    // (That the load reached the limit is the lower bound on `total` above; how far past it the generator gets depends on the
    // machine: more refused than accepted failed on CI's loaded one with 229 refused to 291 accepted, the limit held.)
  }, 180_000);
});
