import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { relative } from "node:path";
import { defineConfig, type ViteUserConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

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
 * The files that take longest (seconds, both engines together, from a CI
 * run's per-file durations on this machine), started first, so that none of them
 * starts near the end and leaves the other worker idle: a fresh clone (CI)
 * has no timings of its own for vitest to order by. Refresh when a file
 * grows past the last one listed; an unlisted file only starts later.
 */
const SLOW_FIRST: Record<string, number> = {
  // Measured in the CI run of 11-29 (vitest 626 s in all).
  "test/tooling/doc-commands.test.ts": 50,
  "test/e2e/webhooks.test.ts": 50,
  "test/e2e/feeds.test.ts": 44,
  // Orders in its histories (issue 52): 150 runs on SQLite, 50 on PostgreSQL.
  "test/store/reorgs.property.test.ts": 37,
  "test/store/pg-query-plans.test.ts": 36,
  "test/deploy/failover.test.ts": 32,
  "test/e2e/export.test.ts": 31,
  "test/store/many-collections.test.ts": 30,
  "test/cli/webhooks-processes.test.ts": 24,
  "test/store/ownership.property.test.ts": 21,
  "test/ingest/import-validation.test.ts": 21,
  "test/e2e/public-surfaces.test.ts": 21,
  "test/e2e/ingest.test.ts": 21,
  "test/cli/ingest-writes.test.ts": 21,
  "test/e2e/rate-limits.test.ts": 19,
  "test/store/analytics.property.test.ts": 18,
  "test/ingest/import-cli.test.ts": 18,
  "test/e2e/reflection-health.test.ts": 18,
  "test/e2e/hostile-input.test.ts": 17,
  "test/client/packed.test.ts": 17,
  "test/cli/workers.test.ts": 17,
  "test/store/webhook-merge.property.test.ts": 16,
  "test/demo/demo.test.ts": 16,
  "test/client/retries.test.ts": 16,
  "test/cli/start.test.ts": 16,
  "test/store/sales-stats.property.test.ts": 15,
  "test/store/pg-migrations.test.ts": 15,
  "test/store/fillable.property.test.ts": 15,
  // Floor history (issue 54), measured alone on 11-30 (both engines): 100 runs on SQLite, 40 on PostgreSQL.
  "test/store/floor-history.property.test.ts": 15,
  "test/service/reorgs-live.property.test.ts": 13,
  "test/e2e/admission.test.ts": 13,
};

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files.filter((f) => weightOf(f) === undefined));
    const slow = files.filter((f) => weightOf(f) !== undefined).sort((a, b) => weightOf(b)! - weightOf(a)!);
    return [...slow, ...rest];
  }
}

function weightOf(spec: TestSpecification): number | undefined {
  const file = relative(process.cwd(), spec.moduleId);
  return SLOW_FIRST[file];
}

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
      // Two files at a time (the machine's two cores), every file, the ones
      // that run clusters and processes of their own included: their waits
      // are deadlines for what they observe, so a busy machine slows them
      // without failing them. Worker processes are reused from file to file:
      // a file imports the code once per worker, not once per file (isolation
      // cost a quarter of the suite's time in module loading). Each test
      // opens and closes what it uses (its own store, database, port and
      // stream names), so files share a process safely.
      isolate: false,
      maxWorkers: 2,
      // Checks that a file runs on the engine its project names (a shared process keeps its modules).
      setupFiles: ["test/support/setup.ts"],
      sequence: { sequencer: SlowFirst },
      projects: [
        { extends: true as const, test: { name: "sqlite", include: ["test/**/*.test.ts"] } },
        ...(withPg ? [{ extends: true as const, test: { name: "postgres", include: STORE_E2E, env: { MARKETDATA_TEST_ENGINE: "postgres" } } }] : []),
      ],
    },
  };
});
