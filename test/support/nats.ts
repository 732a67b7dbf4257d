import net from "node:net";

// NATS with JetStream for tests: a real server at 127.0.0.1:4222 (or
// MARKETDATA_TEST_NATS); each test uses streams and subjects of its own.
// Without one the tests that need it skip with a visible message, unless
// MARKETDATA_TEST_NATS is set (CI).

export const NATS_URL = process.env.MARKETDATA_TEST_NATS || "nats://127.0.0.1:4222";

export const natsUp = await new Promise<boolean>((resolve) => {
  const u = new URL(NATS_URL);
  const socket = net.connect({ host: u.hostname, port: Number(u.port || 4222) });
  const done = (ok: boolean) => {
    socket.destroy();
    resolve(ok);
  };
  socket.setTimeout(1000, () => done(false));
  // The server speaks first (INFO): a listener that is not NATS says nothing.
  socket.once("data", (b) => done(b.toString().startsWith("INFO")));
  socket.once("error", () => done(false));
});

/** True when the tests needing NATS must skip; says so once per caller. */
export function skipNats(what: string): boolean {
  const skip = !natsUp && !process.env.MARKETDATA_TEST_NATS;
  if (skip) console.warn(`SKIPPED: ${what}: no NATS at ${NATS_URL} (set MARKETDATA_TEST_NATS to require it)`);
  return skip;
}
