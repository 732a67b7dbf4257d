import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { compareDecimal, isAddress, isTxHash, isUint256 } from "../../src/domain/formats.js";
import { assetKey } from "../../src/store/sqlite/asset-key.js";
import { limbsToWei, splitWei, sumWei } from "../../src/store/sqlite/wei.js";

describe("formats", () => {
  it("addresses and hashes", () => {
    expect(isAddress(`0x${"aB".repeat(20)}`)).toBe(true);
    expect(isAddress(`0x${"a".repeat(39)}`)).toBe(false);
    expect(isAddress(`0X${"a".repeat(40)}`)).toBe(false);
    expect(isTxHash(`0x${"0".repeat(64)}`)).toBe(true);
    expect(isTxHash(`0x${"g".repeat(64)}`)).toBe(false);
  });

  it("canonical uint256 decimals", () => {
    expect(isUint256("0")).toBe(true);
    expect(isUint256(((1n << 256n) - 1n).toString())).toBe(true);
    expect(isUint256((1n << 256n).toString())).toBe(false);
    for (const bad of ["", "00", "01", "-1", "+1", "1.0", "1e3", " 1", "9".repeat(79)]) expect(isUint256(bad)).toBe(false);
  });

  it("numeric order of decimal strings and of asset keys agree", () => {
    const ids = ["10", "9", "100", "0", "99", "1000000000000000000000"];
    const numeric = [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    expect([...ids].sort(compareDecimal)).toEqual(numeric);
    expect(ids.map(assetKey).sort()).toEqual(numeric.map(assetKey));
  });
});

describe("wei limbs", () => {
  it("split and join exactly", () => {
    for (const v of ["0", "1", "4294967295", "4294967296", (10n ** 19n).toString(), (2n ** 94n + 12345n).toString()]) {
      const { hi, lo } = splitWei(v);
      expect(limbsToWei(hi, lo).toString()).toBe(v);
    }
  });

  it("refuse amounts whose high limb would not fit 64 bits", () => {
    expect(splitWei((2n ** 95n).toString())).toEqual({ hi: null, lo: null });
  });

  it("sum exactly", () => {
    expect(sumWei([(2n ** 200n).toString(), "1"])).toBe(2n ** 200n + 1n);
  });
});

describe("server config", async () => {
  const { resolveServeConfig } = await import("../../src/config/serve.js");
  const DEFAULT_DB = "data/marketdata.sqlite";
  it("fills defaults and validates once", () => {
    const defaults = {
      cacheMb: 64,
      workers: availableParallelism(),
      logLevel: "info",
      rateLimit: 1000,
      anonymousRateLimit: 20,
      ingestRateLimit: 100,
      redis: undefined,
      timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000, idleMs: 60_000, shutdownMs: 10_000, storeMs: 10_000 },
      metrics: { enabled: true, port: undefined, host: "127.0.0.1" },
      corsOrigins: [],
      poolSize: 10,
      deriveRefresh: true,
      listingClockMs: 1_000,
      streamsPerKey: 1_000,
      maxStreams: 20_000,
      maxClockSkewSeconds: 86_400,
      trustProxy: [],
      webhooks: {
        deliver: true,
        allowPrivate: false,
        retryForMs: 24 * 3_600_000,
        concurrency: 64,
        perDestination: 4,
        timeoutMs: 10_000,
        ca: undefined,
        leaseMs: 15_000,
      },
    };
    expect(resolveServeConfig({})).toEqual({ db: DEFAULT_DB, port: 8080, host: "127.0.0.1", ...defaults });
    expect(resolveServeConfig({ port: "0", host: "::1", db: "x.sqlite" })).toEqual({ db: "x.sqlite", port: 0, host: "::1", ...defaults });
    expect(resolveServeConfig({ workers: "1", cacheMb: "0", logLevel: "WARN" })).toMatchObject({ workers: 1, cacheMb: 0, logLevel: "warn" });
    expect(() => resolveServeConfig({ workers: "0" })).toThrow(/--workers \(WORKERS\) must be an integer from 1 to 64, got "0"/);
    expect(() => resolveServeConfig({ cacheMb: "-1" })).toThrow(/--cache-mb \(CACHE_MB\) must be an integer/);
    expect(() => resolveServeConfig({ logLevel: "loud" })).toThrow(/--log-level \(LOG_LEVEL\) must be one of fatal, error/);
    expect(() => resolveServeConfig({ port: "65536" })).toThrow(/must be an integer from 0 to 65535, got "65536"/);
    expect(() => resolveServeConfig({ db: " " })).toThrow(/must not be empty/);
    expect(resolveServeConfig({ shutdownTimeout: "0.5", redis: "redis://127.0.0.1:6379", rateLimit: "0" })).toMatchObject({
      timeouts: { shutdownMs: 500 },
      redis: { url: "redis://127.0.0.1:6379", prefix: "marketdata:rl" },
      rateLimit: 0,
    });
    expect(() => resolveServeConfig({ requestTimeout: "-1" })).toThrow(/--request-timeout \(REQUEST_TIMEOUT\) must be a number of seconds/);
    expect(resolveServeConfig({ deriveRefresh: false }).deriveRefresh).toBe(false);
    expect(resolveServeConfig({ webhooks: false, allowPrivateWebhooks: true, webhookRetryHours: "0.5" }).webhooks).toMatchObject({ deliver: false, allowPrivate: true, retryForMs: 1_800_000 });
    expect(() => resolveServeConfig({ webhookRetryHours: "a day" })).toThrow(/--webhook-retry-hours \(WEBHOOK_RETRY_HOURS\) must be a number of hours/);
    expect(() => resolveServeConfig({ webhookLeaseSeconds: "5" })).toThrow(/--webhook-lease-seconds \(WEBHOOK_LEASE_SECONDS\) \(5\) must be at least 1.5 times --webhook-timeout \(WEBHOOK_TIMEOUT\) \(10\)/);
    expect(() => resolveServeConfig({ webhookCa: "/nonexistent/ca.pem" })).toThrow(/--webhook-ca \(WEBHOOK_CA\) "\/nonexistent\/ca.pem" cannot be read/);
    expect(() => resolveServeConfig({ webhookConcurrency: "0" })).toThrow(/--webhook-concurrency \(WEBHOOK_CONCURRENCY\) must be an integer from 1/);
    expect(resolveServeConfig({ corsOrigin: "https://a.example, http://localhost:5173" }).corsOrigins).toEqual(["https://a.example", "http://localhost:5173"]);
    expect(() => resolveServeConfig({ corsOrigin: "https://a.example/app" })).toThrow(/--cors-origin \(CORS_ORIGIN\) takes origins/);
    expect(() => resolveServeConfig({ redis: "http://x" })).toThrow(/--redis \(REDIS_URL\) must be a redis:\/\//);
    expect(() => resolveServeConfig({ rateLimit: "fast" })).toThrow(/--rate-limit \(RATE_LIMIT\) must be an integer/);
    expect(resolveServeConfig({ trustProxy: "10.0.0.0/8, ::1" }).trustProxy).toEqual(["10.0.0.0/8", "::1"]);
    expect(() => resolveServeConfig({ trustProxy: "10.0.0.0/40" })).toThrow(/--trust-proxy \(TRUST_PROXY\) takes addresses or CIDR blocks/);
    expect(resolveServeConfig({ metricsPort: "9464", metricsHost: "0.0.0.0" }).metrics).toEqual({ enabled: true, port: 9464, host: "0.0.0.0" });
    expect(() => resolveServeConfig({ metricsHost: "0.0.0.0" })).toThrow(/--metrics-host \(METRICS_HOST\) needs --metrics-port/);
    expect(resolveServeConfig({ storeTimeout: "2.5" }).timeouts.storeMs).toBe(2500);
  });
});
