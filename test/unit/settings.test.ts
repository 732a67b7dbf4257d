import { Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { addSettings } from "../../src/cli/setting-options.js";
import { consumeConfig } from "../../src/config/consume.js";
import { resolveServeConfig } from "../../src/config/serve.js";
import { CONSUME_SETTINGS, GROUPS, readSettings, SERVE_SETTINGS, type Setting, START_SETTINGS } from "../../src/config/settings.js";
import { runCli } from "../cli/run-cli.js";

// The settings table (config/settings.ts) is the one place a setting is
// declared: commander's options and the validated configuration are both
// built from it, every setting has a variable, and a value comes from the
// command line, else the environment, else the default.

const ALL: [string, Setting<unknown>][] = [...Object.entries(SERVE_SETTINGS), ...Object.entries(START_SETTINGS), ...Object.entries(CONSUME_SETTINGS)];

describe("the settings table", () => {
  it("gives every setting one flag, one variable and a group, and keys each by commander's name for its flag", () => {
    const flags = ALL.map(([, s]) => s.flag.split(" ")[0]);
    const envs = ALL.map(([, s]) => s.env);
    expect(new Set(flags).size).toBe(flags.length);
    expect(new Set(envs).size).toBe(envs.length);
    for (const [key, s] of ALL) {
      expect(s.env, key).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(Object.keys(GROUPS), key).toContain(s.group);
      expect(new Option(s.flag).attributeName(), s.flag).toBe(key);
      expect(s.help.length, key).toBeGreaterThan(10);
    }
  });

  it("holds defaults its own checks accept", () => {
    for (const [key, s] of ALL) {
      if (s.defaultText !== undefined || s.default === undefined || s.default === "" || typeof s.default !== "number" && typeof s.default !== "string") continue;
      expect(s.check(String(s.default), key), key).toEqual(s.default);
    }
  });

  it("takes the command line, else the environment, else the default", () => {
    const t = { port: SERVE_SETTINGS.port, metrics: SERVE_SETTINGS.metrics, allowPrivateWebhooks: SERVE_SETTINGS.allowPrivateWebhooks };
    expect(readSettings(t, {}, {})).toEqual({ port: 8080, metrics: true, allowPrivateWebhooks: false });
    expect(readSettings(t, {}, { PORT: "9000", METRICS: "false", ALLOW_PRIVATE_WEBHOOKS: "yes" })).toEqual({ port: 9000, metrics: false, allowPrivateWebhooks: true });
    // commander reports a --no- switch not given as true: the variable still counts.
    expect(readSettings(t, { port: "7000", metrics: true }, { PORT: "9000", METRICS: "0" })).toEqual({ port: 7000, metrics: false, allowPrivateWebhooks: false });
    expect(readSettings(t, { metrics: false, allowPrivateWebhooks: true }, { METRICS: "true" })).toMatchObject({ metrics: false, allowPrivateWebhooks: true });
    expect(() => readSettings(t, {}, { METRICS: "maybe" })).toThrow(/--no-metrics \(METRICS\) must be true or false, got "maybe"/);
    expect(() => resolveServeConfig({}, { REQUEST_TIMEOUT: "soon" })).toThrow(/--request-timeout \(REQUEST_TIMEOUT\) must be a number of seconds/);
    expect(resolveServeConfig({}, { WEBHOOK_CONCURRENCY: "8", STORE_TIMEOUT: "2" })).toMatchObject({ webhooks: { concurrency: 8 }, timeouts: { storeMs: 2000 } });
    expect(consumeConfig({}, { NATS_URL: "nats://127.0.0.1:4222", CONSUME_BATCH: "50" })).toMatchObject({ servers: "nats://127.0.0.1:4222", batch: 50 });
    expect(() => consumeConfig({}, {})).toThrow(/--from \(NATS_URL\) is required/);
    expect(readSettings(START_SETTINGS, {}, { DEMO_SCALE: "small" })).toEqual({ demoScale: "small" });
    expect(() => readSettings(START_SETTINGS, { demoScale: "huge" }, {})).toThrow(/--demo-scale \(DEMO_SCALE\) must be one of small, default, large, got "huge"/);
  });

  it("groups serve's help: serving, limits, store, live, webhooks, cluster", () => {
    const help = addSettings(new Command("serve"), SERVE_SETTINGS).helpInformation();
    const headings = help.split("\n").filter((l) => /^[A-Z][^:]*:$/.test(l));
    expect(headings).toEqual(["Serving:", "Limits:", "Store:", "Live feeds and freshness:", "Webhooks:", "Cluster:", "Options:"]);
    for (const [, s] of Object.entries(SERVE_SETTINGS)) expect(help.replace(/\s+/g, " "), s.env).toContain(`env: ${s.env}`);
  });

  it("is what the command reads: a variable's bad value is refused at startup, named", () => {
    const r = runCli(["serve", "--port", "0"], undefined, { REQUEST_TIMEOUT: "soon" });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/--request-timeout \(REQUEST_TIMEOUT\) must be a number of seconds/);
  });
});
