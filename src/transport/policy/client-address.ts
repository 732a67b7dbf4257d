import net from "node:net";
import { parseProxyEntry } from "../../config/checks.js";

// Who a request comes from, for the per-address rate limit and for the
// loopback-only /metrics route. The address is the TCP peer's, unless the
// peer is a proxy the operator trusts (--trust-proxy): then X-Forwarded-For
// is read from the right, past every trusted hop, to the first address no
// trusted proxy vouches for. An address a caller merely claims is never
// believed: only a trusted proxy's word moves the answer.
//
// Limits count per bucket, not per address: an IPv6 host is handed a whole
// /64 (RFC 6177), so counting single IPv6 addresses would let one host spread
// a flood over 2^64 buckets.

/** IPv4 as is; an IPv4-mapped IPv6 address as its IPv4; any other IPv6 as its lower-case expanded form. */
export function normalizeAddress(address: string): string {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const kind = net.isIP(bare);
  if (kind === 4) return bare;
  if (kind !== 6) return bare;
  const groups = expandIpv6(bare);
  // ::ffff:a.b.c.d (IPv4-mapped): the IPv4 peer of a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`;
  }
  return groups.map((g) => g.toString(16)).join(":");
}

/** The rate-limit bucket of an address: an IPv4 address, or an IPv6 /64 prefix. */
export function addressBucket(address: string | undefined): string {
  return address === undefined || address === "" ? "?" : bucketOfNormal(normalizeAddress(address));
}

function bucketOfNormal(normal: string): string {
  return net.isIP(normal) !== 6 ? normal : `${normal.split(":").slice(0, 4).join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address ("::" and a trailing dotted IPv4 resolved). */
function expandIpv6(address: string): number[] {
  let text = address.toLowerCase().split("%")[0]!;
  const dotted = /([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const gap = text.indexOf("::");
  if (gap < 0) return parse(text);
  const head = parse(text.slice(0, gap));
  const tail = parse(text.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** The headers that matter here, of either HTTP version's request. */
interface PeerRequest {
  headers: Record<string, string | string[] | undefined>;
  socket: { remoteAddress?: string | undefined } | null;
}

export class ClientAddresses {
  readonly #trusted: net.BlockList | undefined;
  /** Without trusted proxies a connection's bucket is its peer's: worked out once per connection, not per request. */
  readonly #bucketOfSocket = new WeakMap<object, string>();

  /** `trustProxy`: addresses and CIDR blocks (validated by config/checks.ts) whose X-Forwarded-For is believed. */
  constructor(trustProxy: readonly string[] = []) {
    if (trustProxy.length === 0) return;
    this.#trusted = new net.BlockList();
    for (const entry of trustProxy) {
      const p = parseProxyEntry(entry);
      if (p === undefined) throw new Error(`not an address or CIDR block: ${JSON.stringify(entry)}`);
      this.#trusted.addSubnet(p.address, p.prefix, p.family);
    }
  }

  /** The client's address (normalized), as far as trusted proxies vouch for it. */
  of(req: PeerRequest): string | undefined {
    const peer = req.socket?.remoteAddress;
    if (peer === undefined) return undefined;
    let client = normalizeAddress(peer);
    if (this.#trusted === undefined || !this.#isTrusted(client)) return client;
    const header = req.headers["x-forwarded-for"];
    const hops = (Array.isArray(header) ? header.join(",") : (header ?? "")).split(",");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalizeAddress(hops[i]!.trim());
      // A malformed entry ends the chain: the last hop a trusted proxy named is the client.
      if (net.isIP(hop) === 0) break;
      client = hop;
      if (!this.#isTrusted(hop)) break;
    }
    return client;
  }

  /** The rate-limit bucket of the request's client (addressBucket). */
  bucketOf(req: PeerRequest): string {
    const socket = req.socket;
    if (this.#trusted !== undefined || socket === null) return this.#bucket(req);
    let bucket = this.#bucketOfSocket.get(socket);
    if (bucket === undefined) {
      bucket = this.#bucket(req);
      this.#bucketOfSocket.set(socket, bucket);
    }
    return bucket;
  }

  #bucket(req: PeerRequest): string {
    const client = this.of(req);
    return client === undefined || client === "" ? "?" : bucketOfNormal(client);
  }

  /** True when the request's client (not merely a proxy in front of it) is on this machine. */
  isLoopback(req: PeerRequest): boolean {
    const a = this.of(req);
    return a !== undefined && (a === "0:0:0:0:0:0:0:1" || (net.isIP(a) === 4 && a.startsWith("127.")));
  }

  #isTrusted(address: string): boolean {
    return this.#trusted!.check(address, net.isIP(address) === 6 ? "ipv6" : "ipv4");
  }
}
