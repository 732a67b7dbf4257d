import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { defineConfig, type ViteUserConfig } from "vitest/config";

// Two projects: every test on the embedded SQLite store, and the end-to-end
// suite again on PostgreSQL (MARKETDATA_TEST_ENGINE=postgres: each file's
// fixture imported into a database of its own). Without a reachable
// PostgreSQL the second project is left out with a visible message, unless
// MARKETDATA_TEST_PG is set, which makes it required (CI sets it).

/**
 * The end-to-end and derive files that depend on the store, found by what
 * they use rather than listed: a file that serves the fixture on the test
 * engine (useFixtureServer, useEmptyStoreServer) or imports the engine helpers
 * (support/engine.ts) runs on both engines; the others build a SQLite
 * fixture themselves and test the transport, once. A new store test
 * therefore runs on PostgreSQL by construction.
 */
const STORE_E2E = ["test/e2e", "test/derive"]
  .flatMap((dir) => readdirSync(dir).filter((f) => f.endsWith(".test.ts")).map((f) => `${dir}/${f}`))
  .filter((f) => /useFixtureServer|useEmptyStoreServer|from "\.\.\/support\/engine\.js"/.test(readFileSync(f, "utf8")));

/**
 * Files run alone, after the others: each times what it observes under
 * load of its own (a drain, a failover, a consumer killed mid-stream) or
 * runs clusters and processes of its own.
 */
const SERIAL = [
  "test/e2e/hostile-connections.test.ts",
  ...readdirSync("test/deploy").map((f) => `test/deploy/${f}`),
  ...readdirSync("test/cli").filter((f) => /processes\.test\.ts$|^workers\.test\.ts$/.test(f)).map((f) => `test/cli/${f}`),
].filter((f) => f.endsWith(".test.ts"));

function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || 5432) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

export default defineConfig(async (): Promise<ViteUserConfig> => {
  const pgUrl = process.env.MARKETDATA_TEST_PG || "postgres://postgres@127.0.0.1:5432/postgres";
  const withPg = Boolean(process.env.MARKETDATA_TEST_PG) || (await reachable(pgUrl));
  if (!withPg) console.warn(`SKIPPED: the end-to-end suite on PostgreSQL: no server at ${pgUrl} (set MARKETDATA_TEST_PG to require it)`);
  return {
    test: {
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: "forks",
      // Two files at a time (vitest's default on two cores is one: the suite
      // ran serially, near CI's 20 minutes), then, one at a time, the files
      // that time what they observe (a drain, a failover) or run clusters and
      // processes of their own, which a second file's load would skew.
      projects: [
        { extends: true as const, test: { name: "sqlite", include: ["test/**/*.test.ts"], exclude: SERIAL, maxWorkers: 2, sequence: { groupOrder: 0 } } },
        ...(withPg
          ? [
              {
                extends: true as const,
                test: { name: "postgres", include: STORE_E2E, exclude: SERIAL, env: { MARKETDATA_TEST_ENGINE: "postgres" }, maxWorkers: 2, sequence: { groupOrder: 0 } },
              },
            ]
          : []),
        { extends: true as const, test: { name: "serial", include: SERIAL, maxWorkers: 1, sequence: { groupOrder: 1 } } },
        ...(withPg
          ? [
              {
                extends: true as const,
                test: {
                  name: "postgres-serial",
                  include: STORE_E2E.filter((f) => SERIAL.includes(f)),
                  env: { MARKETDATA_TEST_ENGINE: "postgres" },
                  maxWorkers: 1,
                  sequence: { groupOrder: 2 },
                },
              },
            ]
          : []),
      ],
    },
  };
});
