import { describe, expect, it } from "vitest";
import { parseProxyEntry } from "../../src/config/checks.js";
import { addressBucket, ClientAddresses, normalizeAddress } from "../../src/transport/policy/client-address.js";

const req = (peer: string, xff?: string) => ({ headers: xff === undefined ? {} : { "x-forwarded-for": xff }, socket: { remoteAddress: peer } });

describe("client addresses", () => {
  it("normalizes IPv4-mapped, bracketed, compressed and zoned IPv6 addresses", () => {
    expect(normalizeAddress("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(normalizeAddress("[2001:DB8::1]")).toBe("2001:db8:0:0:0:0:0:1");
    expect(normalizeAddress("fe80::1%eth0")).toBe("fe80:0:0:0:0:0:0:1");
    expect(normalizeAddress("2001:db8::1.2.3.4")).toBe("2001:db8:0:0:0:0:102:304");
    expect(normalizeAddress("::")).toBe("0:0:0:0:0:0:0:0");
  });

  it("counts an IPv4 address alone and an IPv6 host by its /64", () => {
    expect(addressBucket("203.0.113.7")).toBe("203.0.113.7");
    expect(addressBucket("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(addressBucket("2001:db8::1")).toBe(addressBucket("2001:db8:0:0:ffff:ffff:ffff:ffff"));
    expect(addressBucket("2001:db8::1")).not.toBe(addressBucket("2001:db8:0:1::1"));
    expect(addressBucket(undefined)).toBe("?");
  });

  it("believes X-Forwarded-For only from trusted proxies, read from the right", () => {
    const untrusting = new ClientAddresses();
    expect(untrusting.of(req("127.0.0.1", "198.51.100.1"))).toBe("127.0.0.1");
    const behind = new ClientAddresses(["127.0.0.1", "10.0.0.0/8"]);
    // A caller's own claim (the leftmost entry) is passed over: the first hop no trusted proxy is.
    expect(behind.of(req("::ffff:127.0.0.1", "6.6.6.6, 198.51.100.1, 10.1.2.3"))).toBe("198.51.100.1");
    // An untrusted peer's header is ignored.
    expect(behind.of(req("198.51.100.9", "6.6.6.6"))).toBe("198.51.100.9");
    // Every hop trusted: the leftmost; a malformed entry ends the chain at the last hop named.
    expect(behind.of(req("127.0.0.1", "10.0.0.1"))).toBe("10.0.0.1");
    expect(behind.of(req("127.0.0.1", "junk, 10.0.0.2"))).toBe("10.0.0.2");
    expect(behind.bucketOf(req("127.0.0.1", "2001:db8::5"))).toBe("2001:db8:0:0::/64");
    expect(behind.isLoopback(req("127.0.0.1", "198.51.100.1"))).toBe(false);
    expect(behind.isLoopback(req("127.0.0.1"))).toBe(true);
    expect(untrusting.isLoopback(req("::1"))).toBe(true);
  });

  it("parses --trust-proxy entries and refuses anything else", () => {
    expect(parseProxyEntry("10.0.0.0/8")).toEqual({ address: "10.0.0.0", prefix: 8, family: "ipv4" });
    expect(parseProxyEntry("::1")).toEqual({ address: "::1", prefix: 128, family: "ipv6" });
    for (const bad of ["10.0.0.0/33", "localhost", "1.2.3.4/8/8", "::1/129", "1.2.3/8", "10.0.0.0/x"]) expect(parseProxyEntry(bad), bad).toBeUndefined();
  });
});
