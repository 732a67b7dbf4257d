import net from "node:net";
import { defineConfig, type ViteUserConfig } from "vitest/config";

// Two projects: every test on the embedded SQLite store, and the end-to-end
// suite again on PostgreSQL (MARKETDATA_TEST_ENGINE=postgres: each file's
// fixture imported into a database of its own). Without a reachable
// PostgreSQL the second project is left out with a visible message, unless
// MARKETDATA_TEST_PG is set, which makes it required (CI sets it).

/** The end-to-end files that depend on the store (transport-only ones run once, on SQLite). */
const STORE_E2E = [
  "test/e2e/admission.test.ts",
  "test/e2e/asset-id-lists.test.ts",
  "test/e2e/auth.test.ts",
  "test/e2e/grpc-js-client.test.ts",
  "test/e2e/hostile-input.test.ts",
  "test/e2e/metrics.test.ts",
  "test/e2e/not-found.test.ts",
  "test/e2e/pagination-inserts.test.ts",
  "test/e2e/pagination.test.ts",
  "test/e2e/protocols.test.ts",
  "test/e2e/public-surfaces.test.ts",
  "test/e2e/reflection-health.test.ts",
  "test/e2e/response-cache.test.ts",
  "test/e2e/rest-shapes.test.ts",
  "test/e2e/stats.test.ts",
  "test/e2e/validation.test.ts",
];

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
      projects: [
        { extends: true as const, test: { name: "sqlite", include: ["test/**/*.test.ts"] } },
        ...(withPg
          ? [{ extends: true as const, test: { name: "postgres", include: STORE_E2E, env: { MARKETDATA_TEST_ENGINE: "postgres" } } }]
          : []),
      ],
    },
  };
});
