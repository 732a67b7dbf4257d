import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { startServe } from "../../src/cli/run-sync.js";
import { runCli, slowCall } from "./run-cli.js";

let f: Fixture;
beforeAll(() => {
  f = buildFixture();
});
afterAll(() => f.cleanup());

describe("marketdata serve", () => {
  it("refuses a store that does not exist, without a stack trace", () => {
    const r = runCli(["serve", "--db", `${f.dir}/missing.sqlite`, "--port", "0"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^marketdata: store .*missing\.sqlite does not exist/);
  });

  it.each([
    [["--port", "99999"], /--port \(PORT\) must be an integer from 0 to 65535, got "99999"/],
    [["--port", "http"], /--port \(PORT\) must be an integer from 0 to 65535, got "http"/],
  ])("validates config once at startup: %j", (args, message) => {
    const r = runCli(["serve", "--db", f.dbPath, ...args]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(message);
  });

  it.each([["1"], ["2"]])("on a port in use (--workers %s): one line naming it and how to choose another, exit 1, nothing after", async (workers) => {
    const taken = net.createServer().listen(0, "127.0.0.1");
    await new Promise((r) => taken.once("listening", r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const r = runCli(["serve", "--db", f.dbPath, "--port", String(port), "--workers", workers]);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`marketdata: port ${port} on 127.0.0.1 is already in use (another server?): choose another with --port N, or PORT=N for npm start\n`);
    } finally {
      taken.close();
    }
  });

  it("reads MARKETDATA_DB, PORT and HOST, serves, and on SIGTERM finishes the request in flight", async () => {
    const { child, url } = await startServe([], { env: { MARKETDATA_DB: f.dbPath, PORT: "0", HOST: "127.0.0.1", WORKERS: "1" } });
    try {
      const ok = await fetch(`${url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": f.key } });
      expect(ok.status).toBe(200);

      // A Connect call whose body is still arriving when the signal lands.
      const call = slowCall(url, f.key, COLLECTION);
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      await new Promise((r) => setTimeout(r, 300));
      child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
      call.finish();
      const r = await call.done;
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).successful).toBe(1);
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
