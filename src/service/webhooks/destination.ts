import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { echo } from "../../domain/echo.js";

// Where a webhook may deliver. A server that pushes to URLs its callers name
// is a way into the network it runs in (SSRF): a subscription to
// http://10.0.0.5/admin or http://169.254.169.254/ would make the server
// call them. So destinations are https, and their addresses public, unless
// the operator started the server with --allow-private-webhooks (a receiver
// on the same machine or network, tests). The address is checked when the
// subscription is made (a literal address or "localhost") and again at each
// connection, on what the name resolves to then (a name that resolved to a
// public address at creation may point inside later: DNS rebinding).

export const MAX_URL_LENGTH = 2048;

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24], ["203.0.113.0", 24],
  ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) {
  PRIVATE.addSubnet(net, bits, "ipv4");
}
for (const [net, bits] of [["::", 128], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8], ["2001:db8::", 32], ["64:ff9b::", 96], ["100::", 64]] as const) {
  PRIVATE.addSubnet(net, bits, "ipv6");
}

/** True for loopback, private, link-local, shared, documentation, multicast and reserved addresses (IPv4-mapped IPv6 as its IPv4). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return PRIVATE.check(mapped[1]!, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return PRIVATE.check(address, family === 4 ? "ipv4" : "ipv6");
}

export interface DestinationPolicy {
  /** --allow-private-webhooks: http, loopback and private addresses allowed. */
  allowPrivate: boolean;
}

function refused(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** The URL a webhook may deliver to, normalized; refused with invalid_argument, saying why. */
export function checkWebhookUrl(text: string, policy: DestinationPolicy): string {
  if (text.length > MAX_URL_LENGTH) throw refused(`url must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refused(`url must be an absolute https:// URL, got ${echo(text)}`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowPrivate)) {
    throw refused(
      policy.allowPrivate
        ? `url must be http:// or https://, got ${echo(text)}`
        : `url must be https:// (http only on a server started with --allow-private-webhooks), got ${echo(text)}`,
    );
  }
  if (url.username !== "" || url.password !== "") throw refused("url must not hold a user name or password (the signature authenticates deliveries)");
  url.hash = "";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!policy.allowPrivate && (isIP(host) !== 0 ? isPrivateAddress(host) : host === "localhost" || host.endsWith(".localhost"))) {
    throw refused(`url ${echo(text)} is a loopback or private address: allowed only on a server started with --allow-private-webhooks`);
  }
  return url.toString();
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup for http(s).request that refuses names resolving to a
 * private address (unless allowed): the check made at the connection, on
 * the address actually dialled.
 */
export function guardedLookup(policy: DestinationPolicy) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, []);
      const list = addresses as LookupAddress[];
      const allowed = policy.allowPrivate ? list : list.filter((a) => !isPrivateAddress(a.address));
      if (allowed.length === 0) {
        const refusal: NodeJS.ErrnoException = new Error(`${hostname} resolves to a loopback or private address (allowed only with --allow-private-webhooks)`);
        refusal.code = "EPRIVATE";
        return callback(refusal, []);
      }
      if (options.all === true) return callback(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}
