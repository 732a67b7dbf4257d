import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
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

/**
 * True for every address that is not plain public unicast: loopback, private,
 * link-local, shared, documentation, multicast and reserved space, and the
 * IPv6 forms that embed or reach IPv4 or local space (IPv4-compatible ::/96,
 * 6to4, Teredo, NAT64 64:ff9b::/96 and its local-use /48, site-local
 * fec0::/10...), as ipaddr.js's maintained range table names them. An
 * IPv4-mapped address (::ffff:a.b.c.d) is judged as its IPv4 address.
 */
export function isPrivateAddress(address: string): boolean {
  if (isIP(address) === 0) return true;
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6") {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    // IPv4-compatible addresses (::a.b.c.d, deprecated by RFC 4291), which the table has no range for:
    // [::127.0.0.1] is [::7f00:1] once the URL parser has read it.
    else if (v6.match(IPV4_COMPATIBLE, 96)) return true;
  }
  return ip.range() !== "unicast";
}

const IPV4_COMPATIBLE = ipaddr.IPv6.parse("::");

/** The flag that allows private destinations, and where it goes. */
const ALLOW = "--allow-private-webhooks (on `marketdata webhooks create`, or on the server whose WebhookService creates it)";

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
  // The URL parser drops tabs and line breaks silently: a URL holding them is not the one its sender sees.
  if (/[\u0000-\u001f\u007f]/.test(text)) throw refused(`url must not hold control characters (line breaks, tabs), got ${echo(text)}`);
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
        : `url must be https:// (http:// only with ${ALLOW}), got ${echo(text)}`,
    );
  }
  if (url.username !== "" || url.password !== "") throw refused("url must not hold a user name or password (the signature authenticates deliveries)");
  url.hash = "";
  // A name's trailing dot (fully qualified) names the same host: "localhost." is localhost.
  const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
  if (!policy.allowPrivate && (isIP(host) !== 0 ? isPrivateAddress(host) : host === "localhost" || host.endsWith(".localhost"))) {
    throw refused(`url ${echo(text)} is a loopback or private address: allowed only with ${ALLOW}`);
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
        const refusal: NodeJS.ErrnoException = new Error(`${hostname} resolves to a loopback or private address (allowed only on a server started with --allow-private-webhooks)`);
        refusal.code = "EPRIVATE";
        return callback(refusal, []);
      }
      if (options.all === true) return callback(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}
