import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFixture, type Fixture } from "../support/fixture.js";
import { runCli } from "./run-cli.js";

// What a new user meets in the first hour (issue 49, items 16 and 19): a
// bad --host, a busy --metrics-port and a --db of an unknown scheme said as
// what they are (not "PostgreSQL: getaddrinfo ENOTFOUND", "internal error",
// "store does not exist"); a misspelled flag's error and suggestion as the
// last lines, not above 100 lines of help; serve's help saying it takes
// writes.

let f: Fixture;
beforeAll(() => {
  f = buildFixture();
});
afterAll(() => f.cleanup());

describe("the first hour's mistakes", () => {
  it("a --host that is no address says so, naming --host", () => {
    const r = runCli(["serve", "--db", f.dbPath, "--port", "0", "--workers", "1", "--host", "256.1.1.1"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/256\.1\.1\.1 is neither an address of this machine nor a name that resolves: choose another with --host/);
    expect(r.stderr).not.toMatch(/PostgreSQL|internal error/);
  });

  it("a busy --metrics-port says so, naming --metrics-port", async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    const { port } = busy.address() as net.AddressInfo;
    try {
      const r = runCli(["serve", "--db", f.dbPath, "--port", "0", "--workers", "1", "--metrics-port", String(port)]);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(r.stderr).toContain("--metrics-port");
      expect(r.stderr).not.toMatch(/internal error/);
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });

  it("a --db of another scheme names the stores there are", () => {
    for (const args of [["migrate", "--db", "mysql://x/y"], ["serve", "--db", "mysql://x/y", "--port", "0", "--workers", "1"]]) {
      const r = runCli(args);
      expect(r.status, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/--db takes a SQLite file's path or a postgres:\/\/ \(postgresql:\/\/\) URL; mysql:\/\/ is not a store this build knows/);
    }
  });

  it("a misspelled flag ends with its error and suggestion, not the whole help", () => {
    const r = runCli(["serve", "--prot", "8080"]);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines.length).toBeLessThanOrEqual(4);
    expect(r.stderr).toMatch(/unknown option '--prot'[\s\S]*Did you mean --port\?/);
  });

  it("serve's help says it takes writes", () => {
    const help = runCli(["serve", "--help"]).stdout;
    expect(help).not.toMatch(/read-only/);
    expect(help).toMatch(/ingest/);
  });
});
