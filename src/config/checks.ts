import { readFileSync } from "node:fs";
import net from "node:net";

// The checks a setting's text goes through (settings.ts): each turns the
// text a flag or an environment variable gave into the value the server
// uses, or throws a ConfigError naming the setting as the operator wrote it
// ("--port (PORT)"), so that every refusal reads the same.

export class ConfigError extends Error {}

/** A setting's check: the text as given, and the setting's name for the error. */
export type Check<T> = (text: string, name: string) => T;

export const wholeNumber =
  (min: number, max: number): Check<number> =>
  (text, name) => {
    if (!/^[0-9]{1,9}$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
    }
    return Number(text);
  };

/** A duration in `unit`s (each `unitMs` long), with up to three decimals and `digits` whole digits, as milliseconds. */
const duration =
  (unit: string, unitMs: number, digits: number) =>
  (min: number, max: number): Check<number> =>
  (text, name) => {
    if (!new RegExp(`^[0-9]{1,${digits}}(\\.[0-9]{1,3})?$`).test(text) || Number(text) < min || Number(text) > max) {
      throw new ConfigError(`${name} must be a number of ${unit} from ${min} to ${max}, got ${JSON.stringify(text)}`);
    }
    return Math.round(Number(text) * unitMs);
  };

/** Seconds, with up to three decimals, as milliseconds. */
export const seconds = duration("seconds", 1000, 6);

/** Hours, with up to three decimals, as milliseconds. */
export const hours = duration("hours", 3_600_000, 3);

export const nonEmpty: Check<string> = (text, name) => {
  if (text.trim() === "") throw new ConfigError(`${name} must not be empty`);
  return text;
};

export const oneOf =
  <T extends string>(values: readonly T[]): Check<T> =>
  (text, name) => {
    const lower = text.toLowerCase();
    if (!(values as readonly string[]).includes(lower)) throw new ConfigError(`${name} must be one of ${values.join(", ")}, got ${JSON.stringify(text)}`);
    return lower as T;
  };

/** A switch: on the command line by its presence; in the environment as true/false, 1/0, yes/no. */
export const onOff: Check<boolean> = (text, name) => {
  const t = text.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(t)) return true;
  if (["false", "0", "no", "off"].includes(t)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(text)}`);
};

/** The non-empty, trimmed items of a comma-separated value. */
export function commaList(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** One --trust-proxy entry: an address or a CIDR block; undefined when it is neither. */
export function parseProxyEntry(entry: string): { address: string; prefix: number; family: "ipv4" | "ipv6" } | undefined {
  const [address, prefixText, extra] = entry.trim().split("/");
  if (address === undefined || extra !== undefined) return undefined;
  const kind = net.isIP(address);
  if (kind === 0) return undefined;
  const max = kind === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  return { address, prefix, family: kind === 4 ? "ipv4" : "ipv6" };
}

/** A comma-separated list of proxy addresses or CIDR blocks ("10.0.0.0/8, 127.0.0.1"). */
export const proxyList: Check<string[]> = (text, name) => {
  const list = commaList(text);
  for (const p of list) {
    if (parseProxyEntry(p) === undefined) throw new ConfigError(`${name} takes addresses or CIDR blocks like 10.0.0.0/8 or ::1, got ${JSON.stringify(p)}`);
  }
  return list;
};

/** A comma-separated list of origins ("https://app.example.com", "http://localhost:5173") or "*". */
export const originList: Check<string[]> = (text, name) => {
  const list = commaList(text);
  for (const o of list) {
    if (o === "*") continue;
    let url: URL | undefined;
    try {
      url = new URL(o);
    } catch {
      url = undefined;
    }
    if (url === undefined || url.origin !== o) {
      throw new ConfigError(`${name} takes origins like https://app.example.com (scheme, host, port; no path) or *, got ${JSON.stringify(o)}`);
    }
  }
  return list;
};

/** A redis:// or rediss:// URL; empty: none. */
export const redisUrl: Check<string | undefined> = (text, name) => {
  if (text === "") return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${name} must be a redis:// URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new ConfigError(`${name} must be a redis:// or rediss:// URL, got ${JSON.stringify(text)}`);
  return text;
};

/** NATS servers: nats://host:port URLs, comma-separated. */
export const natsUrls: Check<string> = (text, name) => {
  const servers = text.split(",").map((s) => s.trim());
  for (const s of servers) {
    let url: URL | undefined;
    try {
      url = new URL(s);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "nats:" && url.protocol !== "tls:") || url.hostname === "") {
      throw new ConfigError(`${name} takes nats://host:port URLs, comma-separated, got ${JSON.stringify(text)}`);
    }
  }
  return servers.join(",");
};

/** NATS subject tokens: letters, digits, "-" and "_", dot-separated (no wildcards). */
export const subject: Check<string> = (text, name) => {
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(text)) throw new ConfigError(`${name} must be a NATS subject without wildcards (like marketdata.ingest), got ${JSON.stringify(text)}`);
  return text;
};

/** A JetStream stream or consumer name. */
export const streamName =
  (what: string): Check<string> =>
  (text, name) => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(text)) throw new ConfigError(`${name} must be a ${what} name (letters, digits, - and _), got ${JSON.stringify(text)}`);
    return text;
  };

/** A file of PEM certificates, read whole; empty: none. */
export const pemFile: Check<string | undefined> = (path, name) => {
  if (path === "") return undefined;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`${name} ${JSON.stringify(path)} cannot be read: ${(err as Error).message}`);
  }
  if (!text.includes("-----BEGIN CERTIFICATE-----")) throw new ConfigError(`${name} ${JSON.stringify(path)} holds no PEM certificate`);
  return text;
};

/** Any text (a prefix, a host), as given. */
export const text: Check<string> = (value) => value;
